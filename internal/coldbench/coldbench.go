// Package coldbench runs a benchmark's call after the CPU idled, as a call
// at a low request rate finds it: caches gone cold, the same work costs
// more than it does back to back.
package coldbench

import (
	"slices"
	"testing"
	"time"
)

// Run calls call once an iteration, each after idle, and reports the
// calls' own time: ns/op their mean, p50-ns/op their median. The timer is
// not stopped around the idle: stopping it reads the runtime's memory
// statistics, which flushes every P's allocation cache and would make the
// call's allocations dearer than any server's are.
func Run(b *testing.B, idle time.Duration, call func()) {
	var took []time.Duration
	for b.Loop() {
		time.Sleep(idle)
		start := time.Now()
		call()
		took = append(took, time.Since(start))
	}
	if len(took) == 0 {
		return
	}
	var sum time.Duration
	for _, d := range took {
		sum += d
	}
	slices.Sort(took)
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(took)), "ns/op")
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/op")
}
