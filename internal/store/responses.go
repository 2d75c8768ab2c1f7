package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// DeleteResponse records that the response of the tenant's run was
// deleted; false when it was already, or the tenant has no such run.
func (s *Store) DeleteResponse(ctx context.Context, tenantID, runID string, at time.Time) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO deleted_responses (tenant_id, run_id, deleted_at)
			SELECT tenant_id, id, ? FROM runs WHERE tenant_id = ? AND id = ? ON CONFLICT DO NOTHING`, at.UnixMilli(), tenantID, runID)
		if err != nil {
			return formatError(err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// ResponseDeleted reports whether the response of the tenant's run was
// deleted.
func (s *Store) ResponseDeleted(ctx context.Context, tenantID, runID string) (bool, error) {
	var one int
	err := s.read.QueryRowContext(ctx, `SELECT 1 FROM deleted_responses WHERE tenant_id = ? AND run_id = ?`, tenantID, runID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
