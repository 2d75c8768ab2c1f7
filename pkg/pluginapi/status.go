package pluginapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/svc-gateway/svc/pkg/pluginapi/proto"
)

// The most of a plugin's error text a status carries: it travels in the
// call's trailers, whose size the connection bounds (an error beyond it
// would break the connection, and every call on it, rather than fail one).
const (
	maxStatusMessage = 8 << 10
	maxStatusField   = 256 // a type, code or param
)

// toStatus turns a plugin's error into a gRPC status that keeps a
// *ProviderError's fields and the context errors' meaning.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var pe *ProviderError
	switch {
	case errors.As(err, &pe):
		msg := Truncate(pe.Message, maxStatusMessage)
		st := status.New(codeForHTTP(pe.Status), msg)
		if withDetail, derr := st.WithDetails(&pb.ProviderError{
			Status: int32(pe.Status), Type: Truncate(pe.Type, maxStatusField), Code: Truncate(pe.Code, maxStatusField),
			Param: Truncate(pe.Param, maxStatusField), Message: msg, RetryAfterMs: pe.RetryAfter.Milliseconds(),
		}); derr == nil {
			st = withDetail
		}
		return st.Err()
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Unknown, Truncate(err.Error(), maxStatusMessage))
}

// fromStatus turns the gRPC error of a call made with ctx back into what
// the plugin returned: a *ProviderError, a context error, or an error with
// the status message. A cancellation the caller did not ask for is the
// connection closing under the call (the host killed the plugin, or is
// shutting down): the plugin is unavailable, not the client gone.
func fromStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		if pe, ok := d.(*pb.ProviderError); ok {
			return &ProviderError{Status: int(pe.Status), Type: pe.Type, Code: pe.Code, Param: pe.Param, Message: pe.Message,
				RetryAfter: retryAfter(pe.RetryAfterMs)}
		}
	}
	switch st.Code() {
	case codes.Canceled:
		if ctx.Err() == nil {
			return &UnavailableError{Err: err}
		}
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	case codes.Unavailable:
		return &UnavailableError{Err: err}
	}
	return errors.New(st.Message())
}

// retryAfter reads a ProviderError's retry_after_ms, which a plugin of any
// origin set: negative is none, and MaxRetryAfter the most it may ask.
func retryAfter(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	return time.Duration(min(ms, MaxRetryAfter.Milliseconds())) * time.Millisecond
}

// UnavailableError reports that the plugin process could not be reached:
// it died or is restarting.
type UnavailableError struct{ Err error }

// Error implements error.
func (e *UnavailableError) Error() string { return "plugin unavailable: " + e.Err.Error() }

// Unwrap returns the transport error.
func (e *UnavailableError) Unwrap() error { return e.Err }

func codeForHTTP(s int) codes.Code {
	switch {
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		return codes.InvalidArgument
	case s == http.StatusUnauthorized:
		return codes.Unauthenticated
	case s == http.StatusForbidden:
		return codes.PermissionDenied
	case s == http.StatusNotFound:
		return codes.NotFound
	case s == http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case s == http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case s >= 500:
		return codes.Unavailable
	}
	return codes.FailedPrecondition
}
