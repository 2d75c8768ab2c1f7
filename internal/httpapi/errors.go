package httpapi

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ratelimit"
)

// providerType is the chat-completions error "type" of each kind, for
// errors on the /v1 gateway, which answer in the provider's shape.
var providerType = map[errs.Kind]string{
	errs.Invalid:      "invalid_request_error",
	errs.Unauthorized: "authentication_error",
	errs.Forbidden:    "permission_error",
	errs.NotFound:     "not_found_error",
	errs.Conflict:     "invalid_request_error",
	errs.TooLarge:     "invalid_request_error",
	errs.Unsupported:  "invalid_request_error",
	errs.RateLimited:  "rate_limit_error",
	errs.BadMethod:    "invalid_request_error",
	errs.Timeout:      "invalid_request_error",
}

// errorDetail is the management API's error shape, under "error".
type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

// providerErrorBody is the chat-completions error shape; it has code and
// message too, so it also meets the management contract.
type providerErrorBody struct {
	Error providerErrorDetail `json:"error"`
}

type providerErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// providerDetail is err in the chat-completions error shape: the provider's
// own type when it named one, else the kind's.
func providerDetail(err error) providerErrorDetail {
	kind := errs.KindOf(err)
	d := providerErrorDetail{Message: errs.Public(err), Type: providerType[kind], Code: errs.Code(err)}
	if e := errs.As(err); e != nil {
		if e.Type != "" {
			d.Type = e.Type
		}
		if e.Param != "" {
			d.Param = &e.Param
		}
	}
	if d.Type == "" {
		d.Type = "api_error"
	}
	return d
}

// writeError answers with err, mapped from its kind. An unclassified error
// is logged with its cause and shown as "internal error".
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		err = errs.E(errs.TooLarge, "body_too_large", "request body is larger than %d bytes", tooLarge.Limit)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		info(r).status = httpstatus.ClientClosed
		return // nobody is listening
	}
	kind := errs.KindOf(err)
	status := httpstatus.Of(err)
	if kind == errs.Internal {
		s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if e := errs.As(err); e != nil && kind == errs.RateLimited {
		w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(e.Retry)))
	}
	ri := info(r)
	ri.code, ri.message = errs.Code(err), errs.Public(err)
	var detail any
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		detail = providerDetail(err)
	} else {
		d := errorDetail{Code: errs.Code(err), Message: errs.Public(err)}
		if e := errs.As(err); e != nil {
			d.Param = e.Param
		}
		detail = d
	}
	if e := errs.As(err); e != nil && len(e.Beside) > 0 {
		body := maps.Clone(e.Beside)
		body["error"] = detail
		writeJSON(w, status, body)
		return
	}
	writeJSON(w, status, struct {
		Error any `json:"error"`
	}{detail})
}
