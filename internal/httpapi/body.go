package httpapi

import (
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/svc-gateway/svc/internal/errs"
)

// readBody reads r's whole body. Every handler that reads a body reads it
// here, so that every route answers a body that did not arrive whole alike:
// one over the limit is 413 (limitBody's *http.MaxBytesError, passed on),
// one not received before the server's read deadline is 408, and one that
// stops short of its Content-Length or its last chunk, or whose chunked
// framing is broken, is 400. Each is the client's doing, not svc's, and the
// socket's own error text stays out of the answer.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		return body, nil
	}
	var (
		tooLarge *http.MaxBytesError
		netErr   net.Error
	)
	switch {
	case errors.As(err, &tooLarge):
		return nil, err
	case errors.As(err, &netErr) && netErr.Timeout():
		return nil, errs.Wrap(err, errs.Timeout, "request_timeout", "the request body was not received in time")
	case r.ContentLength > 0:
		return nil, errs.Wrap(err, errs.Invalid, "body_incomplete",
			"the request body ended after %d of the %d bytes its Content-Length declared", len(body), r.ContentLength)
	}
	return nil, errs.Wrap(err, errs.Invalid, "body_incomplete",
		"the request body is incomplete: its chunked encoding is cut off or malformed")
}
