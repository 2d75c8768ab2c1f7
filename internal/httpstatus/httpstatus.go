// Package httpstatus is the one table between error kinds and HTTP
// statuses: the status a call that failed answers with (and its run
// records), and the kind of a status a provider answered with. Domain
// packages keep kinds; only this table knows the numbers.
package httpstatus

import (
	"errors"
	"net/http"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// ClientClosed is the status of a call whose client went away before the
// answer was done (nginx's 499): logged, and recorded on its run.
const ClientClosed = 499

// ofKind is the one place an error kind becomes an HTTP status.
var ofKind = map[errs.Kind]int{
	errs.Internal:     http.StatusInternalServerError,
	errs.Invalid:      http.StatusBadRequest,
	errs.Unauthorized: http.StatusUnauthorized,
	errs.Forbidden:    http.StatusForbidden,
	errs.NotFound:     http.StatusNotFound,
	errs.Conflict:     http.StatusConflict,
	errs.TooLarge:     http.StatusRequestEntityTooLarge,
	errs.Unsupported:  http.StatusUnsupportedMediaType,
	errs.RateLimited:  http.StatusTooManyRequests,
	errs.Upstream:     http.StatusBadGateway,
	errs.Unavailable:  http.StatusServiceUnavailable,
	errs.BadMethod:    http.StatusMethodNotAllowed,
	errs.Timeout:      http.StatusRequestTimeout,
}

// Of returns the status a call answers with when it ends with err: 200 for
// nil; for a provider's refusal passed on to the client (an error of any
// kind but Upstream caused by a *pluginapi.ProviderError), the provider's
// own status, so a 422 stays a 422; otherwise its kind's.
func Of(err error) int {
	if err == nil {
		return http.StatusOK
	}
	e := errs.As(err)
	if e == nil {
		return ofKind[errs.Internal]
	}
	var refusal *pluginapi.ProviderError
	if e.Kind != errs.Upstream && errors.As(e.Err, &refusal) && refusal.Status != 0 {
		return refusal.Status
	}
	return ofKind[e.Kind]
}

// KindOf classifies a status a provider answered with. A 4xx is the
// client's mistake and passes through, except those that say svc's own
// upstream call failed (the operator's key refused, a proxy, a timeout):
// those are Upstream like any other failure of the provider.
func KindOf(status int) errs.Kind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusProxyAuthRequired || status == http.StatusRequestTimeout:
		return errs.Upstream
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		return errs.Invalid
	case status == http.StatusForbidden:
		return errs.Forbidden
	case status == http.StatusNotFound:
		return errs.NotFound
	case status == http.StatusConflict:
		return errs.Conflict
	case status == http.StatusRequestEntityTooLarge:
		return errs.TooLarge
	case status == http.StatusTooManyRequests:
		return errs.RateLimited
	case status >= 400 && status < 500:
		return errs.Invalid
	}
	return errs.Upstream
}
