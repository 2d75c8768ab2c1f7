// Package storetest opens real, throwaway SQLite stores for tests.
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/svc-gateway/svc/internal/store"
)

// Open returns a store on a fresh file in tb's temp folder, closed when the
// test ends. A file, not :memory:, so that the read and write pools share it.
func Open(tb testing.TB) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "svc.db"))
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}
