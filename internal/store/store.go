// Package store keeps svc's state in one SQLite file through modernc.org/sqlite
// (pure Go, no cgo), or in PostgreSQL through pgx, shared by several
// replicas. It implements the storage interfaces the domain packages
// declare, the same on either engine; every tenant-scoped query takes the
// tenant id as an explicit argument and filters by it.
//
// On SQLite, writes go through a pool of one connection (SQLite has one
// writer; queueing in Go is cheaper than SQLITE_BUSY retries), reads
// through a separate pool that WAL lets run beside the writer. On
// PostgreSQL one pool serves both, and each write transaction is
// SERIALIZABLE, retried when it loses to another: the read-then-write steps
// written for SQLite's one writer hold with several.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/tenant"
)

// Each engine's migrations carry the same numbered names; a migration is
// recorded under its SQLite file's name on both.
//
//go:embed migrations/*.sql migrations/postgres/*.sql
var migrationFS embed.FS

// Store is the database-backed implementation of the domain stores.
type Store struct {
	write *pool // SQLite: one connection, the single writer
	read  *pool

	engine Engine

	// Now is the clock used for every timestamp the store writes.
	Now func() time.Time

	hot hotStatements // prepared once, for the run recorder's writes

	locks localLocks // TryLock's, on SQLite

	// lockDB holds PostgreSQL's session advisory locks (TryLock,
	// LockWebSession, the migration lock), each on a connection of its own
	// for as long as it is held. A pool of its own, so that lock holders
	// waiting for a connection never starve the work they protect, which
	// runs on the main pool; nil on SQLite.
	lockDB *sql.DB

	path string // the SQLite file, or the PostgreSQL address without its password

	changes *feed // changes.go

	// The spend counters' time zones and replica id (SetSpend), read by
	// the recorder's writer.
	spend atomic.Pointer[spendTags]
}

// Options tune a PostgreSQL store's pool; SQLite's pools are fixed.
type Options struct {
	// MaxConns bounds the connections the pool opens (SVC_DB_MAX_CONNS);
	// zero is 20. Advisory locks are held on a pool of their own, of
	// max(4, MaxConns/2) more.
	MaxConns int
	// StatementTimeout ends a statement that runs longer
	// (SVC_DB_STATEMENT_TIMEOUT); zero is 30 seconds.
	StatementTimeout time.Duration
}

// Open opens (creating when missing) the database dsn names, a PostgreSQL
// address (postgres:// or postgresql://) or an SQLite file, applies pending
// migrations and makes sure the default tenant exists.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, Options{})
}

// OpenWith is Open with a PostgreSQL pool's limits.
func OpenWith(ctx context.Context, dsn string, o Options) (*Store, error) {
	var (
		s   *Store
		err error
	)
	if config.IsPostgres(dsn) {
		s, err = openPostgres(dsn, o)
	} else {
		s, err = openSQLite(dsn)
	}
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.ensureTenant(ctx, tenant.DefaultID, tenant.DefaultName); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.engine == SQLite {
		s.joinSQLite()
	}
	return s, nil
}

func openSQLite(path string) (*Store, error) {
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
	return &Store{write: &pool{DB: w}, read: &pool{DB: r}, engine: SQLite, Now: time.Now, path: path, changes: newFeed(nil)}, nil
}

func openPostgres(dsn string, o Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL address: %w", err)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 20
	}
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = 30 * time.Second
	}
	if _, set := cfg.RuntimeParams["statement_timeout"]; !set {
		cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(o.StatementTimeout.Milliseconds(), 10)
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = "svc"
	}
	d := sql.OpenDB(stdlib.GetConnector(*cfg, stdlib.OptionAfterConnect(teachTypes)))
	d.SetMaxOpenConns(o.MaxConns)
	d.SetMaxIdleConns(o.MaxConns)
	d.SetConnMaxIdleTime(5 * time.Minute)
	d.SetConnMaxLifetime(time.Hour)
	p := &pool{DB: d, binds: &binds{}}
	lockCfg := cfg.Copy()
	lockCfg.RuntimeParams["application_name"] = cfg.RuntimeParams["application_name"] + " locks"
	locks := sql.OpenDB(stdlib.GetConnector(*lockCfg))
	n := max(4, o.MaxConns/2)
	locks.SetMaxOpenConns(n)
	locks.SetMaxIdleConns(n)
	locks.SetConnMaxIdleTime(5 * time.Minute)
	listener := cfg.Copy()
	listener.RuntimeParams["application_name"] = cfg.RuntimeParams["application_name"] + " changes"
	return &Store{write: p, read: p, lockDB: locks, engine: Postgres, Now: time.Now, path: config.RedactDBAddress(dsn), changes: newFeed(listener)}, nil
}

// Close closes the pools. On SQLite a WAL checkpoint runs as the last
// connection closes.
func (s *Store) Close() error {
	s.closeFeed()
	s.hot.close()
	if s.lockDB != nil {
		return errors.Join(s.read.Close(), s.lockDB.Close())
	}
	if s.write == s.read { // OpenReadOnly
		return s.read.Close()
	}
	return errors.Join(s.read.Close(), s.write.Close())
}

