package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/svc-gateway/svc/internal/cache"
)

var _ cache.NegativeStore = (*Store)(nil)

// AddNegative records the tenant's decision not to optimize key.
func (s *Store) AddNegative(ctx context.Context, tenantID, key, reason string, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO negative_cache (tenant_id, key, reason, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (tenant_id, key) DO UPDATE SET reason = excluded.reason`, tenantID, key, reason, at.UnixMilli())
		return formatError(err)
	})
}

// Negative returns the reason of the tenant's decision on key.
func (s *Store) Negative(ctx context.Context, tenantID, key string) (string, bool, error) {
	var reason string
	err := s.read.QueryRowContext(ctx, `SELECT reason FROM negative_cache WHERE tenant_id = ? AND key = ?`, tenantID, key).Scan(&reason)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return reason, err == nil, err
}

// CountNegative counts the tenant's decisions.
func (s *Store) CountNegative(ctx context.Context, tenantID string) (int, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM negative_cache WHERE tenant_id = ?`, tenantID).Scan(&n)
	return n, err
}

// ClearNegative deletes the tenant's decisions.
func (s *Store) ClearNegative(ctx context.Context, tenantID string) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM negative_cache WHERE tenant_id = ?`, tenantID)
		return err
	})
}

var _ cache.Invalidations = (*Store)(nil)

// CountInvalidation counts one invalidation of the tenant's in-memory tier
// (every tier when tier is empty).
func (s *Store) CountInvalidation(ctx context.Context, tenantID string, tier cache.Tier) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO cache_invalidations (tenant_id, tier, epoch) VALUES (?, ?, 1)
			ON CONFLICT (tenant_id, tier) DO UPDATE SET epoch = cache_invalidations.epoch + 1`, tenantID, string(tier))
		return formatError(err)
	})
}

// InvalidationCounts returns every tenant's counts of invalidations by
// tier.
func (s *Store) InvalidationCounts(ctx context.Context) (map[cache.Scope]int64, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT tenant_id, tier, epoch FROM cache_invalidations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[cache.Scope]int64{}
	for rows.Next() {
		var (
			sc cache.Scope
			n  int64
		)
		if err := rows.Scan(&sc.TenantID, &sc.Tier, &n); err != nil {
			return nil, err
		}
		out[sc] = n
	}
	return out, rows.Err()
}
