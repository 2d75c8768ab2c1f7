package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/metrics"
)

// value reads a counter.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	require.NoError(t, c.Write(&d))
	return d.GetCounter().GetValue()
}

// series counts a family's series.
func series(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 1024)
	c.Collect(ch)
	close(ch)
	return len(ch)
}

func liveCall() *metrics.GatewayCall {
	return &metrics.GatewayCall{
		Endpoint: "chat_completions", Status: 200, Mode: "optimize", App: "support", Tenant: "default",
		Duration: 120 * time.Millisecond, Overhead: 400 * time.Microsecond,
		Run: metrics.Run{Route: "live", Provider: "mock", Model: "gpt-4o-mini", InputTokens: 12, OutputTokens: 5, CostUSD: 0.25},
	}
}

func TestObserveCallRecordsEveryFamily(t *testing.T) {
	m := metrics.New(metrics.Options{LabelLimit: 10})
	m.ObserveCall(liveCall())
	m.ObserveCall(&metrics.GatewayCall{Endpoint: "chat_completions", Status: 200, Mode: "optimize", App: "support", FirstByte: time.Millisecond,
		Run: metrics.Run{Route: "exact_cache", Provider: "mock", Model: "gpt-4o-mini", InputTokens: 12, OutputTokens: 5, SavedUSD: 0.25}})
	m.ObserveCall(&metrics.GatewayCall{Endpoint: "chat_completions", Status: 200, Mode: "observe",
		Run: metrics.Run{Route: "artifact", ArtifactType: "classifier", SavedUSD: 0.5}})
	m.ObserveCall(&metrics.GatewayCall{Endpoint: "embeddings", Status: 401, Run: metrics.Run{GhostSavedUSD: 0.125}})

	assert.InDelta(t, 1, value(t, m.Requests.WithLabelValues("chat_completions", "live", "mock", "gpt-4o-mini", "2xx", "optimize", "support")), 0)
	assert.InDelta(t, 1, value(t, m.Requests.WithLabelValues("embeddings", "none", "", "", "4xx", "none", "")), 0, "no run: route and mode none")
	assert.InDelta(t, 12, value(t, m.Tokens.WithLabelValues("input", "mock", "gpt-4o-mini")), 0, "the cache hit's tokens are not a provider's")
	assert.InDelta(t, 5, value(t, m.Tokens.WithLabelValues("output", "mock", "gpt-4o-mini")), 0)
	assert.InDelta(t, 0.25, value(t, m.Cost.WithLabelValues("live", "mock", "gpt-4o-mini")), 1e-12)
	assert.InDelta(t, 0.25, value(t, m.Savings.WithLabelValues("exact_cache")), 1e-12)
	assert.InDelta(t, 0.5, value(t, m.Savings.WithLabelValues("artifact")), 1e-12)
	assert.InDelta(t, 0.125, value(t, m.GhostSavings.WithLabelValues()), 1e-12)
	assert.InDelta(t, 1, value(t, m.ArtifactServes.WithLabelValues("classifier")), 0)
	assert.Equal(t, 4, series(m.RequestDuration), "one series per endpoint, route, provider, model")
	assert.Equal(t, 4, series(m.Overhead))
	assert.Equal(t, 1, series(m.FirstByte), "only the streamed call")
	assert.Equal(t, 1, series(m.Cost), "no series for what cost nothing")
}

func TestFreeFormLabelsAreBounded(t *testing.T) {
	m := metrics.New(metrics.Options{LabelLimit: 3, TenantLabel: true})
	for i := range 10 {
		c := liveCall()
		c.App, c.Model, c.Tenant = fmt.Sprint("app-", i), fmt.Sprint("model-", i), fmt.Sprint("tenant-", i)
		m.ObserveCall(c)
	}
	assert.Equal(t, 4, series(m.Requests), "3 distinct values, then other")
	assert.InDelta(t, 7, value(t, m.Requests.WithLabelValues("chat_completions", "live", "mock", "other", "2xx", "optimize", "other", "other")), 0)
	assert.InDelta(t, 1, value(t, m.Requests.WithLabelValues("chat_completions", "live", "mock", "model-0", "2xx", "optimize", "app-0", "tenant-0")), 0)
	assert.InDelta(t, 12*7, value(t, m.Tokens.WithLabelValues("input", "mock", "other", "other")), 0)
}

