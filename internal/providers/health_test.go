package providers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// panicking is a provider with a bug: every call panics.
type panicking struct{ *fake }

func (p panicking) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	panic("provider bug")
}

func TestAProbeThatPanicsFreesTheProbeSlot(t *testing.T) {
	h := newHarness(t, &Set{Providers: []*Provider{{Name: "a", Plugin: "openai",
		Breaker: BreakerConfig{Failures: 1, Cooldown: time.Second}}}, Retries: Retries{MaxAttempts: 1}})
	h.script("a", status(503, "down"), nil)
	_, _, err := h.chat(t, "m")
	require.Error(t, err)
	require.Equal(t, BreakerOpen, h.r.Status().Providers[0].Breaker.State)

	h.clock.Advance(2 * time.Second)
	prov := h.r.Current().Providers[0]
	prov.Impl = panicking{h.fakes["a"]}
	assert.PanicsWithValue(t, "provider bug", func() { _, _, _ = h.chat(t, "m") }, "the panic goes on to the server's recovery")
	prov.Impl = h.fakes["a"]
	assert.Equal(t, "the provider panicked", h.r.Status().Providers[0].LastError)

	h.clock.Advance(2 * time.Second) // the breaker opened again; after its cooldown, the next probe passes
	_, _, err = h.chat(t, "m")
	assert.NoError(t, err, "the probe slot is free")
	assert.Equal(t, BreakerClosed, h.r.Status().Providers[0].Breaker.State)
}
func TestStatusLastErrorHidesTheKeys(t *testing.T) {
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai"}, {Name: "b", Plugin: "openai"}},
		Retries: Retries{MaxAttempts: 2}, Secrets: []string{"sk-live-SECRET123"}}
	h := newHarness(t, set)
	h.script("a", status(401, "Incorrect API key provided: sk-live-SECRET123"))
	_, _, err := h.chat(t, "m")
	require.NoError(t, err)
	last := h.r.Status().Providers[0].LastError
	assert.NotContains(t, last, "SECRET123")
	assert.Contains(t, last, "Incorrect API key provided: [redacted]")
}

// chatOnly is an instance without embeddings (an Anthropic one).
type chatOnly struct{ fakeInstance }

func TestAnInstanceWithoutEmbeddingsIsSkippedNotFailed(t *testing.T) {
	c := &counted{inst: &chatOnly{fakeInstance{name: "anthropic"}}, done: make(chan struct{})}
	set := &Set{Providers: []*Provider{
		{Name: "anthropic", Plugin: "anthropic", Impl: c, Breaker: BreakerConfig{Failures: 1, Cooldown: time.Minute}},
		{Name: "b", Plugin: "openai"},
	}, Retries: Retries{MaxAttempts: 3}}
	h := newHarness(t, set)
	set.Providers[1].Impl = embedFake{h.fakes["b"]}
	for range 2 {
		p, err := h.r.Plan("text-embedding-3-small")
		require.NoError(t, err)
		_, err = h.r.Embed(context.Background(), p, pluginapi.EmbedRequest{Body: []byte(`{}`), Model: "text-embedding-3-small"})
		require.NoError(t, err)
		assert.Equal(t, []string{"b:ok"}, outcomes(p))
		assert.Equal(t, []Skipped{{Provider: "anthropic", Reason: ReasonNoEmbeddings}}, p.Skipped)
	}
	st := h.r.Status().Providers[0]
	assert.Equal(t, BreakerClosed, st.Breaker.State, "embeddings never open a chat provider's breaker")
	assert.Zero(t, st.Stats.Failures)
}

// pluginWithoutEmbeddings is a plugin's client: an Embedder whatever the
// plugin serves, answering NoEmbeddings for one that serves none.
type pluginWithoutEmbeddings struct{ *fake }

func (p pluginWithoutEmbeddings) Embed(_ context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	return pluginapi.EmbedResponse{}, pluginapi.NoEmbeddings(req.Model)
}

func TestAPluginAnsweringNoEmbeddingsIsSkippedNotFailed(t *testing.T) {
	set := &Set{Providers: []*Provider{
		{Name: "a", Plugin: "anthropic", Breaker: BreakerConfig{Failures: 1, Cooldown: time.Minute}},
		{Name: "b", Plugin: "openai"},
	}, Retries: Retries{MaxAttempts: 2}}
	h := newHarness(t, set)
	set.Providers[0].Impl = pluginWithoutEmbeddings{h.fakes["a"]}
	set.Providers[1].Impl = embedFake{h.fakes["b"]}
	p, err := h.r.Plan("e")
	require.NoError(t, err)
	_, err = h.r.Embed(context.Background(), p, pluginapi.EmbedRequest{Body: []byte(`{}`), Model: "e"})
	require.NoError(t, err)
	assert.Equal(t, []string{"b:ok"}, outcomes(p), "no attempt spent on it")
	assert.Equal(t, []Skipped{{Provider: "a", Reason: ReasonNoEmbeddings}}, p.Skipped)
	assert.Equal(t, BreakerClosed, h.r.Status().Providers[0].Breaker.State)

	set2 := &Set{Providers: []*Provider{{Name: "a", Plugin: "anthropic"}}, Retries: Retries{MaxAttempts: 2}}
	h2 := newHarness(t, set2)
	set2.Providers[0].Impl = pluginWithoutEmbeddings{h2.fakes["a"]}
	p, err = h2.r.Plan("e")
	require.NoError(t, err)
	_, err = h2.r.Embed(context.Background(), p, pluginapi.EmbedRequest{Body: []byte(`{}`), Model: "e"})
	assert.True(t, pluginapi.IsNoEmbeddings(err), "the only provider without embeddings: the 404 as before, %v", err)
}

func TestRetryAfterOfA503SetsTheWaitButNoRateLimit(t *testing.T) {
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai"}}, Retries: Retries{MaxAttempts: 2, Backoff: time.Millisecond, MaxBackoff: 2 * time.Second}}
	h := newHarness(t, set)
	h.script("a", &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "busy", RetryAfter: time.Second}, nil)
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:error", "a:ok"}, outcomes(p))
	assert.Equal(t, []time.Duration{time.Second}, h.waits, "the upstream's Retry-After, longer than the backoff")
	assert.Nil(t, h.r.Status().Providers[0].RateLimitedUntil, "only a 429 marks it rate limited")
}

func TestAPluginsOwnTimeoutIsATimeout(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{}))
	h.script("a", &pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: "upstream_timeout", Message: "the provider timed out"})
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:timeout", "b:ok"}, outcomes(p))
}

func TestANonStreamedAttemptTimesOutOnItsDeadline(t *testing.T) {
	set := twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{})
	set.Providers[0].Timeout = time.Nanosecond // past before the provider looks
	h := newHarness(t, set)
	h.r.afterFunc = nil // real time: the deadline of a non-streamed attempt
	h.script("a", errHang)
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:timeout", "b:ok"}, outcomes(p))
	assert.Equal(t, "timed out after 1ns", p.Attempts[0].Error)
}
