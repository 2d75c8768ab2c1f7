package cache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func newCache(t *testing.T, maxBytes int64) (*cache.Cache, *fakeclock.Clock) {
	t.Helper()
	c := fakeclock.New(time.UnixMilli(1_800_000_000_000))
	return cache.New(cache.Options{MaxBytes: maxBytes, TTL: time.Hour, Negative: storetest.Open(t), Now: c.Now}), c
}

func TestCanonicalIgnoresKeyOrderAndSpacing(t *testing.T) {
	a, err := cache.AppendKeyJSON(nil, json.RawMessage(`{"b": [1, {"y": "\u0041", "x": 2.50}], "a": null}`))
	require.NoError(t, err)
	b, err := cache.AppendKeyJSON(nil, json.RawMessage(`{"a":null,"b":[1,{"x":2.50,"y":"A"}]}`))
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b))
	assert.Equal(t, `{"a":null,"b":[1,{"x":2.50,"y":"A"}]}`, string(a))
	_, err = cache.AppendKeyJSON(nil, json.RawMessage(`{"a":`))
	assert.Error(t, err)
}

func TestExactKey(t *testing.T) {
	body := `{"model":"gpt-4o-mini","temperature":0,"messages":[{"role":"user","content":"hi"}]}`
	k, err := cache.ExactKey("t_1", "app", "subj", []byte(body))
	require.NoError(t, err)
	same := []string{
		`{"messages":[{"content":"hi","role":"user"}],"temperature":0,"model":"gpt-4o-mini"}`,
		`{"model":"gpt-4o-mini","temperature":0,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
	}
	for _, b := range same {
		got, err := cache.ExactKey("t_1", "app", "subj", []byte(b))
		require.NoError(t, err)
		assert.Equal(t, k, got, b)
	}
	for name, other := range map[string][4]string{
		"tenant":   {"t_2", "app", "subj", body},
		"app":      {"t_1", "other", "subj", body},
		"subject":  {"t_1", "app", "", body},
		"model":    {"t_1", "app", "subj", strings.Replace(body, "gpt-4o-mini", "gpt-4o", 1)},
		"messages": {"t_1", "app", "subj", strings.Replace(body, `"hi"`, `"hello"`, 1)},
		"format":   {"t_1", "app", "subj", strings.Replace(body, `"temperature"`, `"response_format":{"type":"json_object"},"temperature"`, 1)},
		"tools":    {"t_1", "app", "subj", strings.Replace(body, `"temperature"`, `"tools":[{"type":"function","function":{"name":"x"}}],"temperature"`, 1)},
	} {
		got, err := cache.ExactKey(other[0], other[1], other[2], []byte(other[3]))
		require.NoError(t, err)
		assert.NotEqual(t, k, got, "a different %s is a different key", name)
	}
}

func TestFreshStaleAndMiss(t *testing.T) {
	c, clk := newCache(t, 1<<20)
	_, f := c.Lookup(tenant.DefaultID, cache.ExactResponse, "k")
	assert.Equal(t, cache.Miss, f)
	_, ok := c.Store(tenant.DefaultID, cache.ExactResponse, "k", []byte("answer"), cache.Meta{RunID: "run_1", CostUSD: 0.5}, 0)
	require.True(t, ok)
	e, f := c.Lookup(tenant.DefaultID, cache.ExactResponse, "k")
	assert.Equal(t, cache.Fresh, f)
	assert.Equal(t, "answer", string(e.Value))
	assert.Equal(t, "run_1", e.Meta.RunID)
	_, f = c.Lookup("t_other", cache.ExactResponse, "k")
	assert.Equal(t, cache.Miss, f, "never shared across tenants")
	_, f = c.Lookup(tenant.DefaultID, cache.ToolResult, "k")
	assert.Equal(t, cache.Miss, f, "nor across tiers")

	clk.Advance(time.Hour - time.Millisecond)
	_, f = c.Lookup(tenant.DefaultID, cache.ExactResponse, "k")
	assert.Equal(t, cache.Fresh, f)
	clk.Advance(time.Millisecond)
	_, f = c.Lookup(tenant.DefaultID, cache.ExactResponse, "k")
	assert.Equal(t, cache.Stale, f, "past its TTL an entry is kept for fallbacks only")

	_, ok = c.Store(tenant.DefaultID, cache.ToolResult, "t", []byte("{}"), cache.Meta{}, 10*time.Second)
	require.True(t, ok)
	clk.Advance(10 * time.Second)
	_, f = c.Lookup(tenant.DefaultID, cache.ToolResult, "t")
	assert.Equal(t, cache.Stale, f, "an entry's own TTL wins over the cache's")
}

func TestMemoryIsBounded(t *testing.T) {
	const bound = 64 << 10
	c, _ := newCache(t, bound)
	value := []byte(strings.Repeat("x", 1000))
	for i := range 1000 {
		c.Store(tenant.DefaultID, cache.ExactResponse, fmt.Sprint("k", i), value, cache.Meta{}, 0)
		require.LessOrEqual(t, c.Bytes(), int64(bound))
	}
	_, f := c.Lookup(tenant.DefaultID, cache.ExactResponse, "k0")
	assert.Equal(t, cache.Miss, f, "the least recently used entries went first")
	_, f = c.Lookup(tenant.DefaultID, cache.ExactResponse, "k999")
	assert.Equal(t, cache.Fresh, f)
	_, ok := c.Store(tenant.DefaultID, cache.ExactResponse, "huge", make([]byte, bound/4), cache.Meta{}, 0)
	assert.False(t, ok, "an entry too large for the bound is not kept")
}

func TestStatsAndInvalidation(t *testing.T) {
	ctx := context.Background()
	c, _ := newCache(t, 1<<20)
	for _, tn := range []string{tenant.DefaultID, "t_other"} {
		c.Store(tn, cache.ExactResponse, "a", []byte("1"), cache.Meta{}, 0)
		c.Store(tn, cache.ExactResponse, "b", []byte("2"), cache.Meta{}, 0)
		c.Store(tn, cache.ToolResult, "c", []byte("3"), cache.Meta{}, 0)
	}
	c.Served(tenant.DefaultID, cache.ExactResponse)
	require.NoError(t, c.Ignore(ctx, tenant.DefaultID, "pattern-1", "ignored by an admin"))
	reason, ok, err := c.Ignored(ctx, tenant.DefaultID, "pattern-1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "ignored by an admin", reason)
	_, ok, err = c.Ignored(ctx, tenant.DefaultID, "pattern-2")
	require.NoError(t, err)
	assert.False(t, ok)

	stats, err := c.Stats(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, []cache.Stat{
		{CacheType: cache.ExactResponse, Entries: 2, Hits: 1},
		{CacheType: cache.ToolResult, Entries: 1},
		{CacheType: cache.SOM},
		{CacheType: cache.Negative, Entries: 1, Hits: 1},
	}, stats)

	require.NoError(t, c.Invalidate(ctx, tenant.DefaultID, cache.ExactResponse))
	stats, _ = c.Stats(ctx, tenant.DefaultID)
	assert.Equal(t, 0, stats[0].Entries)
	assert.Equal(t, 1, stats[1].Entries, "other tiers stay")
	require.NoError(t, c.Invalidate(ctx, tenant.DefaultID, ""))
	stats, _ = c.Stats(ctx, tenant.DefaultID)
	for _, s := range stats {
		assert.Zero(t, s.Entries, s.CacheType)
	}
	theirs, _ := c.Stats(ctx, "t_other")
	assert.Equal(t, 2, theirs[0].Entries, "another tenant's entries stay")

	_, err = cache.ParseTier("everything")
	assert.True(t, errs.Is(err, errs.Invalid))
}

func FuzzCanonical(f *testing.F) {
	f.Add([]byte(`{"b":[1,{"y":"A","x":2.5}],"a":null}`))
	f.Add([]byte(`[true,false,"\u00e9",-1e10]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := cache.AppendKeyJSON(nil, b)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form %q of %q is not JSON", out, b)
		}
		again, err := cache.AppendKeyJSON(nil, out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("canonical form is not stable: %q then %q (%v)", out, again, err)
		}
	})
}

