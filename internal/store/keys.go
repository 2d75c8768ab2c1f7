package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
)

var _ auth.KeyStore = (*Store)(nil)

const keyColumns = `id, tenant_id, name, mode, app_id, admin, prefix, token_hash, created_at, revoked_at`

// CreateKey stores k.
func (s *Store) CreateKey(ctx context.Context, k *auth.Key) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
			k.ID, k.TenantID, k.Name, string(k.Mode), k.AppID, k.Admin, k.Prefix, k.Hash[:], k.CreatedAt.UnixMilli())
		return formatError(err)
	})
}

// ListKeys returns the tenant's keys, newest first.
func (s *Store) ListKeys(ctx context.Context, tenantID string) ([]auth.Key, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys
		WHERE tenant_id = ? ORDER BY created_at DESC, id DESC`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	keys := []auth.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// RevokeKey marks the tenant's key revoked. Returns errs.NotFound for an
// unknown or foreign key, errs.Conflict when already revoked.
func (s *Store) RevokeKey(ctx context.Context, tenantID, id string, at time.Time) (auth.Key, error) {
	var k auth.Key
	err := s.tx(ctx, func(tx *txn) error {
		var err error
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys
			WHERE tenant_id = ? AND id = ?`, tenantID, id))
		if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return errs.E(errs.Conflict, "already_revoked", "the key is already revoked")
		}
		at := at.UTC().Truncate(time.Millisecond)
		k.RevokedAt = &at
		_, err = tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? AND id = ?`,
			at.UnixMilli(), tenantID, id)
		return err
	})
	return k, err
}

// KeyByHash finds a key, revoked or not, by its token hash.
func (s *Store) KeyByHash(ctx context.Context, hash [32]byte) (auth.Key, error) {
	return scanKey(s.read.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE token_hash = ?`, hash[:]))
}

type scanner interface{ Scan(dest ...any) error }

func scanKey(row scanner) (auth.Key, error) {
	var (
		k       auth.Key
		mode    string
		hash    []byte
		created int64
		revoked sql.NullInt64
	)
	err := row.Scan(&k.ID, &k.TenantID, &k.Name, &mode, &k.AppID, &k.Admin, &k.Prefix, &hash, &created, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return k, errs.NotFoundf("key not found")
	}
	if err != nil {
		return k, err
	}
	k.Mode = auth.Mode(mode)
	copy(k.Hash[:], hash)
	k.CreatedAt = msTime(created)
	k.RevokedAt = msTimePtr(revoked)
	return k, nil
}
