// Package conffile reads the files an operator points svc at (the
// providers file and its keys, the policy files, the price file, the
// ledger key, the OTLP certificates): regular files only, of a bounded
// size. A path to a device, a pipe or a file that
// keeps growing is refused at once, rather than read without end or waited
// on, which would hold a reload (and the signals behind it) for ever.
package conffile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is the error of a path to anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is the error of a file larger than the bound it was read
// with.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string { return fmt.Sprintf("larger than %d bytes", e.Limit) }

// Read reads the regular file at path, at most limit bytes of it. Every
// error is an *fs.PathError, as the os package's are: its Err is the os
// package's, ErrNotRegular or a *TooLargeError.
func Read(path string, limit int64) ([]byte, error) {
	// What is no regular file is not even opened (opening a device may
	// do something); then opened without blocking, should a pipe have
	// taken its place since, and checked again.
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Limit: limit}}
	}
	return b, nil
}
