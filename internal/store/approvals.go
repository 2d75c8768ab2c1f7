package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/errs"
)

var _ approval.Store = (*Store)(nil)

const approvalColumns = `id, status, target, fingerprint, run_id, request, requested_by, rules, created_at,
	decided_at, decided_by, reason, expires_at`

// CountPendingApprovals counts every tenant's pending approvals, from the
// index of pending ones.
func (s *Store) CountPendingApprovals(ctx context.Context) (int, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM approvals WHERE status = 'pending'`).Scan(&n)
	return n, err
}

// OpenApproval stores a unless the tenant has a pending approval with its
// fingerprint, which it returns instead, or unless a's requester has limit
// approvals pending already (approval.ErrPendingLimit). The one writer
// makes the count and the insert one step.
func (s *Store) OpenApproval(ctx context.Context, a *approval.Approval, limit int) (approval.Approval, bool, error) {
	by, err := json.Marshal(a.RequestedBy)
	if err != nil {
		return approval.Approval{}, false, err
	}
	rules, err := json.Marshal(a.Rules)
	if err != nil {
		return approval.Approval{}, false, err
	}
	var out approval.Approval
	created := false
	err = s.tx(ctx, func(tx *txn) error {
		created = false // not an earlier attempt's
		out, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals
			WHERE tenant_id = ? AND fingerprint = ? AND status = 'pending'`, a.TenantID, a.Fingerprint))
		if err == nil {
			out.TenantID = a.TenantID
			return nil
		}
		if !errs.Is(err, errs.NotFound) {
			return err
		}
		var pending int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM approvals
			WHERE tenant_id = ? AND requester = ? AND status = 'pending'`, a.TenantID, a.RequestedBy.Actor).Scan(&pending); err != nil {
			return err
		}
		if pending >= limit {
			return approval.ErrPendingLimit
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO approvals (id, tenant_id, status, target, fingerprint, run_id,
			request, requested_by, requester, rules, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.TenantID, a.Status, a.Target, a.Fingerprint, a.RunID, string(a.Request), string(by), a.RequestedBy.Actor,
			string(rules), a.CreatedAt.UnixMilli()); err != nil {
			return formatError(err)
		}
		created, out = true, *a
		return nil
	})
	return out, created, err
}

// Approval returns one of the tenant's approvals.
func (s *Store) Approval(ctx context.Context, tenantID, id string) (approval.Approval, error) {
	a, err := scanApproval(s.read.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE tenant_id = ? AND id = ?`, tenantID, id))
	a.TenantID = tenantID
	return a, err
}

// ListApprovals returns the tenant's approvals, newest first.
func (s *Store) ListApprovals(ctx context.Context, tenantID string, f approval.Filter) ([]approval.Approval, error) {
	q := `SELECT ` + approvalColumns + ` FROM approvals WHERE tenant_id = ?`
	args := []any{tenantID}
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, f.Status)
	}
	rows, err := s.read.QueryContext(ctx, q+` ORDER BY created_at DESC, rowid DESC LIMIT ?`, append(args, f.Limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []approval.Approval{}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		a.TenantID = tenantID
		out = append(out, a)
	}
	return out, rows.Err()
}

// DecideApproval records a's decision if it is still pending.
func (s *Store) DecideApproval(ctx context.Context, a *approval.Approval) error {
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, reason = ?,
			expires_at = ? WHERE tenant_id = ? AND id = ? AND status = 'pending'`,
			a.Status, msPtr(a.DecidedAt), a.DecidedBy, a.Reason, msPtr(a.ExpiresAt), a.TenantID, a.ID)
		if err != nil {
			return formatError(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.E(errs.Conflict, "already_decided", "the approval was already decided")
		}
		return nil
	})
}

// ApprovedException returns the tenant's approved approval with the
// fingerprint whose exception lasts past now.
func (s *Store) ApprovedException(ctx context.Context, tenantID, fingerprint string, now time.Time) (*approval.Approval, error) {
	a, err := scanApproval(s.read.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE tenant_id = ? AND fingerprint = ? AND status = 'approved' AND expires_at > ?
		ORDER BY expires_at DESC LIMIT 1`, tenantID, fingerprint, now.UnixMilli()))
	if errs.Is(err, errs.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a.TenantID = tenantID
	return &a, nil
}

func scanApproval(row scanner) (approval.Approval, error) {
	var (
		a                  approval.Approval
		request, by, rules string
		created            int64
		decided, expires   sql.NullInt64
	)
	err := row.Scan(&a.ID, &a.Status, &a.Target, &a.Fingerprint, &a.RunID, &request, &by, &rules, &created,
		&decided, &a.DecidedBy, &a.Reason, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return a, errs.NotFoundf("approval not found")
	}
	if err != nil {
		return a, err
	}
	a.Request = json.RawMessage(request)
	if err := json.Unmarshal([]byte(by), &a.RequestedBy); err != nil {
		return a, fmt.Errorf("decode requester of %s: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(rules), &a.Rules); err != nil {
		return a, fmt.Errorf("decode rules of %s: %w", a.ID, err)
	}
	a.CreatedAt, a.DecidedAt, a.ExpiresAt = msTime(created), msTimePtr(decided), msTimePtr(expires)
	return a, nil
}

func msPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}
