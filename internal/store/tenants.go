package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/tenant"
)

// ensureTenant creates the tenant id when it does not exist; running it
// again changes nothing.
func (s *Store) ensureTenant(ctx context.Context, id, name string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)
			ON CONFLICT (id) DO NOTHING`, id, name, s.nowMS())
		return err
	})
}

// CreateTenant creates a tenant with a fresh id.
func (s *Store) CreateTenant(ctx context.Context, name string) (tenant.Tenant, error) {
	t := tenant.Tenant{ID: ids.New("t"), Name: name, CreatedAt: msTime(s.nowMS())}
	err := s.tx(ctx, func(tx *sql.Tx) error {
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
