package providers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/calltime"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func TestAttemptsRetriesAndFallbacksAreCounted(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	m := metrics.New(metrics.Options{})
	h.r.SetMetrics(m)
	h.script("a", status(503, "upstream error"), nil)
	_, _, err := h.chat(t, "m") // a fails, b answers
	require.NoError(t, err)
	_, _, err = h.chat(t, "m") // a answers
	require.NoError(t, err)

	assert.Equal(t, map[string]float64{"error,a": 1, "ok,a": 1, "ok,b": 1},
		metricstest.Nonzero(t, m, "svc_provider_attempts_total"))
	assert.Empty(t, metricstest.Nonzero(t, m, "svc_provider_retries_total"),
		"an attempt on the next provider is a fallback, not a retry")
	assert.Equal(t, map[string]float64{"a,b": 1}, metricstest.Samples(t, m, "svc_provider_fallbacks_total"))
	assert.Equal(t, map[string]float64{"a": 2, "b": 1}, metricstest.Samples(t, m, "svc_provider_attempt_duration_seconds"))

	h = newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	m = metrics.New(metrics.Options{})
	h.r.SetMetrics(m)
	h.script("a", status(503, "upstream error"), nil)
	h.script("b", status(500, "boom"))
	p, _, err := h.chat(t, "m") // a fails, b fails, a again after a backoff answers
	require.NoError(t, err)
	require.Equal(t, []string{"a:error", "b:error", "a:ok"}, outcomes(p))
	assert.Equal(t, map[string]float64{"a": 1}, metricstest.Nonzero(t, m, "svc_provider_retries_total"),
		"a second attempt on a provider already tried is a retry")
}

func TestBreakerStateIsReadAtScrape(t *testing.T) {
	h := newHarness(t, &Set{Providers: []*Provider{{Name: "a", Plugin: "openai", Weight: 1, Breaker: BreakerConfig{Failures: 1, Cooldown: 10 * time.Second}},
		{Name: "b", Plugin: "openai", Weight: 1}}, Retries: Retries{MaxAttempts: 2}})
	m := metrics.New(metrics.Options{})
	m.ReadBreakers(h.r.Health)
	assert.Equal(t, map[string]float64{"a,closed": 1, "a,open": 0, "a,half_open": 0, "b,closed": 1, "b,open": 0, "b,half_open": 0},
		metricstest.Samples(t, m, "svc_provider_breaker_state"))

	h.script("a", status(500, "boom"))
	h.script("b", rateLimited(time.Minute), nil)
	_, _, err := h.chat(t, "m")
	require.Error(t, err, "a failed, b was rate limited")
	assert.Equal(t, map[string]float64{"a,closed": 0, "a,open": 1, "a,half_open": 0, "b,closed": 1, "b,open": 0, "b,half_open": 0},
		metricstest.Samples(t, m, "svc_provider_breaker_state"))
	assert.Equal(t, map[string]float64{"a": 0, "b": 1}, metricstest.Samples(t, m, "svc_provider_rate_limited"))

	h.clock.Advance(10 * time.Second)
	assert.Equal(t, 1.0, metricstest.Samples(t, m, "svc_provider_breaker_state")["a,half_open"])
}

func TestABackoffWaitIsTheProvidersTime(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}, BreakerConfig{}))
	h.script("a", status(502, "bad gateway"), nil)
	h.script("b", status(500, "boom"))
	clock := calltime.Start(time.Now())
	waited := false
	h.r.sleep = func(ctx context.Context, d time.Duration) error {
		// While the call waits, the clock counts a provider's time: an
		// hour from now, all of that hour is the provider's.
		now := time.Now()
		waited = true
		assert.GreaterOrEqual(t, clock.Provider(now.Add(time.Hour))-clock.Provider(now), time.Hour,
			"the wait is not on the provider's account")
		h.clock.Advance(d)
		return ctx.Err()
	}
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	_, err = h.r.Chat(calltime.With(context.Background(), clock), p, pluginapi.ChatRequest{Body: []byte(`{"model":"m"}`), Model: "m"})
	require.NoError(t, err)
	require.True(t, waited, "the call retried a after a backoff")
	now := time.Now()
	assert.Equal(t, clock.Provider(now), clock.Provider(now.Add(time.Hour)), "no attempt or wait left under way")
}
