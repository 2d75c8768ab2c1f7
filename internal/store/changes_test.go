package store_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// heard collects what a subscriber was told.
type heard struct {
	mu  sync.Mutex
	got []string
}

func (h *heard) add(p string) {
	h.mu.Lock()
	h.got = append(h.got, p)
	h.mu.Unlock()
}

func (h *heard) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

func (h *heard) has(p string) bool {
	for _, g := range h.list() {
		if g == p {
			return true
		}
	}
	return false
}

// waitConnected waits until s's listener has connected n times.
func waitConnected(t *testing.T, s *store.Store, n uint64) {
	t.Helper()
	require.Eventually(t, func() bool { return s.FeedConnects() >= n }, 20*time.Second, 5*time.Millisecond)
}

func TestChangesReachOtherReplicasOnPostgres(t *testing.T) {
	dsn := storetest.DSN(t)
	a, b := storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)
	var onA, onB, other heard
	a.Subscribe("key", onA.add)
	b.Subscribe("key", onB.add)
	b.Subscribe("settings", other.add)
	waitConnected(t, a, 1)
	waitConnected(t, b, 1)
	// A connect tells every subscriber to start over.
	assert.Equal(t, []string{changes.Everything}, onB.list())

	ctx := context.Background()
	require.NoError(t, a.Notify(ctx, "key", "abc def"))
	require.Eventually(t, func() bool { return onB.has("abc def") }, 20*time.Second, 5*time.Millisecond)
	assert.Equal(t, []string{changes.Everything}, onA.list(), "a store does not hear its own change")
	assert.Equal(t, []string{changes.Everything}, other.list(), "a topic hears its own changes only")

	// A lost notification is not delivered.
	b.LoseChanges(func(topic, payload string) bool { return payload == "lost" })
	require.NoError(t, a.Notify(ctx, "key", "lost"))
	require.NoError(t, a.Notify(ctx, "key", "after"))
	require.Eventually(t, func() bool { return onB.has("after") }, 20*time.Second, 5*time.Millisecond)
	assert.False(t, onB.has("lost"))
}

func TestChangesListenerReconnectsAndStartsOver(t *testing.T) {
	dsn := storetest.DSN(t)
	a, b := storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)
	var onB heard
	b.Subscribe("sessions", onB.add)
	waitConnected(t, b, 1)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var killed int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'svc changes'`).Scan(&killed))
	require.Equal(t, 1, killed)

	// Reconnected, the subscriber is told to start over, and hears changes
	// again.
	waitConnected(t, b, 2)
	assert.Equal(t, []string{changes.Everything, changes.Everything}, onB.list())
	require.NoError(t, a.Notify(ctx, "sessions", "u1"))
	require.Eventually(t, func() bool { return onB.has("u1") }, 20*time.Second, 5*time.Millisecond)
}

func TestChangesOnSQLiteReachTheFilesOtherStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc.db")
	a, b := storetest.OpenAt(t, path), storetest.OpenAt(t, path)
	other := storetest.OpenAt(t, filepath.Join(t.TempDir(), "other.db"))
	var onA, onB, onOther heard
	a.Subscribe("key", onA.add)
	b.Subscribe("key", onB.add)
	other.Subscribe("key", onOther.add)

	require.NoError(t, a.Notify(context.Background(), "key", "h1"))
	assert.Equal(t, []string{"h1"}, onB.list(), "delivered in process, at once")
	assert.Empty(t, onA.list())
	assert.Empty(t, onOther.list())
	assert.Zero(t, a.FeedConnects())
}

func TestInvalidationCounts(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	counts, err := s.InvalidationCounts(ctx)
	require.NoError(t, err)
	assert.Empty(t, counts)

	require.NoError(t, s.CountInvalidation(ctx, tenant.DefaultID, cache.ExactResponse))
	require.NoError(t, s.CountInvalidation(ctx, tenant.DefaultID, cache.ExactResponse))
	require.NoError(t, s.CountInvalidation(ctx, tenant.DefaultID, ""))
	counts, err = s.InvalidationCounts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[cache.Scope]int64{
		{TenantID: tenant.DefaultID, Tier: cache.ExactResponse}: 2,
		{TenantID: tenant.DefaultID, Tier: ""}:                  1,
	}, counts)
}

// silencer forwards TCP connections to a PostgreSQL socket until told to
// go silent: then the connections open so far carry nothing more, either
// way, and stay open, as after a network drop no one was told of. Later
// connections are forwarded.
type silencer struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	silent []*atomic.Bool
}

func newSilencer(t *testing.T, dsn string) (*silencer, string) {
	t.Helper()
	conf, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &silencer{ln: ln, target: filepath.Join(conf.Host, fmt.Sprintf(".s.PGSQL.%d", conf.Port))}
	t.Cleanup(func() { _ = ln.Close() })
	go p.serve()
	return p, fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", conf.User, ln.Addr(), conf.Database)
}

func (p *silencer) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("unix", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		silent := new(atomic.Bool)
		p.mu.Lock()
		p.silent = append(p.silent, silent)
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			buf := make([]byte, 32<<10)
			for {
				n, err := src.Read(buf)
				if err != nil {
					_ = dst.Close()
					return
				}
				if !silent.Load() {
					_, _ = dst.Write(buf[:n])
				}
			}
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// silence drops every connection open so far, silently.
func (p *silencer) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.silent {
		s.Store(true)
	}
}

func TestChangesListenerReplacesAHalfOpenConnection(t *testing.T) {
	dsn := storetest.DSN(t)
	proxy, through := newSilencer(t, dsn)
	a, b := storetest.OpenAt(t, dsn), storetest.OpenAt(t, through)
	store.SetFeedPing(b, 50*time.Millisecond)
	var onB heard
	b.Subscribe("key", onB.add)
	waitConnected(t, b, 1)

	proxy.silence() // the listener's connection is dead, and nobody says so
	waitConnected(t, b, 2)
	assert.Equal(t, []string{changes.Everything, changes.Everything}, onB.list(), "what was missed is reloaded")
	require.NoError(t, a.Notify(context.Background(), "key", "after"))
	require.Eventually(t, func() bool { return onB.has("after") }, 20*time.Second, 5*time.Millisecond)
}
