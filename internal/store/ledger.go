package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/svc-gateway/svc/internal/ledger"
)

var _ ledger.CheckpointStore = (*Store)(nil)

const entryColumns = `tenant_id, run_id, kind, event_count, head_hash, digest, run_at, created_at`

// ledgerLock serializes the transactions that append to the ledger on
// PostgreSQL, from the moment each takes its entries' seq to its commit:
// several replicas' entries are then committed in seq order, and a reader
// of the entries after seq N (the checkpointer) never misses one that
// commits later with a smaller seq. Each transaction takes it as its last
// step before the entries, so it is held for an INSERT and the commit.
const ledgerLock = "ledger.append"

// addEntry appends e to the ledger in tx, the transaction of the change it
// records, as that transaction's last write.
func (s *Store) addEntry(ctx context.Context, tx *txn, e ledger.Entry) error {
	if err := s.xactLock(ctx, tx, ledgerLock); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO ledger_entries (`+entryColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.TenantID, e.RunID, e.Kind, e.EventCount, e.Head[:], e.Digest[:], e.RunAt.UnixMilli(), s.nowMS())
	return err
}

// legacyBatch is how many runs recordLegacyRuns reads at a time.
const legacyBatch = 500

// recordLegacyRuns writes a legacy ledger entry for each run listed in
// temp.legacy_runs (migration 0016: the runs no entry names, stored before
// the ledger), with its digest and head as stored, a batch at a time, in
// the migration's transaction.
func (s *Store) recordLegacyRuns(ctx context.Context, tx *txn) error {
	var after int64
	for {
		entries, last, err := legacyEntries(ctx, tx, after)
		if err != nil || len(entries) == 0 {
			if err == nil {
				_, err = tx.ExecContext(ctx, `DROP TABLE temp.legacy_runs`)
			}
			return err
		}
		for _, e := range entries {
			if err := s.addEntry(ctx, tx, e); err != nil {
				return err
			}
		}
		after = last
	}
}

// legacyEntries reads the next batch of legacy runs after rowid after and
// returns their entries and the last rowid read.
func legacyEntries(ctx context.Context, tx *txn, after int64) ([]ledger.Entry, int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+runListColumns19+`, '' AS trace_id, request, response, tenant_id, head_hash, rowid
		FROM runs WHERE rowid IN (SELECT rid FROM temp.legacy_runs WHERE rid > ? ORDER BY rid LIMIT ?) ORDER BY rowid`,
		after, legacyBatch)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var entries []ledger.Entry
	for rows.Next() {
		var (
			req, res, head []byte
			tenantID       string
		)
		r, explanation, err := scanRunExplained(rows, &req, &res, &tenantID, &head, &after)
		if err != nil {
			return nil, 0, err
		}
		r.TenantID, r.Request = tenantID, json.RawMessage(req)
		if res != nil {
			r.Response = json.RawMessage(res)
		}
		e := ledger.Entry{TenantID: tenantID, RunID: r.ID, Kind: ledger.EntryLegacy, EventCount: r.EventCount,
			Digest: ledger.Digest(&r, explanation), RunAt: r.CreatedAt}
		copy(e.Head[:], head)
		entries = append(entries, e)
	}
	return entries, after, rows.Err()
}

// Entries returns up to limit of the tenant's ledger entries with after <
// seq <= upTo, in order.
func (s *Store) Entries(ctx context.Context, tenantID string, after, upTo int64, limit int) ([]ledger.Entry, error) {
	return ledgerReader{q: s.read}.Entries(ctx, tenantID, after, upTo, limit)
}

// PendingEntries counts every tenant's entries after seq, up to limit,
// with the time of the first and the highest seq: reads of the primary
// key that cost no more than limit rows however long the ledger is.
func (s *Store) PendingEntries(ctx context.Context, after int64, limit int) (int, time.Time, int64, error) {
	var (
		count  int
		oldest sql.NullInt64
		last   sql.NullInt64
	)
	err := s.read.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM (SELECT 1 FROM ledger_entries WHERE seq > ? LIMIT ?) AS pending),
		(SELECT created_at FROM ledger_entries WHERE seq > ? ORDER BY seq LIMIT 1),
		(SELECT MAX(seq) FROM ledger_entries)`, after, limit, after).Scan(&count, &oldest, &last)
	return count, msTime(oldest.Int64), last.Int64, err
}

