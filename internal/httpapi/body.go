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
	body, err := readAll(r.Body, r.ContentLength)
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

// sizedMax bounds the buffer readAll makes on the word of a Content-Length
// alone: a client that declares a large body and sends little holds no
// more than this (io.ReadAll's first buffer is 512 bytes); a larger body
// grows from there as it arrives. Chat requests are mostly well under it.
const sizedMax = 32 << 10

// readAll is io.ReadAll, with the buffer sized from the body's declared
// length (limitBody refused one over the limit before): a body arrives in
// one allocation rather than in io.ReadAll's doublings from 512 bytes. The
// byte past the declared length is room for the read that sees the end.
func readAll(rd io.Reader, declared int64) ([]byte, error) {
	size := int64(512)
	if declared > 0 {
		size = min(declared, sizedMax) + 1
	}
	b := make([]byte, 0, size)
	for {
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to grow
		}
	}
}
