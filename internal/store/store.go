// Package store keeps svc's state in one SQLite file through modernc.org/sqlite
// (pure Go, no cgo). It implements the storage interfaces the domain packages
// declare; every tenant-scoped query takes the tenant id as an explicit
// argument and filters by it.
//
// Writes go through a pool of one connection (SQLite has one writer; queueing
// in Go is cheaper than SQLITE_BUSY retries), reads through a separate pool
// that WAL lets run beside the writer.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/tenant"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is the SQLite-backed implementation of the domain stores.
type Store struct {
	write *sql.DB // one connection: the single writer
	read  *sql.DB

	// Now is the clock used for every timestamp the store writes.
	Now func() time.Time

	hot hotStatements // prepared once, for the run recorder's writes

	path string
}

// Open opens (creating when missing) the database at path, applies pending
// migrations and makes sure the default tenant exists.
func Open(ctx context.Context, path string) (*Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("create database folder: %w", err)
		}
	}
	// busy_timeout first, so that the pragmas after it wait instead of failing
	// while another process holds the file.
	pragmas := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)"
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + pragmas
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	n := max(4, runtime.NumCPU())
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s := &Store{write: w, read: r, Now: time.Now, path: path}
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.ensureTenant(ctx, tenant.DefaultID, tenant.DefaultName); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes both pools. A WAL checkpoint runs as the last connection closes.
func (s *Store) Close() error {
	s.hot.close()
	if s.write == s.read { // OpenReadOnly
		return s.read.Close()
	}
	return errors.Join(s.read.Close(), s.write.Close())
}

// Ping checks that the database answers a read.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.read.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE), committing when fn
// returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", formatError(err))
	}
	return nil
}

func (s *Store) nowMS() int64 { return s.Now().UnixMilli() }

// migrate applies the embedded migrations that are not yet recorded, each in
// its own transaction, in file-name order.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := s.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("migration %s: %w", filepath.Base(name), err)
		}
	}
	return nil
}

// afterMigration are the steps of a migration that SQL cannot take, run
// in its transaction after its file.
var afterMigration = map[string]func(s *Store, ctx context.Context, tx *sql.Tx) error{
	"0016_ledger_legacy_runs.sql": (*Store).recordLegacyRuns,
}

func (s *Store) migrateFile(ctx context.Context, name string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return err
		}
		if after := afterMigration[filepath.Base(name)]; after != nil {
			if err := after(s, ctx, tx); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`, name, s.nowMS())
		return err
	})
}

// formatError turns SQLite constraint violations into errs.Conflict; other
// errors pass through unchanged.
func formatError(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return errs.Wrap(err, errs.Conflict, "conflict", "a record with the same identity already exists")
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return errs.Wrap(err, errs.NotFound, "not_found", "a referenced record does not exist")
	}
	return err
}

// expectOne turns a write that touched no row into errs.NotFound: the
// tenant-scoped row it was meant for does not exist.
func expectOne(res sql.Result, notFound string) error {
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errs.NotFoundf("%s", notFound)
	}
	return nil
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func msTimePtr(ms sql.NullInt64) *time.Time {
	if !ms.Valid {
		return nil
	}
	t := msTime(ms.Int64)
	return &t
}

// DB returns the write pool, for tests and tools that inspect the file
// directly. Application code goes through the typed methods.
func (s *Store) DB() *sql.DB { return s.write }

// Path is the database file's path.
func (s *Store) Path() string { return s.path }
