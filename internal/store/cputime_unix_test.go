//go:build unix

package store_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, user and system: what a
// benchmark on a shared machine should compare, where wall time counts the
// other programs' turns too.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
