package cache_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/changes/changestest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// memCounts keeps invalidation counts in memory; what a test counts
// directly is an invalidation made by another replica.
type memCounts struct {
	mu sync.Mutex
	n  map[cache.Scope]int64
	// afterCount, when set, runs once an invalidation is counted.
	afterCount func()
}

func (m *memCounts) CountInvalidation(_ context.Context, tenantID string, tier cache.Tier) error {
	m.mu.Lock()
	m.n[cache.Scope{TenantID: tenantID, Tier: tier}]++
	m.mu.Unlock()
	if m.afterCount != nil {
		m.afterCount()
	}
	return nil
}

func (m *memCounts) InvalidationCounts(context.Context) (map[cache.Scope]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[cache.Scope]int64, len(m.n))
	for k, v := range m.n {
		out[k] = v
	}
	return out, nil
}

func replicated(t *testing.T) (*cache.Cache, *changestest.Feed, *memCounts) {
	t.Helper()
	c, _ := newCache(t, 1<<20)
	feed, counts := changestest.New(), &memCounts{n: map[cache.Scope]int64{}}
	require.NoError(t, c.Replicate(context.Background(), feed, counts))
	return c, feed, counts
}

func cached(c *cache.Cache, tenantID string) bool {
	_, f := c.Lookup(tenantID, cache.ExactResponse, "k")
	return f == cache.Fresh
}

func fill(c *cache.Cache, tenants ...string) {
	for _, tn := range tenants {
		c.Store(tn, cache.ExactResponse, "k", []byte("1"), cache.Meta{}, 0)
	}
}

func TestAFailedNoticeDoesNotFailTheInvalidation(t *testing.T) {
	c, feed, counts := replicated(t)
	fill(c, tenant.DefaultID)
	feed.Fail(errors.New("connection reset"))

	require.NoError(t, c.Invalidate(context.Background(), tenant.DefaultID, cache.ExactResponse),
		"the invalidation is applied and counted; the refresh bound heals the lost notice")
	assert.False(t, cached(c, tenant.DefaultID))
	n, _ := counts.InvalidationCounts(context.Background())
	assert.Equal(t, int64(1), n[cache.Scope{TenantID: tenant.DefaultID, Tier: cache.ExactResponse}])
}

func TestInvalidationIsAnnouncedEvenWhenTheClientHangsUp(t *testing.T) {
	c, feed, counts := replicated(t)
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	counts.afterCount = hangUp // the client is gone once the invalidation is counted
	fill(c, tenant.DefaultID)
	require.NoError(t, c.Invalidate(ctx, tenant.DefaultID, cache.ExactResponse))
	notices := feed.Notices()
	require.Len(t, notices, 1)
	assert.Equal(t, tenant.DefaultID+" exact_response", notices[0].Payload)
	assert.NoError(t, notices[0].Err, "the other replicas must hear of the invalidation")
	assert.True(t, notices[0].Deadline, "the notice has its own bound")
}

func TestANoticeDropsTheTenantsTier(t *testing.T) {
	c, feed, _ := replicated(t)
	fill(c, "t1", "t2")
	feed.Publish("cache", "t1 "+string(cache.ExactResponse))
	assert.False(t, cached(c, "t1"))
	assert.True(t, cached(c, "t2"), "another tenant's entries stay")

	feed.Publish("cache", changes.Everything)
	assert.False(t, cached(c, "t2"), "everything is dropped on a reconnect")
}

func TestALostNoticeIsHealedByTheRefresh(t *testing.T) {
	c, _, counts := replicated(t)
	fill(c, "t1", "t2")
	// Another replica invalidates t1; its notice is lost.
	require.NoError(t, counts.CountInvalidation(context.Background(), "t1", ""))
	assert.True(t, cached(c, "t1"), "kept until the refresh")

	c.Refresh(context.Background())
	assert.False(t, cached(c, "t1"), "the scope whose count moved is dropped")
	assert.True(t, cached(c, "t2"), "only the scope whose count moved is dropped")
}
