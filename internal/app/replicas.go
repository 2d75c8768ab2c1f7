package app

import (
	"context"
	"sync"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/internal/store"
)

// tenantsTopic carries the id of a deleted organization.
const tenantsTopic = "tenants"

// replicate makes every in-memory copy of shared state follow the other
// replicas of a PostgreSQL database (see docs/changes.md): changes are
// announced on the store's feed and heard from the others, and no copy is
// trusted longer than SVC_DB_REFRESH, the bound on a lost notification. On
// SQLite, one process, nothing changes. forget are the components that
// drop a deleted organization.
func (a *App) replicate(ctx context.Context, st *settings.Service, budgets *spend.Budgets, governor *governance.Governor, forget []accounts.Forgetter) ([]accounts.Forgetter, error) {
	if a.Store.Engine() != store.Postgres {
		return forget, nil
	}
	feed, refresh := changes.Logged(a.Store, a.Logger.Named("changes")), a.Config.DBRefresh
	a.Keys.Replicate(feed, refresh)
	a.Sessions.Replicate(feed, refresh)
	st.Replicate(feed, refresh)
	budgets.Replicate(feed, refresh)
	governor.Replicate(feed, refresh)
	if err := a.Cache.Replicate(ctx, feed, a.Store); err != nil {
		return nil, err
	}
	a.Learning.Replicate(feed)
	a.Recorder.Replicate(feed, a.Store, a.Logger.Named("ledger"))
	feed.Subscribe(tenantsTopic, func(tenantID string) {
		if tenantID == changes.Everything {
			return // each component above starts over on its own topic
		}
		for _, f := range forget {
			f.ForgetTenant(tenantID)
		}
	})
	// The bound on a lost notification for the copies that are not
	// re-read entry by entry: the serving index and the cache.
	loops, cancel := context.WithCancel(context.Background())
	var refreshes sync.WaitGroup
	refreshes.Go(func() {
		every(loops.Done(), refresh, func() {
			if err := a.Learning.Refresh(loops); err != nil && loops.Err() == nil {
				a.Logger.Error("refreshing the serving index failed", "error", err)
			}
		})
	})
	refreshes.Go(func() { every(loops.Done(), refresh, func() { a.Cache.Refresh(loops) }) })
	a.pushFunc("refreshes", func() {
		cancel()
		refreshes.Wait()
	})
	return append(forget, announceForget{feed}), nil
}

// announceForget tells the other replicas that an organization was
// deleted, so that they forget it too.
type announceForget struct{ feed changes.Feed }

func (f announceForget) ForgetTenant(tenantID string) {
	changes.Announce(context.Background(), f.feed, tenantsTopic, tenantID)
}
