package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/ledger"
)

// LedgerSnapshot is the database at one moment, read for svc verify: every read
// goes through one read transaction, so that runs recorded while it reads
// (svc may be serving on the same file) are seen whole with their ledger
// entries, or not at all.
type LedgerSnapshot struct {
	ledgerReader
	tx     *txn
	engine Engine
	owned  *Store // closed with the snapshot
}

var _ ledger.LedgerSource = (*LedgerSnapshot)(nil)

// OpenLedgerSnapshot opens the database dsn names, an SQLite file or a
// PostgreSQL address, read only and as it is (no migration, nothing
// written, so that a database under investigation is left as it was found),
// and takes a snapshot of it.
func OpenLedgerSnapshot(ctx context.Context, dsn string) (*LedgerSnapshot, error) {
	var s *Store
	if config.IsPostgres(dsn) {
		var err error
		if s, err = openPostgres(dsn, Options{MaxConns: 1}); err != nil {
			return nil, err
		}
	} else {
		if _, err := os.Stat(dsn); err != nil {
			return nil, err
		}
		q := "file:" + (&url.URL{Path: dsn}).EscapedPath() + "?mode=ro&_pragma=busy_timeout(10000)&_pragma=query_only(1)"
		db, err := sql.Open("sqlite", q)
		if err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		p := &pool{DB: db}
		s = &Store{write: p, read: p, Now: time.Now, path: dsn, changes: newFeed(nil)}
	}
	sn, err := s.LedgerSnapshot(ctx)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	sn.owned = s
	return sn, nil
}

// LedgerSnapshot takes a snapshot of the open database: on PostgreSQL a
// read-only REPEATABLE READ transaction, whose reads all see the moment of
// its first.
func (s *Store) LedgerSnapshot(ctx context.Context) (*LedgerSnapshot, error) {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.engine == Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.read.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	sn := &LedgerSnapshot{ledgerReader: ledgerReader{q: tx}, tx: tx, engine: s.engine}
	// A database svc has not migrated since before 0020 has runs without
	// a trace id: they read as the runs of that build, with none.
	var traced int
	if err := tx.QueryRowContext(ctx, s.sql(`SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name = 'trace_id'`,
		`SELECT COUNT(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = 'runs' AND column_name = 'trace_id'`)).Scan(&traced); err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	if traced == 0 {
		sn.runColumns = runListColumns19 + `, '' AS trace_id`
	}
	return sn, nil
}

// Source names the database OpenLedgerSnapshot opened: its file, or its
// PostgreSQL address without the password.
func (sn *LedgerSnapshot) Source() string {
	if sn.owned == nil {
		return ""
	}
	return sn.owned.path
}

// Close ends the snapshot (and closes a database OpenLedgerSnapshot
// opened).
func (sn *LedgerSnapshot) Close() error {
	_ = sn.tx.Rollback()
	if sn.owned != nil {
		return sn.owned.Close()
	}
	return nil
}

// HasLedger reports whether the database has the ledger's tables: a
// database of a build before them has none until svc starts on it.
func (sn *LedgerSnapshot) HasLedger(ctx context.Context) (bool, error) {
	q := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'
		AND name IN ('runs', 'run_events', 'ledger_entries', 'ledger_checkpoints')`
	if sn.engine == Postgres {
		q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()
		AND table_name IN ('runs', 'run_events', 'ledger_entries', 'ledger_checkpoints')`
	}
	var n int
	err := sn.q.QueryRowContext(ctx, q).Scan(&n)
	return n == 4, err
}

// ledgerReader reads the ledger and the runs through q: the read pool, or
// a snapshot's transaction.
type ledgerReader struct {
	q querier
	// runColumns are the run columns read, when not runListColumns.
	runColumns string
}

// Entries returns up to limit of the tenant's ledger entries with after <
// seq <= upTo, in order.
func (r ledgerReader) Entries(ctx context.Context, tenantID string, after, upTo int64, limit int) ([]ledger.Entry, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT seq, `+entryColumns+` FROM ledger_entries
		WHERE tenant_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`, tenantID, after, upTo, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	entries := []ledger.Entry{}
	for rows.Next() {
		var (
			e                ledger.Entry
			head, digest     []byte
			runAt, createdAt int64
		)
		if err := rows.Scan(&e.Seq, &e.TenantID, &e.RunID, &e.Kind, &e.EventCount, &head, &digest, &runAt, &createdAt); err != nil {
			return nil, err
		}
		copy(e.Head[:], head)
		copy(e.Digest[:], digest)
		e.RunAt, e.CreatedAt = msTime(runAt), msTime(createdAt)
		entries = append(entries, e)
	}
	return entries, rows.Err()
}

// LedgerTenantIDs returns every tenant with runs, ledger entries or
// checkpoints.
func (r ledgerReader) LedgerTenantIDs(ctx context.Context) ([]string, error) {
	return queryStrings(ctx, r.q, `SELECT tenant_id FROM ledger_entries UNION SELECT tenant_id FROM ledger_checkpoints
		UNION SELECT tenant_id FROM runs ORDER BY 1`)
}

// Checkpoints returns every checkpoint of the tenant, oldest first.
func (r ledgerReader) Checkpoints(ctx context.Context, tenantID string) ([]ledger.Checkpoint, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM ledger_checkpoints WHERE tenant_id = ?
		ORDER BY number`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.Checkpoint
	for rows.Next() {
		c, err := scanCheckpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// RunChain returns the tenant's run as stored with its events and head.
func (r ledgerReader) RunChain(ctx context.Context, tenantID, id string) (ledger.StoredRun, error) {
	var c ledger.StoredRun
	var err error
	columns := r.runColumns
	if columns == "" {
		columns = runListColumns
	}
	if c.Run, c.Explanation, c.Chain, err = readRunColumns(ctx, r.q, columns, tenantID, id); err != nil {
		return c, err
	}
	c.Events, c.Head, err = runEvents(ctx, r.q, tenantID, id)
	return c, err
}

// EachRun calls fn with the id of each of the tenant's runs, oldest first.
func (r ledgerReader) EachRun(ctx context.Context, tenantID string, fn func(id string) error) error {
	rows, err := r.q.QueryContext(ctx, `SELECT id FROM runs WHERE tenant_id = ? ORDER BY created_at, rowid`, tenantID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		if err := fn(id); err != nil {
			return err
		}
	}
	return rows.Err()
}
