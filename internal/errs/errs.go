// Package errs gives every failure a kind, a stable machine code and a message
// that is safe to show, kept apart from the private cause.
//
// Domain packages return *Error values; one table, in package httpstatus,
// maps Kind to an HTTP status. Anything that is not an *Error is an internal error: its text
// is logged, never shown.
package errs

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an error by what the caller can do about it.
type Kind uint8

// The kinds. Internal is the zero value so that an unclassified error is
// never mistaken for a client mistake.
const (
	Internal     Kind = iota // a bug or an unexpected failure: 500
	Invalid                  // bad input: 400
	Unauthorized             // no or bad credentials: 401
	Forbidden                // known caller, not allowed: 403
	NotFound                 // absent, or another tenant's: 404
	Conflict                 // state does not allow it: 409
	TooLarge                 // body over the limit: 413
	Unsupported              // wrong media type: 415
	RateLimited              // slow down: 429
	Upstream                 // a provider or remote site failed: 502
	Unavailable              // the service cannot serve now: 503
	BadMethod                // the path exists, not with this method: 405
	Timeout                  // the request did not arrive in time: 408
)

var kindNames = [...]string{
	Internal:     "internal",
	Invalid:      "invalid",
	Unauthorized: "unauthorized",
	Forbidden:    "forbidden",
	NotFound:     "not_found",
	Conflict:     "conflict",
	TooLarge:     "too_large",
	Unsupported:  "unsupported_media_type",
	RateLimited:  "rate_limited",
	Upstream:     "upstream",
	Unavailable:  "unavailable",
	BadMethod:    "method_not_allowed",
	Timeout:      "timeout",
}

// String returns the kind's snake_case name, also its default code.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "internal"
}

// Error is a classified error. Public is shown to the caller; Err is the
// private cause, logged but never shown.
type Error struct {
	Kind   Kind
	Code   string        // snake_case machine code; defaults to Kind's name
	Public string        // message for a person
	Param  string        // the offending field, when there is one
	Type   string        // the chat-completions error type, when a provider named it
	Retry  time.Duration // how long to wait, for RateLimited
	Err    error         // private cause
	// Beside are fields an error body carries beside "error": a policy
	// block's verdict.
	Beside map[string]any
}

// Error implements error with the public text and, after it, the cause.
func (e *Error) Error() string {
	msg := e.Public
	if msg == "" {
		msg = e.Kind.String()
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the private cause.
func (e *Error) Unwrap() error { return e.Err }

// E builds an error of kind k with code and a formatted public message.
func E(k Kind, code, format string, args ...any) *Error {
	return &Error{Kind: k, Code: code, Public: fmt.Sprintf(format, args...)}
}

// Wrap is E with a private cause.
func Wrap(err error, k Kind, code, format string, args ...any) *Error {
	return &Error{Kind: k, Code: code, Public: fmt.Sprintf(format, args...), Err: err}
}

// Invalidf reports bad input in field param.
func Invalidf(param, format string, args ...any) *Error {
	return &Error{Kind: Invalid, Code: "invalid_request", Param: param, Public: fmt.Sprintf(format, args...)}
}

// NotFoundf reports a missing record. Callers use it for another tenant's
// record too, so the two cannot be told apart.
func NotFoundf(format string, args ...any) *Error {
	return &Error{Kind: NotFound, Code: "not_found", Public: fmt.Sprintf(format, args...)}
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// KindOf returns the kind of the first *Error in err's chain, Internal when
// there is none.
func KindOf(err error) Kind {
	if e := As(err); e != nil {
		return e.Kind
	}
	return Internal
}

// Is reports whether err is an *Error of kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// Code returns the machine code of err.
func Code(err error) string {
	e := As(err)
	if e == nil {
		return Internal.String()
	}
	if e.Code != "" {
		return e.Code
	}
	return e.Kind.String()
}

// Public returns the text that may be shown for err: its public message, or
// "internal error" when err is not classified.
func Public(err error) string {
	e := As(err)
	switch {
	case e == nil || e.Kind == Internal:
		return "internal error"
	case e.Public != "":
		return e.Public
	default:
		return e.Kind.String()
	}
}
