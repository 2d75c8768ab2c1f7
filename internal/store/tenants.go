package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/tenant"
)

// ensureTenant creates the tenant id when it does not exist; running it
// again changes nothing.
func (s *Store) ensureTenant(ctx context.Context, id, name string) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)
			ON CONFLICT (id) DO NOTHING`, id, name, s.nowMS())
		return err
	})
}

// CreateTenant creates a tenant with a fresh id.
func (s *Store) CreateTenant(ctx context.Context, name string) (tenant.Tenant, error) {
	t := tenant.Tenant{ID: ids.New("t"), Name: name, CreatedAt: msTime(s.nowMS())}
	err := s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)`,
			t.ID, t.Name, t.CreatedAt.UnixMilli())
		return formatError(err)
	})
	return t, err
}

// Tenant returns the tenant id. Returns errs.NotFound when it does not exist.
func (s *Store) Tenant(ctx context.Context, id string) (tenant.Tenant, error) {
	var t tenant.Tenant
	var created int64
	err := s.read.QueryRowContext(ctx, `SELECT id, name, created_at FROM tenants WHERE id = ?`, id).
		Scan(&t.ID, &t.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return t, errs.NotFoundf("tenant not found")
	}
	t.CreatedAt = msTime(created)
	return t, err
}

// TenantIDs lists every tenant's id.
func (s *Store) TenantIDs(ctx context.Context) ([]string, error) {
	return queryStrings(ctx, s.read, `SELECT id FROM tenants ORDER BY id`)
}

// queryStrings runs a query of one text column and returns its values.
func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// tenantTables are the tables that hold a tenant's records, each by its
// tenant_id column, in the order DeleteOrg empties them: a table before
// the tables it references. A test lists every table with a tenant_id
// column and fails when one keeps a deleted tenant's rows.
var tenantTables = []string{
	"ledger_checkpoints", "ledger_entries",
	"artifact_evaluations", "artifacts", "patterns", "learning_reports",
	"side_effects", "feedback", "run_events", "deleted_responses", "runs", "approvals", "agents",
	"web_snapshots", "web_fetches", "web_sessions", "negative_cache", "cache_invalidations", "jobs",
	"workflows", "spend_counters", "budgets", "budget_alerts", "onboarding", "org_invites", "memberships", "api_keys", "settings", "audit_events",
}

// DeleteOrg deletes the tenant and every record of it in one transaction.
// The ledger's triggers let its entries and checkpoints go only once the
// tenant is gone, so the tenant's row goes first (foreign keys are checked
// at the commit). Sessions that had it active heal to the person's first
// membership when they are next read.
func (s *Store) DeleteOrg(ctx context.Context, tenantID string) error {
	return s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, s.sql(`PRAGMA defer_foreign_keys = ON`, `SET CONSTRAINTS ALL DEFERRED`)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM tenants WHERE id = ?`, tenantID)
		if err != nil {
			return err
		}
		if err := expectOne(res, "organization not found"); err != nil {
			return err
		}
		for _, table := range tenantTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ?`, tenantID); err != nil {
				return fmt.Errorf("delete from %s: %w", table, err)
			}
		}
		return nil
	})
}
