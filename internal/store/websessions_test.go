package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func reserveWebSession(t *testing.T, s *store.Store, tenantID, id string, at time.Time) {
	t.Helper()
	rec := browse.SessionRecord{TenantID: tenantID, ID: id, Info: browse.SessionInfo{ID: id, CreatedAt: at, LastActiveAt: at}}
	require.NoError(t, s.ReserveWebSession(context.Background(), rec, func(int, int) error { return nil }))
}

// A web session is reserved (counted, never listed), opened by its first
// save with its page, saved again only from the version it holds, touched,
// and deleted when found idle; another tenant's is not found.
func TestWebSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "other")
	require.NoError(t, err)
	at := time.UnixMilli(1_800_000_000_000).UTC()
	reserveWebSession(t, s, tenant.DefaultID, "ws_1", at)

	list, err := s.ListWebSessions(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Empty(t, list, "a reserved session is not listed")
	_, err = s.TouchWebSession(ctx, tenant.DefaultID, "ws_1", at, at.Add(-time.Minute))
	assert.True(t, errs.Is(err, errs.NotFound), "a reserved session is not open: %v", err)

	opened := at.Add(time.Second)
	first := browse.SessionRecord{TenantID: tenant.DefaultID, ID: "ws_1", State: []byte(`{"a":1}`),
		Info: browse.SessionInfo{URL: "https://shop.example/", Title: "Shop", CreatedAt: opened, LastActiveAt: opened}}
	require.NoError(t, s.SaveWebSession(ctx, first, []byte(`{"html":"page one"}`)))
	rec, page, err := s.LoadWebSession(ctx, tenant.DefaultID, "ws_1", -1)
	require.NoError(t, err)
	assert.Equal(t, []byte(`{"html":"page one"}`), page)
	assert.Equal(t, []byte(`{"a":1}`), rec.State)
	assert.Equal(t, int64(1), rec.Version)
	assert.Equal(t, int64(1), rec.PageVersion)
	assert.Equal(t, browse.SessionInfo{ID: "ws_1", URL: "https://shop.example/", Title: "Shop", CreatedAt: opened, LastActiveAt: opened}, rec.Info)

	_, page, err = s.LoadWebSession(ctx, tenant.DefaultID, "ws_1", 1)
	require.NoError(t, err)
	assert.Nil(t, page, "a page the caller holds is not read again")
	_, _, err = s.LoadWebSession(ctx, other.ID, "ws_1", -1)
	assert.True(t, errs.Is(err, errs.NotFound), "another tenant's session")

	stale := first
	stale.State = []byte(`{"a":2}`)
	assert.True(t, errs.Is(s.SaveWebSession(ctx, stale, nil), errs.NotFound), "a save from version 0 after version 1 is refused")
	stale.Version = 1
	require.NoError(t, s.SaveWebSession(ctx, stale, nil))
	rec, page, err = s.LoadWebSession(ctx, tenant.DefaultID, "ws_1", 1)
	require.NoError(t, err)
	assert.Nil(t, page)
	assert.Equal(t, []byte(`{"a":2}`), rec.State)
	assert.Equal(t, int64(2), rec.Version)
	assert.Equal(t, int64(1), rec.PageVersion)
	assert.Equal(t, opened, rec.Info.CreatedAt, "a later save keeps the times")

	used := opened.Add(4 * time.Minute)
	touched, err := s.TouchWebSession(ctx, tenant.DefaultID, "ws_1", used, used.Add(-5*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, used, touched.Info.LastActiveAt)
	_, err = s.TouchWebSession(ctx, other.ID, "ws_1", used, used.Add(-5*time.Minute))
	assert.True(t, errs.Is(err, errs.NotFound), "another tenant's session")
	later := used.Add(5 * time.Minute)
	_, err = s.TouchWebSession(ctx, tenant.DefaultID, "ws_1", later, later.Add(-5*time.Minute))
	assert.ErrorIs(t, err, browse.ErrSessionIdle)
	_, _, err = s.LoadWebSession(ctx, tenant.DefaultID, "ws_1", -1)
	assert.True(t, errs.Is(err, errs.NotFound), "an idle session found is deleted")
}

// The caps count the sessions of the tenant and of all, reserved ones
// included, and parallel reservations cannot pass them together.
func TestWebSessionReservationsHoldTheCaps(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "other")
	require.NoError(t, err)
	at := time.UnixMilli(1_800_000_000_000).UTC()
	reserveWebSession(t, s, other.ID, "ws_other", at)

	const limit = 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := range 8 {
		wg.Go(func() {
			id := "ws_" + string(rune('a'+i))
			rec := browse.SessionRecord{TenantID: tenant.DefaultID, ID: id, Info: browse.SessionInfo{CreatedAt: at, LastActiveAt: at}}
			err := s.ReserveWebSession(ctx, rec, func(n, all int) error {
				if n >= limit {
					return errs.E(errs.Conflict, "too_many_sessions", "%d", n)
				}
				return nil
			})
			if err == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			} else {
				assert.True(t, errs.Is(err, errs.Conflict), "%v", err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, limit, admitted)

	var seen [2]int
	rec := browse.SessionRecord{TenantID: other.ID, ID: "ws_probe", Info: browse.SessionInfo{CreatedAt: at, LastActiveAt: at}}
	require.NoError(t, s.ReserveWebSession(ctx, rec, func(n, all int) error { seen = [2]int{n, all}; return nil }))
	assert.Equal(t, [2]int{1, limit + 1}, seen, "the tenant's and everyone's")

	n, err := s.DeleteIdleWebSessions(ctx, at)
	require.NoError(t, err)
	assert.Equal(t, limit+2, n, "reserved sessions left behind are swept too")
}

// Two replicas on one PostgreSQL: the idle sweep deletes each session
// once, and the advisory lock lets one act in a session at a time.
func TestWebSessionsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	a, b := storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)
	at := time.UnixMilli(1_800_000_000_000).UTC()
	for _, id := range []string{"ws_1", "ws_2", "ws_3"} {
		reserveWebSession(t, a, tenant.DefaultID, id, at)
	}
	var na, nb int
	var wg sync.WaitGroup
	wg.Go(func() { na, _ = a.DeleteIdleWebSessions(ctx, at) })
	wg.Go(func() { nb, _ = b.DeleteIdleWebSessions(ctx, at) })
	wg.Wait()
	assert.Equal(t, 3, na+nb, "each session swept once")

	unlock, err := a.LockWebSession(ctx, tenant.DefaultID, "ws_x")
	require.NoError(t, err)
	got := make(chan func(), 1)
	go func() {
		u, err := b.LockWebSession(ctx, tenant.DefaultID, "ws_x")
		assert.NoError(t, err)
		got <- u
	}()
	other, err := b.LockWebSession(ctx, tenant.DefaultID, "ws_y")
	require.NoError(t, err, "another session is not held up")
	other()
	require.Eventually(t, func() bool {
		var waiting int
		err := a.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 5*time.Millisecond, "replica b waits for the lock")
	select {
	case u := <-got:
		u()
		t.Fatal("replica b acted in a session replica a holds")
	default:
	}
	unlock()
	(<-got)()
}
