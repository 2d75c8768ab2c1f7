//go:build race

package policy

// The race detector slows evaluation down about tenfold: the deadlines a
// test holds linear work to stretch with it, so that they measure the
// rules and not the instrumentation.
func init() { deadlineScale = 10 }
