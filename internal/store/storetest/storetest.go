// Package storetest opens real, throwaway stores for tests: SQLite files,
// or PostgreSQL databases when SVC_TEST_DB=postgres, so that the same tests
// specify the store on both engines (make test runs them on each).
package storetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/svc-gateway/svc/internal/pgtest"
	"github.com/svc-gateway/svc/internal/store"
)

// Postgres reports whether Open opens PostgreSQL stores (SVC_TEST_DB=postgres).
func Postgres() bool { return os.Getenv("SVC_TEST_DB") == "postgres" }

// Open returns a store on a fresh database, closed when the test ends: an
// SQLite file in tb's temp folder (a file, not :memory:, so that the read
// and write pools share it), or with SVC_TEST_DB=postgres a new PostgreSQL
// database.
func Open(tb testing.TB) *store.Store {
	tb.Helper()
	if Postgres() {
		return OpenAt(tb, DSN(tb))
	}
	return OpenAt(tb, filepath.Join(tb.TempDir(), "svc.db"))
}

// OpenPostgres returns a store on a new PostgreSQL database, whatever
// SVC_TEST_DB says, for the tests of what only PostgreSQL has (several
// replicas); it skips where PostgreSQL is not installed.
func OpenPostgres(tb testing.TB) *store.Store {
	tb.Helper()
	return OpenAt(tb, DSN(tb))
}

// OpenAt opens the store at dsn, closed when the test ends; several stores
// on one DSN stand for several replicas.
func OpenAt(tb testing.TB, dsn string) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), dsn)
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

var (
	templateOnce sync.Once
	template     string
	templateErr  error
)

// DSN is the address of a new PostgreSQL database with every migration
// applied: a copy of one migrated once per test process, which is much
// faster than migrating each.
func DSN(tb testing.TB) string {
	tb.Helper()
	srv := pgtest.Start(tb)
	templateOnce.Do(func() {
		name := fmt.Sprintf("svc_template_%d", os.Getpid())
		if templateErr = srv.CreateNamed(name, ""); templateErr != nil {
			return
		}
		s, err := store.Open(context.Background(), srv.Address(name))
		if err != nil {
			templateErr = err
			return
		}
		templateErr = s.Close()
		template = name
	})
	if templateErr != nil {
		tb.Fatalf("migrate the template database: %v", templateErr)
	}
	return srv.CreateDatabase(tb, template)
}
