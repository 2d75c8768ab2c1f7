package som

import (
	"errors"
	"fmt"
)

// The errors Compile and Document.Resolve return, for errors.Is. A caller
// that needs more than the class reads the *NotFoundError, *StaleError or
// *CompileError with errors.As.
var (
	// ErrInvalidURL is Compile's refusal of a page URL that is not an
	// absolute http or https URL. Nothing was compiled.
	ErrInvalidURL = errors.New("som: page URL is not an absolute http or https URL")
	// ErrNotFound is matched by every *NotFoundError: Resolve's answer for
	// an id that names no element or form on the page.
	ErrNotFound = errors.New("som: no such element")
	// ErrStale is matched by every *StaleError: the id names something
	// that is no longer what the caller saw, or that cannot be acted on.
	ErrStale = errors.New("som: stale element")
)

// NotFoundError is Resolve's answer for an id that names no element or
// form on the page. It matches ErrNotFound.
type NotFoundError struct {
	ID string // the id asked for
}

// Error names the id.
func (e *NotFoundError) Error() string { return fmt.Sprintf("no element %s on this page", e.ID) }

// Is makes errors.Is(err, ErrNotFound) true for every *NotFoundError.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// StaleError is Resolve's refusal of an id whose element or form changed
// since the snapshot the caller chose it from. It matches ErrStale.
type StaleError struct {
	ID string // the element or form id
	// Form is set when ID names a form whose action or method changed.
	Form bool
	// Detached is set when the element exists but has no node to act on
	// (it was read from structured data).
	Detached bool
}

// Error says what changed and, when re-reading the page helps, to re-read
// it; it is fit to show to whoever chose the id.
func (e *StaleError) Error() string {
	switch {
	case e.Detached:
		return fmt.Sprintf("element %s cannot be acted on", e.ID)
	case e.Form:
		return fmt.Sprintf("form %s changed since the snapshot; read the page again", e.ID)
	default:
		return fmt.Sprintf("element %s changed since the snapshot; read the page again", e.ID)
	}
}

// Is makes errors.Is(err, ErrStale) true for every *StaleError.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// CompileError is Compile's failure on a page whose URL was valid: a bug,
// never the page's fault (any HTML compiles).
type CompileError struct {
	// Op is "parse" when the HTML parser failed (it fails only when its
	// reader does), or "compile" when the compiler panicked, which Compile
	// recovers from.
	Op  string
	Err error // the cause
}

// Error names the step that failed and the cause.
func (e *CompileError) Error() string { return "som: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *CompileError) Unwrap() error { return e.Err }
