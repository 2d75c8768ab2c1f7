package ledger

import (
	"context"
	"time"
)

// RetentionJob is the job type of one tenant's retention sweep.
const RetentionJob = "retention.sweep"

// RetentionStore deletes old runs.
type RetentionStore interface {
	// DeleteRunsBefore deletes the tenant's runs created before t, with
	// everything that hangs off them, and the tenant's other records of the
	// same age (web snapshots, evaluation rows, learning reports), and
	// returns how many runs went.
	DeleteRunsBefore(ctx context.Context, tenantID string, t time.Time) (int, error)
}

// RetentionDays tells how many days of runs a tenant keeps.
type RetentionDays interface {
	RetentionDays(ctx context.Context, tenantID string) (float64, error)
}

// Retention deletes runs older than their tenant's retention_days.
type Retention struct {
	store RetentionStore
	days  RetentionDays
	now   func() time.Time
}

// NewRetention returns a retention sweeper.
func NewRetention(store RetentionStore, days RetentionDays, now func() time.Time) *Retention {
	if now == nil {
		now = time.Now
	}
	return &Retention{store: store, days: days, now: now}
}

// Sweep deletes the tenant's runs older than its retention, returning how
// many went.
func (r *Retention) Sweep(ctx context.Context, tenantID string) (int, error) {
	days, err := r.days.RetentionDays(ctx, tenantID)
	if err != nil {
		return 0, err
	}
	cutoff := r.now().Add(-time.Duration(days * float64(24*time.Hour)))
	return r.store.DeleteRunsBefore(ctx, tenantID, cutoff)
}
