package store

import (
	"context"
	"database/sql"

	"github.com/svc-gateway/svc/internal/ledger"
)

const entryColumns = `tenant_id, run_id, kind, event_count, head_hash, digest, run_at, created_at`

// addEntry appends e to the ledger in tx, the transaction of the change it
// records.
func (s *Store) addEntry(ctx context.Context, tx *sql.Tx, e ledger.Entry) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO ledger_entries (`+entryColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.TenantID, e.RunID, e.Kind, e.EventCount, e.Head[:], e.Digest[:], e.RunAt.UnixMilli(), s.nowMS())
	return err
}

// Entries returns the tenant's ledger entries with after < seq <= upTo, in
// order.
func (s *Store) Entries(ctx context.Context, tenantID string, after, upTo int64) ([]ledger.Entry, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT seq, `+entryColumns+` FROM ledger_entries
		WHERE tenant_id = ? AND seq > ? AND seq <= ? ORDER BY seq`, tenantID, after, upTo)
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
