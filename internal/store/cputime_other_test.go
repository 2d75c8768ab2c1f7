//go:build !unix

package store_test

import "time"

// processCPU is unknown here: benchmarks report wall time only.
func processCPU() (time.Duration, bool) { return 0, false }
