package ledger

import (
	"fmt"
	"runtime/debug"
)

// copyMapped copies src into dst, part of a mapped segment. A file cut
// short under the mapping makes the copy fault (SIGBUS); that is an
// error of the write, not the end of the process.
func copyMapped(dst, src []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverFault(&err)
	copy(dst, src)
	return nil
}

// clearMapped zeroes dst, part of a mapped segment, as copyMapped copies.
func clearMapped(dst []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverFault(&err)
	clear(dst)
	return nil
}

func recoverFault(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("the mapped journal segment faulted: %v", p)
	}
}