func TestSOMTier(t *testing.T) {
	c, clk := newCache(t, 1<<20)
	_, ok := c.LookupSOM(tenant.DefaultID, "https://example.com/")
	assert.False(t, ok)
	require.True(t, c.StoreSOM(tenant.DefaultID, "https://example.com/", []byte(`{"regions":[]}`), time.Minute))
	som, ok := c.LookupSOM(tenant.DefaultID, "https://example.com/")
	assert.True(t, ok)
	assert.JSONEq(t, `{"regions":[]}`, string(som))
	_, ok = c.LookupSOM("t_other", "https://example.com/")
	assert.False(t, ok, "never across tenants")
	clk.Advance(time.Minute)
	_, ok = c.LookupSOM(tenant.DefaultID, "https://example.com/")
	assert.False(t, ok, "expired")
	stats, err := c.Stats(context.Background(), tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, cache.Stat{CacheType: cache.SOM, Entries: 1, Hits: 1}, stats[2])
}

func TestForgetTenantDropsOnlyItsEntries(t *testing.T) {
	c, _ := newCache(t, 1<<20)
	for _, tenantID := range []string{"t_gone", "t_kept"} {
		for _, tier := range []cache.Tier{cache.ExactResponse, cache.ToolResult} {
			_, ok := c.Store(tenantID, tier, "k", []byte("answer"), cache.Meta{}, 0)
			require.True(t, ok)
		}
	}
	c.ForgetTenant("t_gone")
	for _, tier := range []cache.Tier{cache.ExactResponse, cache.ToolResult} {
		_, f := c.Lookup("t_gone", tier, "k")
		assert.Equal(t, cache.Miss, f, "a deleted tenant's %s entry is gone", tier)
		_, f = c.Lookup("t_kept", tier, "k")
		assert.Equal(t, cache.Fresh, f, "another tenant's %s entry stays", tier)
	}
}

