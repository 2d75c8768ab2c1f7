//go:build !linux

package ledger

import (
	"errors"
	"os"
)

// Elsewhere segments are not mapped: every write is a pwrite.

func mapSegment(*os.File) []byte { return nil }

func unmap([]byte) {}

func allocate(*os.File, int64, int64) error { return errors.ErrUnsupported }
