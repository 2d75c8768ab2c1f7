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

// A replica starting while another migrates waits for the migration lock
// however long it is held, beyond the statement timeout.
func TestMigrationLockWaitOutlastsStatementTimeout(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	holder := storetest.OpenAt(t, dsn)
	conn, err := holder.DB().Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	const migrationLock = 0x7376635f6d6967 // store's
	_, err = conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock))
	require.NoError(t, err)

	opened := make(chan error, 1)
	go func() {
		s, err := store.OpenWith(ctx, dsn, store.Options{StatementTimeout: 50 * time.Millisecond})
		if err == nil {
			_ = s.Close()
		}
		opened <- err
	}()
	// The other replica has waited several of its statement timeouts.
	require.Eventually(t, func() bool {
		var long bool
		err := holder.DB().QueryRowContext(ctx, `SELECT COALESCE(bool_or(now() - query_start > interval '500 milliseconds'), false)
			FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&long)
		return err == nil && long
	}, 20*time.Second, 10*time.Millisecond, "a replica waits for the migration lock")
	select {
	case err := <-opened:
		t.Fatalf("the waiting replica gave up: %v", err)
	default:
	}
	_, err = conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	require.NoError(t, err)
	require.NoError(t, <-opened, "it migrates once the lock is free")
}
