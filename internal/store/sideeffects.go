package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svc-gateway/svc/internal/ledger"
)

var _ ledger.SideEffectStore = (*Store)(nil)

// AddSideEffect stores e; errs.NotFound when its run is not the tenant's.
func (s *Store) AddSideEffect(ctx context.Context, e *ledger.SideEffect) error {
	return s.tx(ctx, func(tx *txn) error {
		return insertSideEffect(ctx, tx, e)
	})
}

// insertSideEffect stores e in tx; errs.NotFound when its run is not the
// tenant's.
func insertSideEffect(ctx context.Context, tx *txn, e *ledger.SideEffect) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO side_effects (id, tenant_id, run_id, tool_name, level, payload, state,
		rule_id, reason, approval_id, planned_seq, evaluation_id, created_at, updated_at)
		SELECT ?, ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE tenant_id = ? AND id = ?`,
		e.ID, e.TenantID, e.ToolName, e.Level, string(e.Payload), e.State, e.RuleID, e.Reason, e.ApprovalID,
		e.PlannedSeq, e.EvaluationID, e.CreatedAt.UnixMilli(), e.UpdatedAt.UnixMilli(), e.TenantID, e.RunID)
	if err != nil {
		return formatError(err)
	}
	return expectOne(res, "run not found")
}

// SideEffects returns the run's records, oldest first.
func (s *Store) SideEffects(ctx context.Context, tenantID, runID string) ([]ledger.SideEffect, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id, tool_name, level, payload, state, rule_id, reason, approval_id,
		planned_seq, evaluation_id, created_at, updated_at FROM side_effects WHERE tenant_id = ? AND run_id = ?
		ORDER BY created_at, rowid`, tenantID, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ledger.SideEffect{}
	for rows.Next() {
		var (
			e                ledger.SideEffect
			payload          string
			created, updated int64
		)
		if err := rows.Scan(&e.ID, &e.ToolName, &e.Level, &payload, &e.State, &e.RuleID, &e.Reason, &e.ApprovalID,
			&e.PlannedSeq, &e.EvaluationID, &created, &updated); err != nil {
			return nil, err
		}
		e.TenantID, e.RunID, e.Payload = tenantID, runID, json.RawMessage(payload)
		e.CreatedAt, e.UpdatedAt = msTime(created), msTime(updated)
		out = append(out, e)
	}
	return out, rows.Err()
}

// ExecuteSideEffect moves the oldest planned record of the run's tool to
// executed.
func (s *Store) ExecuteSideEffect(ctx context.Context, tenantID, runID, toolName string, at time.Time) (bool, error) {
	var done bool
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE side_effects SET state = 'executed', updated_at = ?
			WHERE rowid = (SELECT rowid FROM side_effects WHERE tenant_id = ? AND run_id = ? AND tool_name = ?
				AND state = 'planned' ORDER BY created_at, rowid LIMIT 1)`,
			at.UnixMilli(), tenantID, runID, toolName)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		done = n == 1
		return nil
	})
	return done, err
}
