package browse

import (
	"errors"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/som"
)

// somError gives an error of package som (public, so it knows nothing of
// errs) its kind, code and public text. Any other error is returned as it
// is.
func somError(err error) error {
	var stale *som.StaleError
	var missing *som.NotFoundError
	var failed *som.CompileError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, som.ErrInvalidURL):
		return errs.Invalidf("url", "page URL must be an absolute http or https URL")
	case errors.As(err, &stale):
		return errs.E(errs.Conflict, "stale_element", "%s", stale.Error())
	case errors.As(err, &missing):
		return errs.NotFoundf("%s", missing.Error())
	case errors.As(err, &failed):
		if failed.Op == "parse" {
			return errs.Wrap(failed.Err, errs.Internal, "som_parse", "page could not be parsed")
		}
		return errs.Wrap(failed.Err, errs.Internal, "som_compile", "page could not be compiled")
	}
	return err
}
