package som

import (
	"errors"
	"fmt"
)

// The errors Compile and Document.Resolve return, for errors.Is. A caller
// that needs more than the class reads the *StaleError or *CompileError with
// errors.As.
var (
	// ErrInvalidURL: the page URL given to Compile is not an absolute
	// http or https URL. Nothing was compiled.
	ErrInvalidURL = errors.New("som: page URL is not an absolute http or https URL")
	// ErrNotFound: the id given to Resolve names no element or form on
	// the page.
	ErrNotFound = errors.New("som: no such element")
	// ErrStale: the id given to Resolve names something that is no longer
	// what the caller saw, or that cannot be acted on; read the page again.
	ErrStale = errors.New("som: stale element")
)

// StaleError is Resolve's refusal of an id whose element or form changed
// since the snapshot the caller chose it from. It matches ErrStale.
type StaleError struct {
	ID string // the element or form id
	// Form: ID names a form whose action or method changed.
	Form bool
	// Detached: the element exists but has no node to act on (it was read
	// from structured data).
	Detached bool
}

// Error says what changed and, when re-reading helps, to re-read.
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

// CompileError is a page Compile could not compile although its URL was
// valid: a bug, never the page's fault (any HTML compiles). Op is "parse"
// when the HTML parser failed (it fails only when its reader does) or
// "compile" when the compiler panicked, which Compile recovers from.
type CompileError struct {
	Op  string
	Err error
}

func (e *CompileError) Error() string { return "som: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *CompileError) Unwrap() error { return e.Err }
