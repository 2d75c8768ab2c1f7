// Package cputime measures the CPU time a benchmark's loop used: the
// process's, user and system, so that it counts what the loop left to the
// garbage collector and to background goroutines too. On a shared machine
// that is what benchmarks should compare: wall time counts the other
// programs' turns as well.
package cputime

import (
	"testing"
	"time"
)

// Clock is the process's CPU time when it was started.
type Clock struct {
	start time.Duration
	ok    bool
}

// Start reads the process's CPU time.
func Start() Clock {
	start, ok := process()
	return Clock{start, ok}
}

// Report reports the CPU time per op since Start as cpu-ns/op; where the
// platform does not tell it, nothing.
func (c Clock) Report(b *testing.B) {
	end, ok := process()
	if c.ok && ok {
		b.ReportMetric(float64(end-c.start)/float64(b.N), "cpu-ns/op")
	}
}
