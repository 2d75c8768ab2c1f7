package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svc-gateway/svc/internal/audit"
)

var _ audit.Store = (*Store)(nil)

// AppendAudit stores e.
func (s *Store) AppendAudit(ctx context.Context, e *audit.Event) error {
	details, err := json.Marshal(e.Details)
	if err != nil {
		return fmt.Errorf("encode audit details: %w", err)
	}
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO audit_events (id, tenant_id, at, actor, action, decision, target, details)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, e.TenantID, e.At.UnixMilli(), e.Actor, e.Action, e.Decision, e.Target, string(details))
		return formatError(err)
	})
}

// ListAudit returns the tenant's events, newest first.
func (s *Store) ListAudit(ctx context.Context, tenantID string, f audit.Filter) ([]audit.Event, error) {
	q := `SELECT id, at, actor, action, decision, target, details FROM audit_events WHERE tenant_id = ?`
	args := []any{tenantID}
	for _, c := range []struct{ column, v string }{{"decision", f.Decision}, {"action", f.Action}, {"actor", f.Actor}} {
		if c.v != "" {
			q += ` AND ` + c.column + ` = ?`
			args = append(args, c.v)
		}
	}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		q += ` AND at < ?`
		args = append(args, f.Until.UnixMilli())
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := []audit.Event{}
	for rows.Next() {
		var (
			e       audit.Event
			at      int64
			details string
		)
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.Decision, &e.Target, &details); err != nil {
			return nil, err
		}
		e.TenantID = tenantID
		e.At = msTime(at)
		if err := json.Unmarshal([]byte(details), &e.Details); err != nil {
			return nil, fmt.Errorf("decode audit details of %s: %w", e.ID, err)
		}
		events = append(events, e)
	}
	return events, rows.Err()
}
