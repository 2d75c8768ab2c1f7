package learning

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/learning/synth"
)

// learningTopic carries the id of a tenant whose serving artifacts changed
// (promoted, shadowed, quarantined, retired, ignored).
const learningTopic = "learning"

// Replicate makes the serving index follow the other replicas of the
// database: each change to a tenant's artifacts is announced on feed, and
// one announced elsewhere reloads that tenant here. A lost notification is
// healed by Refresh, which the caller runs once per refresh bound. Call it
// before use.
func (s *Service) Replicate(feed changes.Feed) {
	s.feed = feed
	feed.Subscribe(learningTopic, func(tenantID string) {
		// Off the feed's goroutine: a reload reads the store.
		if tenantID == changes.Everything {
			go func() { _ = s.Refresh(context.Background()) }()
			return
		}
		go s.reload(context.Background(), tenantID)
	})
}

// changed reloads the tenant's serving index after a change of its
// artifacts, and tells the other replicas.
func (s *Service) changed(ctx context.Context, tenantID string) {
	s.reload(ctx, tenantID)
	if s.feed != nil {
		changes.Announce(ctx, s.feed, learningTopic, tenantID)
	}
}

// Refresh brings the serving index in line with the store: one read of
// every serving artifact, and only a tenant whose set of artifacts (ids and
// states) differs from the index's is compiled again. A tenant reloaded
// meanwhile (after a notification) keeps what that reload read, which is
// newer.
func (s *Service) Refresh(ctx context.Context) error {
	before := s.index.loadCounts()
	rows, err := s.o.Store.ServingArtifacts(ctx)
	if err != nil {
		return err
	}
	byTenant := map[string][]ServingRow{}
	for _, r := range rows {
		byTenant[r.Artifact.TenantID] = append(byTenant[r.Artifact.TenantID], r)
	}
	for t := range before {
		if _, ok := byTenant[t]; !ok {
			byTenant[t] = nil // its last artifact stopped serving
		}
	}
	for t, rs := range byTenant {
		if signature(rs) == s.index.signature(t) {
			continue
		}
		s.setIfUnchanged(t, rs, before[t])
	}
	return nil
}

// setIfUnchanged replaces the tenant's entries by rows unless it was loaded
// since count was read, under its reload lock.
func (s *Service) setIfUnchanged(tenantID string, rows []ServingRow, count uint64) {
	mu := s.reloadLock(tenantID)
	mu.Lock()
	defer mu.Unlock()
	if s.index.loadCount(tenantID) != count {
		return
	}
	s.index.set(tenantID, rows, s.o.Logger)
}

// RefreshEvery runs Refresh once per period until ctx ends: the bound on a
// change whose notification this replica missed.
func (s *Service) RefreshEvery(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
				s.o.Logger.Error("refreshing the serving index failed", "error", err)
			}
		}
	}
}

// signature names the serving artifacts of rows and their states, in a
// fixed order.
func signature(rows []ServingRow) string {
	parts := make([]string, 0, len(rows))
	for _, r := range rows {
		if st := r.Artifact.State; st == synth.ArtifactPromoted || st == synth.ArtifactShadow {
			parts = append(parts, r.Artifact.ID+":"+st)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