func TestTenantLabelOnlyWhenTurnedOn(t *testing.T) {
	off := metrics.New(metrics.Options{})
	off.ObserveCall(liveCall())
	assert.Equal(t, 1, series(off.Requests))
	mf, err := off.Registry().Gather()
	require.NoError(t, err)
	for _, f := range mf {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				assert.NotEqual(t, "tenant", l.GetName(), "%s has a tenant label", f.GetName())
			}
		}
	}

	on := metrics.New(metrics.Options{TenantLabel: true})
	on.ObserveCall(liveCall())
	assert.InDelta(t, 1, value(t, on.Requests.WithLabelValues("chat_completions", "live", "mock", "gpt-4o-mini", "2xx", "optimize", "support", "default")), 0)
	assert.InDelta(t, 0.25, value(t, on.Cost.WithLabelValues("live", "mock", "gpt-4o-mini", "default")), 1e-12)
}

func TestCacheLookups(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.CacheLookup("exact_response", false)
	m.CacheLookup("exact_response", true)
	m.CacheLookup("som", true)
	assert.InDelta(t, 2, value(t, m.CacheLookups.WithLabelValues("exact_response")), 0)
	assert.InDelta(t, 1, value(t, m.CacheHits.WithLabelValues("exact_response")), 0)
	assert.InDelta(t, 1, value(t, m.CacheHits.WithLabelValues("som")), 0)
}

func TestNilMetricsDoNothing(t *testing.T) {
	var m *metrics.Metrics
	assert.NotPanics(t, func() {
		m.ObserveCall(liveCall())
		m.CacheLookup("som", true)
	})
}

// BenchmarkObserveCall is what a gateway request pays for its metrics.
func BenchmarkObserveCall(b *testing.B) {
	for _, tenant := range []bool{false, true} {
		b.Run(fmt.Sprint("tenant=", tenant), func(b *testing.B) {
			m := metrics.New(metrics.Options{TenantLabel: tenant})
			c := liveCall()
			c.FirstByte = 3 * time.Millisecond
			b.ReportAllocs()
			for b.Loop() {
				m.ObserveCall(c)
			}
		})
	}
}

func TestRefusedCallsDoNotUseUpTheLimit(t *testing.T) {
	m := metrics.New(metrics.Options{LabelLimit: 2})
	m.ObserveCall(liveCall()) // admits gpt-4o-mini and support
	for i := range 10 {
		m.ObserveCall(&metrics.GatewayCall{Endpoint: "chat_completions", Status: 400, App: fmt.Sprint("app-", i), Run: metrics.Run{Model: fmt.Sprint("made-up-", i)}})
		m.ObserveCall(&metrics.GatewayCall{Endpoint: "chat_completions", Status: 502, Run: metrics.Run{Route: "live", Provider: "mock", Model: fmt.Sprint("failed-", i)}})
	}
	blocked := liveCall()
	blocked.Route, blocked.Status, blocked.Model = "blocked", 403, "blocked-model"
	m.ObserveCall(blocked)
	assert.InDelta(t, 10, value(t, m.Requests.WithLabelValues("chat_completions", "none", "", "other", "4xx", "none", "other")), 0)
	known := liveCall()
	known.Status = 400
	known.Route = ""
	m.ObserveCall(known)
	assert.InDelta(t, 1, value(t, m.Requests.WithLabelValues("chat_completions", "none", "mock", "gpt-4o-mini", "4xx", "optimize", "support")), 0,
		"a value already admitted keeps its label on a refused call")

	second := liveCall()
	second.Model = "gpt-4o"
	m.ObserveCall(second)
	assert.InDelta(t, 1, value(t, m.Requests.WithLabelValues("chat_completions", "live", "mock", "gpt-4o", "2xx", "optimize", "support")), 0,
		"the refused calls left the second model its own label")
}
