package coldbench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkReadAfterIdle reads the same memory after the CPU idled for
// longer and longer: what a call's working set costs cold on this machine,
// whatever the program. Its p50-ns/op after 10 ms over its p50-ns/op after
// none is the factor a call at 100 requests a second pays on its own work
// (compare BenchmarkChatCompletionAfterIdle with BenchmarkChatCompletion).
func BenchmarkReadAfterIdle(b *testing.B) {
	for _, kib := range []int{256, 1024} {
		mem := make([]byte, kib<<10)
		for i := range mem {
			mem[i] = byte(i)
		}
		for _, idle := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond} {
			b.Run(fmt.Sprintf("%dKiB/idle=%v", kib, idle), func(b *testing.B) {
				Run(b, idle, func() { readLines(mem) })
			})
		}
	}
}

var sum byte

// readLines reads a byte of each 64-byte cache line of mem.
func readLines(mem []byte) {
	var s byte
	for i := 0; i < len(mem); i += 64 {
		s += mem[i]
	}
	sum += s
}
