package learning

import (
	"context"
	"slices"
	"strings"
	"sync"

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
// before use; Close stops the reloads it started.
func (s *Service) Replicate(feed changes.Feed) {
	s.feed = feed
	ctx, cancel := context.WithCancel(context.Background())
	s.follow = &follower{ctx: ctx, cancel: cancel, queued: map[string]bool{}}
	feed.Subscribe(learningTopic, func(tenantID string) {
		s.follow.start(tenantID, func(ctx context.Context) {
			if tenantID == changes.Everything {
				if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
					s.o.Logger.Error("refreshing the serving index failed", "error", err)
				}
				return
			}
			s.reload(ctx, tenantID)
		})
	})
}

// follower runs the reloads the other replicas' notices call for off the
// feed's goroutine (a reload reads the store), under a context Close
// cancels and waits for. Notices for one tenant (or for everything) arriving
// while its reload is under way fold into one more reload after it.
type follower struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	queued map[string]bool // tenant → another run is due after the current one
}

// start runs do for key, or has it run once more after the run of key
// under way.
func (f *follower) start(key string, do func(context.Context)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	if _, running := f.queued[key]; running {
		f.queued[key] = true
		return
	}
	f.queued[key] = false
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			do(f.ctx)
			f.mu.Lock()
			again := f.queued[key] && !f.closed
			if !again {
				delete(f.queued, key)
				f.mu.Unlock()
				return
			}
			f.queued[key] = false
			f.mu.Unlock()
		}
	}()
}

// close cancels the runs under way, waits for them and starts no more.
func (f *follower) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
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
	tenants := byTenant(rows)
	for t := range before {
		if _, ok := tenants[t]; !ok {
			tenants[t] = nil // its last artifact stopped serving
		}
	}
	for t, rs := range tenants {
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
