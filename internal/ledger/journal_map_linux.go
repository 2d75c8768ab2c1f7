//go:build linux

package ledger

import (
	"os"
	"syscall"
)

// mapSpan is how much of a segment is mapped: past it, writes are
// pwrites. Only the pages written take memory; the span is address space.
const mapSpan = 64 << 20

// mapSegment maps f's first mapSpan bytes for writing, or returns nil when
// it cannot. Its pages past the file's end are not to be touched: room
// says how far the file goes.
func mapSegment(f *os.File) []byte {
	m, err := syscall.Mmap(int(f.Fd()), 0, mapSpan, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return m
}

func unmap(m []byte) {
	if m != nil {
		_ = syscall.Munmap(m)
	}
}

// allocate extends f from its size from to to, its blocks allocated, so
// that a copy into the mapping past from finds neither the end of the file
// nor a full disk.
func allocate(f *os.File, from, to int64) error {
	return syscall.Fallocate(int(f.Fd()), 0, from, to-from)
}
