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
