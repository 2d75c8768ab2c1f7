package ledger

import (
	"context"
	"time"
)

// Savings is what a tenant's runs cost and what svc saved them, over a
// window.
type Savings struct {
	TotalRuns       int     `json:"totalRuns"`
	LiveRuns        int     `json:"liveRuns"`
	OptimizedRuns   int     `json:"optimizedRuns"` // served from a cache or an artifact
	BlockedRuns     int     `json:"blockedRuns"`
	TotalCostUSD    float64 `json:"totalCostUsd"`
	TotalSavedUSD   float64 `json:"totalSavedUsd"` // the cost of the live calls optimized runs avoided
	GhostSavedUSD   float64 `json:"ghostSavedUsd"` // what observe-mode runs would have saved
	TotalSavedMS    float64 `json:"totalSavedMs"`  // the latency they avoided
	CacheHitRate    float64 `json:"cacheHitRate"`
	ArtifactHitRate float64 `json:"artifactHitRate"`
	SOMTokensSaved  int64   `json:"somTokensSaved"` // prompt tokens web fetches saved by compiling pages

	CacheHits    int `json:"-"`
	ArtifactHits int `json:"-"`
}

// SavingsDay is one UTC day of a savings series.
type SavingsDay struct {
	Day           string  `json:"day"` // YYYY-MM-DD
	Runs          int     `json:"runs"`
	OptimizedRuns int     `json:"optimizedRuns"`
	CostUSD       float64 `json:"costUsd"`
	SavedUSD      float64 `json:"savedUsd"`
	GhostSavedUSD float64 `json:"ghostSavedUsd"`
}

// SavingsStore sums a tenant's runs.
type SavingsStore interface {
	// Savings sums the tenant's runs created at or after since.
	Savings(ctx context.Context, tenantID string, since time.Time) (Savings, []SavingsDay, error)
}

// SavingsReport is the savings summary with its daily series.
type SavingsReport struct {
	Savings
	Since *time.Time   `json:"since"`
	Daily []SavingsDay `json:"daily"`
}

// Savings sums the tenant's runs since the given time (all of them when
// since is zero).
func (s *Service) Savings(ctx context.Context, tenantID string, since time.Time) (SavingsReport, error) {
	if err := s.sync(ctx); err != nil {
		return SavingsReport{}, err
	}
	sum, days, err := s.store.Savings(ctx, tenantID, since)
	if err != nil {
		return SavingsReport{}, err
	}
	if sum.TotalRuns > 0 {
		sum.CacheHitRate = float64(sum.CacheHits) / float64(sum.TotalRuns)
		sum.ArtifactHitRate = float64(sum.ArtifactHits) / float64(sum.TotalRuns)
	}
	r := SavingsReport{Savings: sum, Daily: days}
	if !since.IsZero() {
		u := since.UTC()
		r.Since = &u
	}
	return r, nil
}
