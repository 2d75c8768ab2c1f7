package store

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/ledger"
)

// Savings sums the tenant's runs created at or after since, in all and by
// UTC day.
func (s *Store) Savings(ctx context.Context, tenantID string, since time.Time) (ledger.Savings, []ledger.SavingsDay, error) {
	var sum ledger.Savings
	from := int64(0)
	if !since.IsZero() {
		from = since.UnixMilli()
	}
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*),
		`+countWhere(`route = 'live'`)+`, `+countWhere(`route IN ('exact_cache', 'artifact')`)+`,
		`+countWhere(`route = 'blocked'`)+`, `+countWhere(`route = 'exact_cache'`)+`, `+countWhere(`route = 'artifact'`)+`,
		COALESCE(SUM(cost_usd), 0), COALESCE(SUM(saved_usd), 0), COALESCE(SUM(ghost_saved_usd), 0), COALESCE(SUM(saved_ms), 0)
		FROM runs WHERE tenant_id = ? AND created_at >= ?`, tenantID, from).Scan(&sum.TotalRuns, &sum.LiveRuns,
		&sum.OptimizedRuns, &sum.BlockedRuns, &sum.CacheHits, &sum.ArtifactHits, &sum.TotalCostUSD, &sum.TotalSavedUSD,
		&sum.GhostSavedUSD, &sum.TotalSavedMS)
	if err != nil {
		return sum, nil, err
	}
	err = s.read.QueryRowContext(ctx, `SELECT COALESCE(SUM(tokens_saved), 0) FROM web_fetches WHERE tenant_id = ? AND at >= ?`,
		tenantID, from).Scan(&sum.SOMTokensSaved)
	if err != nil {
		return sum, nil, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT created_at / 86400000 AS day, COUNT(*),
		`+countWhere(`route IN ('exact_cache', 'artifact')`)+`, COALESCE(SUM(cost_usd), 0), COALESCE(SUM(saved_usd), 0),
		COALESCE(SUM(ghost_saved_usd), 0)
		FROM runs WHERE tenant_id = ? AND created_at >= ? GROUP BY day ORDER BY day`, tenantID, from)
	if err != nil {
		return sum, nil, err
	}
	defer rows.Close()
	days := []ledger.SavingsDay{}
	for rows.Next() {
		var d ledger.SavingsDay
		var day int64
		if err := rows.Scan(&day, &d.Runs, &d.OptimizedRuns, &d.CostUSD, &d.SavedUSD, &d.GhostSavedUSD); err != nil {
			return sum, nil, err
		}
		d.Day = time.UnixMilli(day * 86400000).UTC().Format(time.DateOnly)
		days = append(days, d)
	}
	return sum, days, rows.Err()
}

// countWhere is the SQL that counts the rows of a group that meet cond, on
// either engine (PostgreSQL sums no booleans).
func countWhere(cond string) string {
	return `COUNT(CASE WHEN ` + cond + ` THEN 1 END)`
}