// LedgerTenants returns the tenants with entries in after < seq <= upTo:
// a look into the entries' index per tenant.
func (s *Store) LedgerTenants(ctx context.Context, after, upTo int64) ([]string, error) {
	return queryStrings(ctx, s.read, `SELECT id FROM tenants t WHERE EXISTS (SELECT 1 FROM ledger_entries e
		WHERE e.tenant_id = t.id AND e.seq > ? AND e.seq <= ?) ORDER BY id`, after, upTo)
}

const checkpointColumns = `tenant_id, number, first_seq, last_seq, entries, root, prev_hash, created_at, key_id, signature`

func scanCheckpoint(row scanner) (ledger.Checkpoint, error) {
	var (
		c               ledger.Checkpoint
		root, prev, sig []byte
		created         int64
	)
	if err := row.Scan(&c.TenantID, &c.Number, &c.FirstSeq, &c.LastSeq, &c.Entries, &root, &prev, &created, &c.KeyID, &sig); err != nil {
		return c, err
	}
	copy(c.Root[:], root)
	copy(c.Prev[:], prev)
	copy(c.Signature[:], sig)
	c.CreatedAt = msTime(created)
	c.Hash = c.ComputeHash()
	return c, nil
}

// LastCheckpoint returns the tenant's newest checkpoint; false when it has
// none.
func (s *Store) LastCheckpoint(ctx context.Context, tenantID string) (ledger.Checkpoint, bool, error) {
	c, err := scanCheckpoint(s.read.QueryRowContext(ctx, `SELECT `+checkpointColumns+` FROM ledger_checkpoints
		WHERE tenant_id = ? ORDER BY number DESC LIMIT 1`, tenantID))
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// AddCheckpoints stores a round of checkpoints in one transaction;
// errs.Conflict, storing none, when a tenant's number is taken.
func (s *Store) AddCheckpoints(ctx context.Context, cps []ledger.Checkpoint) error {
	return s.tx(ctx, func(tx *txn) error {
		for i := range cps {
			c := &cps[i]
			_, err := tx.ExecContext(ctx, `INSERT INTO ledger_checkpoints (`+checkpointColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				c.TenantID, c.Number, c.FirstSeq, c.LastSeq, c.Entries, c.Root[:], c.Prev[:], c.CreatedAt.UnixMilli(),
				c.KeyID, c.Signature[:])
			if err != nil {
				return formatError(err)
			}
		}
		return nil
	})
}

// NewestCheckpointKey is the key id of the checkpoint that covers the
// highest seq; false when there is none.
func (s *Store) NewestCheckpointKey(ctx context.Context) (string, bool, error) {
	var id string
	err := s.read.QueryRowContext(ctx, `SELECT key_id FROM ledger_checkpoints ORDER BY last_seq DESC LIMIT 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// SealedUpTo is the highest seq any checkpoint covers, from its index.
func (s *Store) SealedUpTo(ctx context.Context) (int64, error) {
	var last sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT MAX(last_seq) FROM ledger_checkpoints`).Scan(&last)
	return last.Int64, err
}

// ListCheckpoints returns a page of the tenant's checkpoints, newest first,
// and how many it has.
func (s *Store) ListCheckpoints(ctx context.Context, tenantID string, limit, offset int) ([]ledger.Checkpoint, int, error) {
	var total int
	if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM ledger_checkpoints WHERE tenant_id = ?`,
		tenantID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM ledger_checkpoints WHERE tenant_id = ?
		ORDER BY number DESC LIMIT ? OFFSET ?`, tenantID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []ledger.Checkpoint{}
	for rows.Next() {
		c, err := scanCheckpoint(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, c)
	}
	return out, total, rows.Err()
}
