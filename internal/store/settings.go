package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svc-gateway/svc/internal/settings"
)

var _ settings.Store = (*Store)(nil)

// TenantSettings returns the tenant's stored setting values.
func (s *Store) TenantSettings(ctx context.Context, tenantID string) (map[string]json.RawMessage, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT key, value FROM settings WHERE tenant_id = ?`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]json.RawMessage)
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = json.RawMessage(v)
	}
	return out, rows.Err()
}

// PutTenantSetting stores one setting value of the tenant.
func (s *Store) PutTenantSetting(ctx context.Context, tenantID, key string, value json.RawMessage, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (tenant_id, key, value, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			tenantID, key, string(value), at.UnixMilli())
		return formatError(err)
	})
}
