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
