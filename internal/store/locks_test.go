package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// Advisory locks are held on connections of their own, never the main
// pool's: a store whose pool has one connection migrates (under the
// migration lock) and answers queries while it holds as many locks as its
// pool has connections.
func TestAdvisoryLocksLeaveThePoolFree(t *testing.T) {
	dsn := storetest.DSN(t)
	// A bound on the test's waits, so that a starved pool fails it
	// instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.OpenWith(ctx, dsn, store.Options{MaxConns: 1})
	require.NoError(t, err, "a one-connection pool migrates")
	t.Cleanup(func() { _ = s.Close() })

	release, ok, err := s.TryLock(ctx, "sweep")
	require.NoError(t, err)
	require.True(t, ok)
	defer release()
	unlock, err := s.LockWebSession(ctx, tenant.DefaultID, "ws_a")
	require.NoError(t, err)
	defer unlock()

	require.NoError(t, s.Ping(ctx), "a query runs while locks are held")
	_, err = s.CreateTenant(ctx, "acme")
	require.NoError(t, err, "a write runs while locks are held")
}