// Engine is the database the store runs on.
func (s *Store) Engine() Engine { return s.engine }

// Ping checks that the database answers a read.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.read.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// sql picks a statement's text for the engine, for the few whose SQL
// differs between the two.
func (s *Store) sql(sqlite, postgres string) string {
	if s.engine == Postgres {
		return postgres
	}
	return sqlite
}

// maxTxAttempts bounds the retries of a PostgreSQL transaction that lost a
// serialization conflict to another writer; one that loses them all is
// errs.Unavailable (503), for its caller to try again later.
const maxTxAttempts = 12

// tx runs fn in a write transaction (BEGIN IMMEDIATE on SQLite,
// SERIALIZABLE on PostgreSQL), committing when fn returns nil. On
// PostgreSQL a transaction that loses to a concurrent one runs again from
// the start, so fn must only touch the database and its own results, and
// set each of those afresh (a failed attempt may have set them).
func (s *Store) tx(ctx context.Context, fn func(*txn) error) error {
	return s.txAt(ctx, sql.LevelSerializable, fn)
}

// lockedTx is tx at READ COMMITTED on PostgreSQL, for a transaction whose
// first read locks the row its writes depend on (SELECT … FOR UPDATE): a
// concurrent one waits for the lock and then reads the row as committed,
// where SERIALIZABLE would fail it and every other waiter in turn, round
// after round, under contention on one row.
func (s *Store) lockedTx(ctx context.Context, fn func(*txn) error) error {
	return s.txAt(ctx, sql.LevelReadCommitted, fn)
}

func (s *Store) txAt(ctx context.Context, level sql.IsolationLevel, fn func(*txn) error) error {
	if s.engine != Postgres {
		return s.runTx(ctx, nil, fn)
	}
	opts := &sql.TxOptions{Isolation: level}
	for attempt := 1; ; attempt++ {
		err := s.runTx(ctx, opts, fn)
		if err == nil || !retryable(err) {
			return err
		}
		if attempt == maxTxAttempts {
			return errs.Wrap(err, errs.Unavailable, "database_busy", "the database is busy, try again")
		}
		// A short, growing, jittered pause lets the winner finish.
		pause := time.Duration(attempt) * time.Duration(1+rand.IntN(2000)) * time.Microsecond
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

func (s *Store) runTx(ctx context.Context, opts *sql.TxOptions, fn func(*txn) error) error {
	tx, err := s.write.BeginTx(ctx, opts)
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

// retryable reports a PostgreSQL error that running the transaction again
// may not meet: a serialization failure or a deadlock.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

func (s *Store) nowMS() int64 { return s.Now().UnixMilli() }

// migrate applies the embedded migrations that are not yet recorded, each in
// its own transaction, in file-name order.
func (s *Store) migrate(ctx context.Context) error {
	if s.engine == Postgres {
		// Replicas starting together take turns.
		unlock, err := s.lockMigrations(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name TEXT PRIMARY KEY, applied_at `+s.sql("INTEGER", "BIGINT")+` NOT NULL)`); err != nil {
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

// migrationLock is the PostgreSQL advisory lock a replica holds while it
// migrates.
const migrationLock = 0x7376635f6d6967 // "svc_mig"

// lockMigrations waits for the migration lock on a connection of its own,
// and returns its release.
func (s *Store) lockMigrations(ctx context.Context) (func(), error) {
	conn, err := s.lockDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	// A replica waits as long as another's migrations take, whatever the
	// statement timeout.
	if _, err := conn.ExecContext(ctx, `SET statement_timeout = 0`); err != nil {
		discard(conn)
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		discard(conn)
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	// Ending the session releases the lock, and keeps its setting out of
	// the pool.
	return func() { discard(conn) }, nil
}

// afterMigration are the steps of a migration that SQL cannot take, run
// in its transaction after its file.
var afterMigration = map[string]func(s *Store, ctx context.Context, tx *txn) error{
	"0016_ledger_legacy_runs.sql": (*Store).recordLegacyRuns,
}

func (s *Store) migrateFile(ctx context.Context, name string) error {
	return s.tx(ctx, func(tx *txn) error {
		if s.engine == Postgres {
			// A migration (an index on a big table) may take longer than
			// any request should.
			if _, err := tx.ExecContext(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
				return err
			}
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		file := name
		if s.engine == Postgres {
			file = path.Join("migrations/postgres", path.Base(name))
		}
		body, err := migrationFS.ReadFile(file)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return err
		}
		if after := afterMigration[filepath.Base(name)]; after != nil && s.engine == SQLite {
			if err := after(s, ctx, tx); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`, name, s.nowMS())
		return err
	})
}

// formatError turns unique violations into errs.Conflict and foreign-key
// violations into errs.NotFound, on either engine; other errors pass
// through unchanged.
func formatError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return errs.Wrap(err, errs.Conflict, "conflict", "a record with the same identity already exists")
		case "23503": // foreign_key_violation
			return errs.Wrap(err, errs.NotFound, "not_found", "a referenced record does not exist")
		}
		return err
	}
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
func (s *Store) DB() *sql.DB { return s.write.DB }

// Path is the database file's path, or the PostgreSQL address without its
// password.
func (s *Store) Path() string { return s.path }
