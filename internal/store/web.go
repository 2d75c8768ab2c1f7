package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/errs"
)

var _ browse.SnapshotStore = (*Store)(nil)

// SaveSnapshot stores a compiled page.
func (s *Store) SaveSnapshot(ctx context.Context, snap browse.Snapshot) error {
	var drift sql.NullFloat64
	if snap.DriftScore != nil {
		drift = sql.NullFloat64{Float64: *snap.DriftScore, Valid: true}
	}
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO web_snapshots (id, tenant_id, url, source, html_bytes, som_bytes, drift_score, som, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, snap.ID, snap.TenantID, snap.URL, snap.Source, snap.HTMLBytes, snap.SOMBytes,
			drift, string(snap.SOM), snap.CreatedAt.UnixMilli())
		return formatError(err)
	})
}

const snapshotColumns = `id, tenant_id, url, source, html_bytes, som_bytes, drift_score, created_at`

func scanSnapshot(row interface{ Scan(...any) error }, extra ...any) (browse.Snapshot, error) {
	var snap browse.Snapshot
	var drift sql.NullFloat64
	var created int64
	err := row.Scan(append([]any{&snap.ID, &snap.TenantID, &snap.URL, &snap.Source, &snap.HTMLBytes, &snap.SOMBytes, &drift, &created}, extra...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return snap, errs.NotFoundf("snapshot not found")
	}
	if drift.Valid {
		snap.DriftScore = &drift.Float64
	}
	snap.CreatedAt = msTime(created)
	return snap, err
}

// LatestSnapshot returns the tenant's newest snapshot of url, with its SOM.
func (s *Store) LatestSnapshot(ctx context.Context, tenantID, url string) (browse.Snapshot, error) {
	var som string
	snap, err := scanSnapshot(s.read.QueryRowContext(ctx, `SELECT `+snapshotColumns+`, som FROM web_snapshots
		WHERE tenant_id = ? AND url = ? ORDER BY created_at DESC, rowid DESC LIMIT 1`, tenantID, url), &som)
	snap.SOM = []byte(som)
	return snap, err
}

// Snapshot returns one of the tenant's snapshots with its SOM.
func (s *Store) Snapshot(ctx context.Context, tenantID, id string) (browse.Snapshot, error) {
	var som string
	snap, err := scanSnapshot(s.read.QueryRowContext(ctx, `SELECT `+snapshotColumns+`, som FROM web_snapshots
		WHERE tenant_id = ? AND id = ?`, tenantID, id), &som)
	snap.SOM = []byte(som)
	return snap, err
}

// ListSnapshots lists the tenant's snapshots (of url, when given), newest
// first, without their SOM.
func (s *Store) ListSnapshots(ctx context.Context, tenantID, url string, limit, offset int) ([]browse.Snapshot, int, error) {
	where, args := `tenant_id = ?`, []any{tenantID}
	if url != "" {
		where, args = where+` AND url = ?`, append(args, url)
	}
	var total int
	if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM web_snapshots WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+snapshotColumns+` FROM web_snapshots WHERE `+where+`
		ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`, append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	list := []browse.Snapshot{}
	for rows.Next() {
		snap, err := scanSnapshot(rows)
		if err != nil {
			return nil, 0, err
		}
		list = append(list, snap)
	}
	return list, total, rows.Err()
}

// RecordFetch notes a fetch served and the prompt tokens it saved.
func (s *Store) RecordFetch(ctx context.Context, tenantID, snapshotID string, cached bool, tokensSaved int, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO web_fetches (tenant_id, snapshot_id, cached, tokens_saved, at) VALUES (?, ?, ?, ?, ?)`,
			tenantID, snapshotID, cached, tokensSaved, at.UnixMilli())
		return formatError(err)
	})
}