// Every tier's lookups are counted, and the fresh ones as hits.
func TestLookupsAreCountedByTier(t *testing.T) {
	clk := fakeclock.New(time.UnixMilli(1_800_000_000_000))
	m := metrics.New(metrics.Options{})
	c := cache.New(cache.Options{MaxBytes: 1 << 20, TTL: time.Hour, Now: clk.Now, Metrics: m})
	c.Lookup(tenant.DefaultID, cache.ExactResponse, "k")
	c.Store(tenant.DefaultID, cache.ExactResponse, "k", []byte(`{}`), cache.Meta{}, 0)
	c.Lookup(tenant.DefaultID, cache.ExactResponse, "k")
	clk.Advance(2 * time.Hour)
	c.Lookup(tenant.DefaultID, cache.ExactResponse, "k") // stale: no hit
	tc := cache.ToolCall{ToolName: "lookup_order", Args: json.RawMessage(`{"id":1}`)}
	_, _, err := c.CheckTool(tenant.DefaultID, tc)
	require.NoError(t, err)
	_, err = c.StoreTool(tenant.DefaultID, tc, json.RawMessage(`{"ok":true}`), 0)
	require.NoError(t, err)
	_, hit, err := c.CheckTool(tenant.DefaultID, tc)
	require.NoError(t, err)
	require.True(t, hit)
	c.LookupSOM(tenant.DefaultID, "https://example.com/")

	assert.Equal(t, map[string]float64{"exact_response": 3, "tool_result": 2, "som": 1},
		metricstest.Samples(t, m, "svc_cache_lookups_total"), "every tier shows, at zero until looked up")
	assert.Equal(t, map[string]float64{"exact_response": 1, "tool_result": 1}, metricstest.Nonzero(t, m, "svc_cache_hits_total"))
}
