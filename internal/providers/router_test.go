package providers

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// errHang makes a fake provider wait until its call's context is done.
var errHang = errors.New("hang")

// fake is a provider that answers from a script: the nth call gets
// script[n] (the last entry once the script runs out); nil is an answer.
type fake struct {
	name  string
	clock *fakeclock.Clock
	took  time.Duration // each call moves the clock this much
	// midStream, when set, is returned after a stream's first chunk.
	midStream error
	// gate, when set, holds the call numbered gateAt (from 0) until it is
	// closed.
	gate   chan struct{}
	gateAt int

	mu     sync.Mutex
	script []error
	calls  []pluginapi.ChatRequest
	models []pluginapi.Model
}

func (f *fake) next(ctx context.Context, req pluginapi.ChatRequest) error {
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, req)
	var err error
	if len(f.script) > 0 {
		err = f.script[min(n, len(f.script)-1)]
	}
	f.mu.Unlock()
	if f.gate != nil && n == f.gateAt {
		<-f.gate
	}
	if f.clock != nil {
		f.clock.Advance(f.took)
	}
	if err == errHang {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (f *fake) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if err := f.next(ctx, req); err != nil {
		return pluginapi.ChatResponse{}, err
	}
	return pluginapi.ChatResponse{Body: []byte(`{"from":"` + f.name + `"}`), Usage: pluginapi.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}}, nil
}

func (f *fake) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	if err := f.next(ctx, req); err != nil {
		return err
	}
	if err := send(pluginapi.ChatChunk{Data: []byte(`{"from":"` + f.name + `","n":1}`)}); err != nil {
		return err
	}
	if f.midStream != nil {
		return f.midStream
	}
	if err := ctx.Err(); err != nil {
		return err // the upstream connection is cut with the context
	}
	return send(pluginapi.ChatChunk{Data: []byte(`{"from":"` + f.name + `","n":2}`)})
}

func (f *fake) Models(context.Context) ([]pluginapi.Model, error) { return f.models, nil }

func (f *fake) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// embedFake is a fake that serves embeddings too.
type embedFake struct{ *fake }

func (e embedFake) Embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	if err := e.next(ctx, pluginapi.ChatRequest{Body: req.Body, Model: req.Model}); err != nil {
		return pluginapi.EmbedResponse{}, err
	}
	return pluginapi.EmbedResponse{Body: []byte(`{"from":"` + e.name + `"}`)}, nil
}

func status(code int, msg string) error {
	return &pluginapi.ProviderError{Status: code, Type: "upstream_error", Message: msg}
}

func rateLimited(after time.Duration) error {
	return &pluginapi.ProviderError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Message: "slow down", RetryAfter: after}
}

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// harness is a router over fakes, on a fake clock, whose waits move the
// clock and are noted.
type harness struct {
	r     *Router
	clock *fakeclock.Clock
	fakes map[string]*fake
	mu    sync.Mutex
	waits []time.Duration
}

func newHarness(t *testing.T, set *Set) *harness {
	t.Helper()
	h := &harness{clock: fakeclock.New(t0), fakes: map[string]*fake{}}
	for _, p := range set.Providers {
		if p.Impl == nil {
			f := &fake{name: p.Name, clock: h.clock}
			h.fakes[p.Name] = f
			p.Impl = f
		}
		if p.Fingerprint == "" {
			p.Fingerprint = p.Name
		}
	}
	h.r = NewRouter(set, h.clock.Now)
	h.r.UseTimers(h.clock.AfterFunc)
	h.r.sleep = func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		h.waits = append(h.waits, d)
		h.mu.Unlock()
		h.clock.Advance(d)
		return ctx.Err()
	}
	h.r.float64 = rand.New(rand.NewPCG(1, 2)).Float64
	return h
}

func (h *harness) script(name string, results ...error) *fake {
	f := h.fakes[name]
	f.script = results
	return f
}

func (h *harness) chat(t *testing.T, model string) (*Plan, pluginapi.ChatResponse, error) {
	t.Helper()
	p, err := h.r.Plan(model)
	require.NoError(t, err)
	res, err := h.r.Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{"model":"` + model + `"}`), Model: model})
	return p, res, err
}

func twoProviders(retries Retries, breaker BreakerConfig) *Set {
	return &Set{
		Providers: []*Provider{{Name: "a", Plugin: "openai", Weight: 1, Breaker: breaker}, {Name: "b", Plugin: "openai", Weight: 1, Breaker: breaker}},
		Retries:   retries,
	}
}

func outcomes(p *Plan) []string {
	var out []string
	for _, a := range p.Attempts {
		out = append(out, a.Provider+":"+a.Outcome)
	}
	return out
}

func TestOrderedFallbackAnswersFromTheNextProvider(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	h.script("a", status(503, "upstream error"))
	p, res, err := h.chat(t, "gpt-4o")
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"b"}`, string(res.Body))
	assert.Equal(t, "b", p.Answered)
	assert.Equal(t, []string{"a:error", "b:ok"}, outcomes(p))
	assert.Equal(t, 503, p.Attempts[0].Status)
	assert.Empty(t, p.Skipped)
	assert.Empty(t, h.waits, "a fallback to a provider not yet tried does not wait")
}

// An upstream that gave no answer (the connection refused or broken) is
// unavailable, with no status of its own, and the call goes on as for a 5xx.
func TestAnUnreachableUpstreamIsUnavailable(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	h.script("a", &pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: pluginapi.CodeUpstreamUnreachable,
		Message: "provider unreachable: connection refused"})
	p, res, err := h.chat(t, "gpt-4o")
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"b"}`, string(res.Body))
	assert.Equal(t, []string{"a:unavailable", "b:ok"}, outcomes(p))
	assert.Zero(t, p.Attempts[0].Status, "the upstream answered nothing")
	assert.Equal(t, "provider unreachable: connection refused", p.Attempts[0].Error)
	assert.Equal(t, int64(1), h.r.Status().Providers[0].Stats.Failures, "counted against the provider")
}

func TestRetriesReturnToTheFirstProviderWithBackoff(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}, BreakerConfig{}))
	h.script("a", status(502, "bad gateway"), nil)
	h.script("b", status(500, "boom"))
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:error", "b:error", "a:ok"}, outcomes(p))
	require.Len(t, h.waits, 1, "one wait, before the second attempt on a")
	assert.LessOrEqual(t, h.waits[0], 100*time.Millisecond, "full jitter below the first backoff")
	assert.Equal(t, ms(h.waits[0]), p.Attempts[2].WaitedMS)
}

func TestCallerFaultIsNeverRetried(t *testing.T) {
	for _, code := range []int{400, 413, 415, 422} {
		h := newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{Failures: 1, Cooldown: time.Minute}))
		refusal := status(code, "bad request")
		h.script("a", refusal)
		p, _, err := h.chat(t, "m")
		assert.Same(t, refusal, err, "the refusal comes back as it is")
		assert.Equal(t, []string{"a:refused"}, outcomes(p))
		assert.Zero(t, h.fakes["b"].callCount())
		assert.Equal(t, []Skipped{{Provider: "b", Reason: "not tried: a refused the request as the caller's fault"}}, p.Skipped)
		assert.Equal(t, BreakerClosed, h.r.Status().Providers[0].Breaker.State, "the caller's fault is not the provider's")
	}
}

// A request one provider cannot serve (a parameter it has no equivalent
// for) goes to the next, the first left well; when none serves it, the
// caller gets the refusal, not a provider failure.
func TestARequestOneProviderCannotServeGoesToTheNext(t *testing.T) {
	unsupported := func(msg string) error {
		return &pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Code: pluginapi.CodeUnsupported, Param: "n", Message: msg}
	}
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{Failures: 1, Cooldown: time.Minute}))
	h.script("a", unsupported("n > 1 is not supported by this provider"))
	p, res, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"b"}`, string(res.Body))
	assert.Equal(t, []string{"a:refused", "b:ok"}, outcomes(p))
	assert.Equal(t, BreakerClosed, h.r.Status().Providers[0].Breaker.State, "a is well")
	assert.Zero(t, h.r.Status().Providers[0].Stats.Failures)

	h = newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	h.script("a", unsupported("a"))
	last := unsupported("b")
	h.script("b", last)
	p, _, err = h.chat(t, "m")
	assert.Same(t, last, err, "the refusal, as the caller's to change")
	var ex *ExhaustedError
	assert.Equal(t, []string{"a:refused", "b:refused"}, outcomes(p), "each asked once")

	// b rate limited, skipped: the call is no refusal of the request.
	h = newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	h.script("a", unsupported("a"), unsupported("a"))
	h.script("b", rateLimited(time.Hour))
	_, _, err = h.chat(t, "m")
	require.Error(t, err)
	p, _, err = h.chat(t, "m")
	require.ErrorAs(t, err, &ex, "b may serve it once its limit ends")
	assert.Equal(t, []string{"a:refused"}, outcomes(p))
	assert.True(t, p.Attempts[0].Unsupported)
	require.Len(t, p.Skipped, 1)
	assert.Contains(t, p.Skipped[0].Reason, "rate limited until")

	h = newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	h.script("a", unsupported("a"))
	h.script("b", status(503, "down"))
	p, _, err = h.chat(t, "m")
	require.ErrorAs(t, err, &ex, "a provider that could serve it failed")
	assert.Equal(t, []string{"a:refused", "b:error", "b:error"}, outcomes(p))
}

func TestConfigurationRefusalFallsToTheNextProviderOnly(t *testing.T) {
	for _, code := range []int{401, 403, 404} {
		h := newHarness(t, twoProviders(Retries{MaxAttempts: 4}, BreakerConfig{}))
		h.script("a", status(code, "no"))
		h.script("b", status(503, "down"))
		p, _, err := h.chat(t, "m")
		var ex *ExhaustedError
		require.ErrorAs(t, err, &ex)
		assert.Equal(t, []string{"a:refused", "b:error", "b:error", "b:error"}, outcomes(p), "a is not asked again")
		assert.Equal(t, int64(1), h.r.Status().Providers[0].Stats.Failures, "counted as a failure")
	}
}

func TestRefusedKeyOrAccountFallsToTheNextProviderOnly(t *testing.T) {
	for _, code := range []string{pluginapi.CodeUpstreamAuthFailed, pluginapi.CodeUpstreamBilling} {
		h := newHarness(t, twoProviders(Retries{MaxAttempts: 4, Backoff: time.Millisecond}, BreakerConfig{}))
		h.script("a", &pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: code, Message: "key refused"})
		h.script("b", status(503, "down"))
		p, _, err := h.chat(t, "m")
		var ex *ExhaustedError
		require.ErrorAs(t, err, &ex, code)
		assert.Equal(t, []string{"a:refused", "b:error", "b:error", "b:error"}, outcomes(p), "%s: a is not asked again", code)
		assert.Equal(t, int64(1), h.r.Status().Providers[0].Stats.Failures, "%s: counted as a failure", code)
	}
}

func TestSingleSetMakesExactlyOneAttempt(t *testing.T) {
	f := &fake{name: "openai", script: []error{status(503, "down")}}
	r := NewRouter(Single("openai", "openai", f), nil)
	p, err := r.Plan("anything")
	require.NoError(t, err)
	assert.Equal(t, []Candidate{{Provider: "openai", Plugin: "openai", Model: "anything"}}, p.Candidates)
	_, err = r.Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "anything"})
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, err, &pe)
	var ex *ExhaustedError
	assert.False(t, errors.As(err, &ex), "one attempt: the error is today's, bare")
	assert.Equal(t, 1, f.callCount())
	assert.Len(t, p.Attempts, 1)
}

func TestRetryAfterIsWaitedAndMarksTheProvider(t *testing.T) {
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai"}},
		Retries: Retries{MaxAttempts: 3, Backoff: 10 * time.Millisecond, MaxBackoff: 2 * time.Second}}
	h := newHarness(t, set)
	h.script("a", rateLimited(time.Second), nil)
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:rate_limited", "a:ok"}, outcomes(p))
	assert.Equal(t, []time.Duration{time.Second}, h.waits, "the Retry-After, longer than the backoff")
	assert.Equal(t, int64(1000), p.Attempts[0].RetryAfterMS)
}

func TestALongRetryAfterSkipsTheProviderAndRateLimitsIt(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3, Backoff: 10 * time.Millisecond, MaxBackoff: 2 * time.Second}, BreakerConfig{}))
	h.script("a", rateLimited(time.Minute))
	h.script("b", status(503, "down"), nil)
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:rate_limited", "b:error", "b:ok"}, outcomes(p))
	require.Len(t, p.Skipped, 1)
	assert.Equal(t, "a", p.Skipped[0].Provider)
	assert.Contains(t, p.Skipped[0].Reason, "retry after 1m0s")

	// Every other call skips it until then.
	p, _, err = h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"b:ok"}, outcomes(p))
	until := t0.Add(time.Minute).Format(time.RFC3339)
	require.Len(t, p.Skipped, 1)
	assert.Equal(t, "rate limited until "+until, p.Skipped[0].Reason)
	assert.InDelta(t, time.Minute.Milliseconds(), p.Skipped[0].RetryAfterMS, 10, "less the backoff waited since")
	st := h.r.Status().Providers[0]
	require.NotNil(t, st.RateLimitedUntil)

	h.clock.Advance(time.Minute)
	h.script("a", nil)
	p, _, err = h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:ok"}, outcomes(p))
	assert.Nil(t, h.r.Status().Providers[0].RateLimitedUntil)
}

func TestAllRateLimitedIsExhaustedWithEveryAttempt(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{}))
	h.script("a", rateLimited(3*time.Second))
	h.script("b", rateLimited(2*time.Second))
	p, _, err := h.chat(t, "m")
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, []string{"a:rate_limited", "b:rate_limited"}, outcomes(p))
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, err, &pe, "Unwrap is the last error")
	assert.Equal(t, 2*time.Second, pe.RetryAfter)
}

func TestBreakerOpensProbesAndCloses(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{Failures: 2, Cooldown: 10 * time.Second}))
	h.script("a", status(500, "boom"))
	for range 2 {
		p, _, err := h.chat(t, "m")
		require.NoError(t, err)
		assert.Equal(t, []string{"a:error", "b:ok"}, outcomes(p))
	}
	st := h.r.Status().Providers[0]
	assert.Equal(t, BreakerOpen, st.Breaker.State)
	assert.Equal(t, 2, st.Breaker.ConsecutiveFailures)
	openUntil := t0.Add(10 * time.Second) // the clock did not move: the fakes take no time
	require.NotNil(t, st.Breaker.OpenUntil)
	assert.Equal(t, openUntil, *st.Breaker.OpenUntil)
	assert.Equal(t, "boom", st.LastError)

	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"b:ok"}, outcomes(p), "an open breaker takes a out of rotation")
	assert.Equal(t, []Skipped{{Provider: "a", Reason: "circuit breaker open until " + openUntil.Format(time.RFC3339)}}, p.Skipped)

	// After the cooldown, one probe; its failure opens the breaker again.
	h.clock.Advance(10 * time.Second)
	assert.Equal(t, BreakerHalfOpen, h.r.Status().Providers[0].Breaker.State)
	p, _, err = h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:error", "b:ok"}, outcomes(p))
	assert.Equal(t, BreakerOpen, h.r.Status().Providers[0].Breaker.State, "a failed probe opens it again")

	// The next probe succeeds: closed.
	h.clock.Advance(10 * time.Second)
	h.script("a", nil)
	p, _, err = h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:ok"}, outcomes(p))
	st = h.r.Status().Providers[0]
	assert.Equal(t, BreakerClosed, st.Breaker.State)
	assert.Zero(t, st.Breaker.ConsecutiveFailures)
	assert.Equal(t, int64(4), st.Stats.Attempts)
	assert.Equal(t, int64(3), st.Stats.Failures)
}

// A provider whose breaker its failure opened is skipped when the call
// comes back to it, without first waiting out its Retry-After or backoff.
func TestNoWaitForAProviderWhoseBreakerOpened(t *testing.T) {
	set := &Set{
		Providers: []*Provider{{Name: "a", Plugin: "openai", Breaker: BreakerConfig{Failures: 1, Cooldown: time.Minute}}, {Name: "b", Plugin: "openai"}},
		Retries:   Retries{MaxAttempts: 3, Backoff: 10 * time.Millisecond, MaxBackoff: 2 * time.Second},
	}
	h := newHarness(t, set)
	unavailable := func() error {
		return &pluginapi.ProviderError{Status: 503, Type: "upstream_error", Message: "down", RetryAfter: time.Second}
	}
	h.script("a", unavailable())
	h.script("b", unavailable(), nil)
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:error", "b:error", "b:ok"}, outcomes(p))
	assert.Equal(t, []time.Duration{time.Second}, h.waits, "b's Retry-After alone: none spent on a")
	assert.Equal(t, []Skipped{{Provider: "a", Reason: "circuit breaker open until " + t0.Add(time.Minute).Format(time.RFC3339)}}, p.Skipped)
	assert.Equal(t, 1, h.fakes["a"].callCount())
}

func TestHalfOpenBreakerLetsOneProbeAtATime(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{Failures: 1, Cooldown: time.Second}))
	h.script("a", status(500, "boom"))
	_, _, err := h.chat(t, "m")
	require.NoError(t, err)
	h.clock.Advance(time.Second)

	gate := make(chan struct{})
	a := h.script("a", nil)
	a.gate, a.gateAt = gate, 1 // the probe
	done := make(chan *Plan)
	go func() {
		p, _ := h.r.Plan("m")
		_, _ = h.r.Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
		done <- p
	}()
	require.Eventually(t, func() bool { return a.callCount() == 2 }, 5*time.Second, time.Millisecond, "the probe is in flight")
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"b:ok"}, outcomes(p))
	assert.Equal(t, "circuit breaker half open: a probe is in flight", p.Skipped[0].Reason)
	close(gate)
	probe := <-done
	assert.Equal(t, []string{"a:ok"}, outcomes(probe))
	assert.Equal(t, BreakerClosed, h.r.Status().Providers[0].Breaker.State)
}

func TestSwapKeepsBreakerStateOfAnUnchangedProvider(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{Failures: 1, Cooldown: time.Minute}))
	h.script("a", status(500, "boom"))
	_, _, err := h.chat(t, "m")
	require.NoError(t, err)
	require.Equal(t, BreakerOpen, h.r.Status().Providers[0].Breaker.State)

	old := h.r.Current()
	same := &Set{Providers: []*Provider{
		{Name: "a", Plugin: "openai", Impl: h.fakes["a"], Fingerprint: "a", Breaker: old.Providers[0].Breaker},
		{Name: "b", Plugin: "openai", Impl: h.fakes["b"], Fingerprint: "b-changed"}}, Retries: old.Retries}
	h.r.Swap(same)
	st := h.r.Status()
	assert.Equal(t, BreakerOpen, st.Providers[0].Breaker.State, "same name and fingerprint: same breaker")
	assert.Equal(t, int64(1), st.Providers[0].Stats.Attempts)
	assert.Zero(t, st.Providers[1].Stats.Attempts, "a changed provider starts afresh")

	changed := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai", Impl: h.fakes["a"], Fingerprint: "a2",
		Breaker: old.Providers[0].Breaker}}, Retries: old.Retries}
	h.r.Swap(changed)
	assert.Equal(t, BreakerClosed, h.r.Status().Providers[0].Breaker.State)
}

func TestStreamFallsBackBeforeItsFirstChunk(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{}))
	h.script("a", status(503, "down"))
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	var got []string
	err = h.r.StreamChat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"}, func(ch pluginapi.ChatChunk) error {
		got = append(got, string(ch.Data))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{`{"from":"b","n":1}`, `{"from":"b","n":2}`}, got)
	assert.Equal(t, []string{"a:error", "b:ok"}, outcomes(p))
}

func TestStreamBegunIsNeverReplayed(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	cut := status(502, "cut")
	h.fakes["a"].midStream = cut
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	var got int
	err = h.r.StreamChat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"}, func(pluginapi.ChatChunk) error {
		got++
		return nil
	})
	assert.Same(t, cut, err, "the error as it is")
	assert.Equal(t, 1, got)
	assert.Zero(t, h.fakes["b"].callCount())
	assert.Equal(t, []string{"a:error"}, outcomes(p))
	assert.Equal(t, []Skipped{{Provider: "b", Reason: ReasonStreamBegun}}, p.Skipped, "the alternative not tried, and why")
}

func TestStreamTimeoutCoversOnlyTheFirstChunk(t *testing.T) {
	set := twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{})
	set.Providers[0].Timeout = 50 * time.Millisecond
	h := newHarness(t, set)
	h.script("a", errHang).took = 50 * time.Millisecond // the fake clock reaches the timeout as a waits
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	var got []string
	err = h.r.StreamChat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"}, func(ch pluginapi.ChatChunk) error {
		got = append(got, string(ch.Data))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a:timeout", "b:ok"}, outcomes(p))
	assert.Equal(t, "timed out after 50ms", p.Attempts[0].Error)

	// Once a chunk came, the timeout no longer applies.
	set = twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{})
	set.Providers[0].Timeout = time.Millisecond
	h = newHarness(t, set)
	p, err = h.r.Plan("m")
	require.NoError(t, err)
	err = h.r.StreamChat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"}, func(ch pluginapi.ChatChunk) error {
		if strings.Contains(string(ch.Data), `"n":1`) {
			h.clock.Advance(20 * time.Millisecond) // the client is slow: longer than the timeout
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a:ok"}, outcomes(p))
}

// The provider has the instance's timeout too: when its timer ends the call
// before svc's, the attempt is the same timeout, told the same way.
func TestProvidersOwnTimeoutIsTheAttemptsTimeout(t *testing.T) {
	own := &pluginapi.ProviderError{Status: http.StatusBadGateway, Type: "upstream_error", Code: pluginapi.CodeTimeout,
		Message: "provider timed out after 50ms"}
	set := twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{})
	set.Providers[0].Timeout = 50 * time.Millisecond
	h := newHarness(t, set)
	h.script("a", own).took = 50 * time.Millisecond
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:timeout", "b:ok"}, outcomes(p))
	assert.Equal(t, Attempt{Provider: "a", Model: "m", Outcome: OutcomeTimeout, LatencyMS: 50, Error: "timed out after 50ms"}, p.Attempts[0])

	// A provider's own timeout, shorter than the instance's, is a timeout
	// in its words.
	set = twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{})
	set.Providers[0].Timeout = time.Minute
	h = newHarness(t, set)
	h.script("a", own).took = 50 * time.Millisecond
	p, _, err = h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:timeout", "b:ok"}, outcomes(p))
	assert.Equal(t, "provider timed out after 50ms", p.Attempts[0].Error)
	assert.Equal(t, http.StatusBadGateway, p.Attempts[0].Status)
}

func TestCancellationStopsAtOnce(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{Failures: 1, Cooldown: time.Minute}))
	h.script("a", errHang)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	go func() {
		require.Eventually(t, func() bool { return h.fakes["a"].callCount() == 1 }, 5*time.Second, time.Millisecond)
		cancel()
	}()
	_, err = h.r.Chat(ctx, p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"a:cancelled"}, outcomes(p))
	assert.Zero(t, h.fakes["b"].callCount())
	assert.Equal(t, []Skipped{{Provider: "b", Reason: ReasonClientLeft}}, p.Skipped)
	assert.Equal(t, BreakerClosed, h.r.Status().Providers[0].Breaker.State, "the client leaving is no failure")

	// Cancelled while waiting to retry: no further attempt.
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai"}}, Retries: Retries{MaxAttempts: 3, Backoff: time.Second, MaxBackoff: time.Second}}
	h = newHarness(t, set)
	h.script("a", status(503, "down"))
	ctx, cancel = context.WithCancel(context.Background())
	h.r.sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	p, err = h.r.Plan("m")
	require.NoError(t, err)
	_, err = h.r.Chat(ctx, p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, h.fakes["a"].callCount())
}

func TestExhaustedErrorNamesEveryAttempt(t *testing.T) {
	set := twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{})
	set.Providers[0].Name, set.Providers[1].Name = "openai-a", "openai-b"
	set.Providers[1].Timeout = 2 * time.Millisecond
	h := newHarness(t, set)
	h.script("openai-a", status(503, "upstream error")).took = 12 * time.Millisecond
	h.script("openai-b", errHang).took = 2 * time.Millisecond
	p, _, err := h.chat(t, "m")
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, "all providers failed: openai-a: 503 upstream error (12 ms); openai-b: timed out after 2ms", err.Error())
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Unwrap is the last attempt's error")
	assert.Equal(t, p.Attempts, ex.Attempts)
}

func TestNoProviderAvailableMakesNoAttempt(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{}))
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	p.Forbid("a", "forbidden by policy rule r1")
	p.Forbid("b", "forbidden by policy rule r2")
	_, err = h.r.Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, "no provider available: a: forbidden by policy rule r1; b: forbidden by policy rule r2", err.Error())
	assert.Empty(t, p.Attempts)
	assert.Zero(t, h.fakes["a"].callCount()+h.fakes["b"].callCount())
}

// The providers that were never the call's candidates are listed in its
// plan, not in the failure it answers with.
func TestExhaustedErrorLeavesOutWhoWasNoCandidate(t *testing.T) {
	set := twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{})
	set.Providers = append(set.Providers, &Provider{Name: "c", Plugin: "openai", Models: []string{"other"}})
	set.Routes = []Route{{Model: "m", Targets: []Target{{Provider: "a"}}}}
	h := newHarness(t, set)
	h.script("a", status(503, "down"), status(503, "down"))
	p, _, err := h.chat(t, "m")
	require.Error(t, err)
	assert.Equal(t, []Skipped{{Provider: "b", Reason: ReasonNotRouted}, {Provider: "c", Reason: ReasonNotServed}}, p.Skipped)
	assert.NotContains(t, err.Error(), "b:")
	assert.NotContains(t, err.Error(), "c:")
	assert.Zero(t, h.fakes["b"].callCount())
}

func TestForbiddenCandidateIsSkipped(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{}))
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	p.Forbid("a", "forbidden by policy rule r1")
	_, err = h.r.Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
	require.NoError(t, err)
	assert.Equal(t, []string{"b:ok"}, outcomes(p))
	assert.Equal(t, []Skipped{{Provider: "a", Reason: "forbidden by policy rule r1"}}, p.Skipped)

	// A call that stops at the first answer still names the forbidden
	// candidate after it by its own reason.
	h = newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{}))
	h.script("a", status(400, "bad request"))
	p, err = h.r.Plan("m")
	require.NoError(t, err)
	p.Forbid("b", "forbidden by policy rule r2")
	_, err = h.r.Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
	require.Error(t, err)
	assert.Equal(t, []Skipped{{Provider: "b", Reason: "forbidden by policy rule r2"}}, p.Skipped)
}

func TestAttemptsExhaustedLeaveTheRestSkipped(t *testing.T) {
	set := twoProviders(Retries{MaxAttempts: 1}, BreakerConfig{})
	h := newHarness(t, set)
	h.script("a", status(503, "down"))
	p, _, err := h.chat(t, "m")
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex, "two candidates: exhausted, not bare")
	assert.Equal(t, []Skipped{{Provider: "b", Reason: ReasonExhausted}}, p.Skipped)
	assert.Equal(t, "all providers failed: a: 503 down (0 ms); b: attempts exhausted", err.Error())
}

func TestWeightedRouteSpreadsByWeight(t *testing.T) {
	set := &Set{
		Providers: []*Provider{{Name: "a", Plugin: "mock", Weight: 1}, {Name: "b", Plugin: "mock", Weight: 1}, {Name: "c", Plugin: "mock", Weight: 1}},
		Routes:    []Route{{Model: "fast", Strategy: Weighted, Targets: []Target{{Provider: "a", Weight: 1}, {Provider: "b", Weight: 3}, {Provider: "c"}}}},
		Retries:   Retries{MaxAttempts: 3},
	}
	set.Providers[2].Weight = 6
	h := newHarness(t, set)
	const n = 20000
	first := map[string]int{}
	second := map[string]int{}
	for range n {
		p, err := h.r.Plan("fast")
		require.NoError(t, err)
		require.Len(t, p.Candidates, 3)
		first[p.Candidates[0].Provider]++
		second[p.Candidates[1].Provider]++
	}
	assert.InDelta(t, 0.1, float64(first["a"])/n, 0.02)
	assert.InDelta(t, 0.3, float64(first["b"])/n, 0.02)
	assert.InDelta(t, 0.6, float64(first["c"])/n, 0.02)
	// Second place, given c first (60%): b 3/4, a 1/4; given b first: c 6/7.
	wantB := 0.6*0.75 + 0.1*(3.0/9)
	assert.InDelta(t, wantB, float64(second["b"])/n, 0.02)
}

func TestWeightedRouteSkipsAnOpenBreaker(t *testing.T) {
	set := &Set{
		Providers: []*Provider{{Name: "a", Plugin: "mock", Weight: 1, Breaker: BreakerConfig{Failures: 1, Cooldown: time.Hour}},
			{Name: "b", Plugin: "mock", Weight: 9, Breaker: BreakerConfig{Failures: 1, Cooldown: time.Hour}}},
		Routes:  []Route{{Model: "fast", Strategy: Weighted, Targets: []Target{{Provider: "a"}, {Provider: "b"}}}},
		Retries: Retries{MaxAttempts: 2},
	}
	h := newHarness(t, set)
	h.script("b", status(500, "boom"))
	for {
		p, _, err := h.chat(t, "fast")
		require.NoError(t, err)
		if len(p.Attempts) == 2 {
			break // b was picked first, and failed: its breaker is open
		}
	}
	skipped := 0
	for range 50 {
		p, _, err := h.chat(t, "fast")
		require.NoError(t, err)
		assert.Equal(t, []string{"a:ok"}, outcomes(p), "b is out of rotation")
		if len(p.Skipped) > 0 { // b came first in the plan
			skipped++
			assert.Equal(t, "b", p.Skipped[0].Provider)
			assert.Contains(t, p.Skipped[0].Reason, "circuit breaker open until")
		}
	}
	assert.Greater(t, skipped, 30, "b, the heavier, is mostly drawn first and skipped")
}

func TestPlanRoutesModels(t *testing.T) {
	set := &Set{
		Providers: []*Provider{
			{Name: "openai", Plugin: "openai", Models: []string{"gpt-4o*", "gpt-4.1-mini"}},
			{Name: "groq", Plugin: "openai", Models: []string{"llama-*"}},
			{Name: "local", Plugin: "openai", Models: []string{"llama-3.1-8b", "llama-3.2-1b", "qwen?"}},
		},
		Routes: []Route{
			{Model: "fast", Targets: []Target{{Provider: "groq", Model: "llama-3.1-8b-instant"}, {Provider: "openai", Model: "gpt-4o-mini"}}},
			{Model: "llama-*", Targets: []Target{{Provider: "local"}, {Provider: "groq"}}},
			{Model: "llama-3.1-8b", Targets: []Target{{Provider: "groq"}}}, // an exact route wins over an earlier glob
		},
	}
	h := newHarness(t, set)
	cases := []struct {
		model, route string
		cands        []string // provider=model
		notServed    []string // provider, or "provider (not routed)"
	}{
		{"fast", "fast", []string{"groq=llama-3.1-8b-instant", "openai=gpt-4o-mini"}, []string{"local"}},
		{"llama-3.1-8b", "llama-3.1-8b", []string{"groq=llama-3.1-8b"}, []string{"openai", "local (not routed)"}},
		{"llama-3.2-1b", "llama-*", []string{"local=llama-3.2-1b", "groq=llama-3.2-1b"}, []string{"openai"}},
		// A glob route's target without a model of its own gets the
		// model as the caller named it, which it need not serve.
		{"llama-3.3-70b", "llama-*", []string{"groq=llama-3.3-70b"}, []string{"openai", "local"}},
		{"gpt-4o-2024-08-06", "", []string{"openai=gpt-4o-2024-08-06"}, []string{"groq", "local"}},
		{"gpt-4.1-mini", "", []string{"openai=gpt-4.1-mini"}, []string{"groq", "local"}},
		{"qwen3", "", []string{"local=qwen3"}, []string{"openai", "groq"}},
	}
	for _, tc := range cases {
		for range 2 { // planned, then cached
			p, err := h.r.Plan(tc.model)
			require.NoError(t, err, tc.model)
			assert.Equal(t, tc.route, p.Route, tc.model)
			var cands, notServed []string
			for _, c := range p.Candidates {
				cands = append(cands, c.Provider+"="+c.Model)
			}
			for _, s := range p.Skipped {
				switch s.Reason {
				case ReasonNotServed:
					notServed = append(notServed, s.Provider)
				case ReasonNotRouted: // it serves the model, but the route sends the call elsewhere
					notServed = append(notServed, s.Provider+" (not routed)")
				default:
					t.Errorf("%s: %s skipped: %s", tc.model, s.Provider, s.Reason)
				}
			}
			assert.Equal(t, tc.cands, cands, tc.model)
			assert.Equal(t, tc.notServed, notServed, tc.model)
		}
	}
	_, err := h.r.Plan("claude-3")
	assert.True(t, errs.Is(err, errs.NotFound))
	assert.Equal(t, "model_not_found", errs.Code(err))
	assert.Equal(t, "no provider serves model claude-3", errs.Public(err))
}

func FuzzPlan(f *testing.F) {
	for _, m := range []string{"gpt-4o", "llama-3", "fast", "", "[", "a*b", "x\\"} {
		f.Add(m)
	}
	set := &Set{
		Providers: []*Provider{{Name: "a", Plugin: "openai", Models: []string{"gpt-*", "o[1-3]"}}, {Name: "b", Plugin: "openai", Models: []string{"llama-?"}}},
		Routes:    []Route{{Model: "fast", Strategy: Weighted, Targets: []Target{{Provider: "a", Model: "gpt-4o-mini"}, {Provider: "b", Model: "llama-3"}}}, {Model: "l*", Targets: []Target{{Provider: "b"}}}},
	}
	for _, p := range set.Providers {
		p.Impl = &fake{name: p.Name}
	}
	r := NewRouter(set, nil)
	f.Fuzz(func(t *testing.T, model string) {
		p, err := r.Plan(model)
		if err != nil {
			require.True(t, errs.Is(err, errs.NotFound))
			return
		}
		require.NotEmpty(t, p.Candidates)
		for _, c := range p.Candidates {
			if p.Route == "" {
				require.Equal(t, model, c.Model)
				i := r.state.Load().byName[c.Provider]
				require.True(t, set.Providers[i].Serves(model))
			}
		}
	})
}

func TestPlanCacheIsBounded(t *testing.T) {
	set := twoProviders(Retries{MaxAttempts: 1}, BreakerConfig{})
	h := newHarness(t, set)
	for i := range maxCachedModels + 10 {
		_, err := h.r.Plan("model-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26))
		require.NoError(t, err)
	}
	st := h.r.state.Load()
	st.mu.RLock()
	defer st.mu.RUnlock()
	assert.LessOrEqual(t, len(st.seen), maxCachedModels)
}

func TestBodyModelIsRewrittenOnlyWhereTheUpstreamDiffers(t *testing.T) {
	set := &Set{Providers: []*Provider{{Name: "groq", Plugin: "openai"}, {Name: "openai", Plugin: "openai"}},
		Routes:  []Route{{Model: "fast", Targets: []Target{{Provider: "groq", Model: "llama-3.1-8b-instant"}, {Provider: "openai", Model: "fast"}}}},
		Retries: Retries{MaxAttempts: 2}}
	h := newHarness(t, set)
	h.script("groq", status(503, "down"))
	body := []byte(`{ "messages": [{"role":"user","content":"\"model\": x"}], "model" : "fast", "n": 1 }`)
	p, err := h.r.Plan("fast")
	require.NoError(t, err)
	_, err = h.r.Chat(context.Background(), p, pluginapi.ChatRequest{Body: body, Model: "fast"})
	require.NoError(t, err)
	groq := h.fakes["groq"].calls[0]
	assert.Equal(t, `{ "messages": [{"role":"user","content":"\"model\": x"}], "model" : "llama-3.1-8b-instant", "n": 1 }`, string(groq.Body))
	assert.Equal(t, "llama-3.1-8b-instant", groq.Model)
	openai := h.fakes["openai"].calls[0]
	assert.Same(t, &body[0], &openai.Body[0], "the same model: the body untouched")
}

func TestEmbedSkipsAProviderWithoutEmbeddings(t *testing.T) {
	set := twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{})
	h := newHarness(t, set)
	set.Providers[1].Impl = embedFake{h.fakes["b"]}
	p, err := h.r.Plan("text-embedding-3-small")
	require.NoError(t, err)
	res, err := h.r.Embed(context.Background(), p, pluginapi.EmbedRequest{Body: []byte(`{}`), Model: "text-embedding-3-small"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"b"}`, string(res.Body))
	assert.Equal(t, []Skipped{{Provider: "a", Reason: ReasonNoEmbeddings}}, p.Skipped)

	// No provider with embeddings: today's 404, bare.
	r := NewRouter(Single("openai", "openai", &fake{name: "openai"}), nil)
	p, err = r.Plan("e")
	require.NoError(t, err)
	_, err = r.Embed(context.Background(), p, pluginapi.EmbedRequest{Body: []byte(`{}`), Model: "e"})
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 404, pe.Status)
}

func TestModelsUnitesProvidersAndRoutes(t *testing.T) {
	set := &Set{
		Providers: []*Provider{
			{Name: "a", Plugin: "openai", Models: []string{"gpt-*"}, Impl: &fake{models: []pluginapi.Model{{ID: "gpt-4o", OwnedBy: "openai"}, {ID: "dall-e", OwnedBy: "openai"}}}},
			{Name: "b", Plugin: "openai", Impl: &fake{models: []pluginapi.Model{{ID: "gpt-4o", OwnedBy: "other"}, {ID: "llama", OwnedBy: "meta"}}}},
		},
		Routes: []Route{{Model: "fast", Targets: []Target{{Provider: "b"}}}, {Model: "l*", Targets: []Target{{Provider: "b"}}}},
	}
	r := NewRouter(set, nil)
	models, err := r.Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []pluginapi.Model{{ID: "gpt-4o", OwnedBy: "openai"}, {ID: "llama", OwnedBy: "meta"},
		{ID: "fast", OwnedBy: "svc", Kind: pluginapi.KindChat}}, models)
}

// unlisted is a fake whose model list fails with err.
type unlisted struct {
	*fake
	err error
}

func (u unlisted) Models(context.Context) ([]pluginapi.Model, error) { return nil, u.err }

// A provider whose list fails is left out of the list; when every one
// fails, the list is a provider failure, even when a provider's own words
// were a 404 model_not_found about its listing.
func TestModelsWhenListingsFail(t *testing.T) {
	notFound := &pluginapi.ProviderError{Status: 404, Type: "invalid_request_error", Code: "model_not_found", Message: "no /models here"}
	ok := &fake{models: []pluginapi.Model{{ID: "gpt-4o", OwnedBy: "openai"}}}
	r := NewRouter(&Set{Providers: []*Provider{
		{Name: "a", Plugin: "openai", Impl: unlisted{&fake{}, notFound}},
		{Name: "b", Plugin: "openai", Impl: ok},
	}}, nil)
	models, err := r.Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []pluginapi.Model{{ID: "gpt-4o", OwnedBy: "openai"}}, models)

	r = NewRouter(&Set{Providers: []*Provider{{Name: "a", Plugin: "openai", Impl: unlisted{&fake{}, notFound}}}}, nil)
	_, err = r.Models(context.Background())
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 502, pe.Status)
	assert.Empty(t, pe.Code, "not the caller's model_not_found")
	assert.Contains(t, pe.Message, "no /models here")

	down := &pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: pluginapi.CodeUpstreamUnreachable, Message: "refused"}
	r = NewRouter(&Set{Providers: []*Provider{{Name: "a", Plugin: "openai", Impl: unlisted{&fake{}, down}}}}, nil)
	_, err = r.Models(context.Background())
	assert.Equal(t, down, err, "a provider failure stays as it was")
}

// An alias answers what its targets' models answer: an alias of an
// embedding model is listed as one.
func TestModelsListsARouteByWhatItsTargetsAnswer(t *testing.T) {
	set := &Set{
		Providers: []*Provider{
			{Name: "a", Plugin: "anthropic", Impl: &fake{models: []pluginapi.Model{{ID: "claude", Kind: pluginapi.KindChat}}}},
			{Name: "b", Plugin: "openai", Impl: &fake{models: []pluginapi.Model{{ID: "text-embedding-3-small", Kind: pluginapi.KindEmbedding}}}},
		},
		Routes: []Route{
			{Model: "vectors", Targets: []Target{{Provider: "a", Model: "unlisted"}, {Provider: "b", Model: "text-embedding-3-small"}}},
			{Model: "smart", Targets: []Target{{Provider: "a", Model: "claude"}}},
			{Model: "unknown", Targets: []Target{{Provider: "a"}}},
		},
	}
	models, err := NewRouter(set, nil).Models(context.Background())
	require.NoError(t, err)
	kinds := map[string]string{}
	for _, m := range models {
		kinds[m.ID] = m.Kind
	}
	assert.Equal(t, map[string]string{"claude": "chat", "text-embedding-3-small": "embedding",
		"vectors": "embedding", "smart": "chat", "unknown": "chat"}, kinds)
}

func TestCostPricesTheAnsweringProvider(t *testing.T) {
	table := pricing.New(map[string]pricing.Price{"gpt-4o": {Input: 2.5, Output: 10}, "fast": {Input: 1, Output: 1}})
	own := pricing.New(map[string]pricing.Price{"gpt-4o": {Input: 2, Output: 8}})
	set := &Set{Providers: []*Provider{{Name: "azure", Plugin: "openai", Prices: own}, {Name: "openai", Plugin: "openai"}, {Name: "local", Plugin: "openai"}},
		Routes:  []Route{{Model: "fast", Targets: []Target{{Provider: "azure", Model: "gpt-4o"}, {Provider: "openai", Model: "gpt-4o"}, {Provider: "local", Model: "qwen"}}}},
		Retries: Retries{MaxAttempts: 3}}
	h := newHarness(t, set)
	h.r.SetPrices(table)

	p, _, err := h.chat(t, "fast")
	require.NoError(t, err)
	usd, known := h.r.Cost(p, pricing.Tokens{Prompt: 1e6, Completion: 1e6})
	assert.True(t, known)
	assert.InDelta(t, 10.0, usd, 1e-9, "azure's own price")

	h.script("azure", status(503, "down"))
	p, _, err = h.chat(t, "fast")
	require.NoError(t, err)
	usd, _ = h.r.Cost(p, pricing.Tokens{Prompt: 1e6, Completion: 1e6})
	assert.InDelta(t, 12.5, usd, 1e-9, "the table's price for the upstream model")

	h.script("openai", status(503, "down"))
	p, _, err = h.chat(t, "fast")
	require.NoError(t, err)
	usd, known = h.r.Cost(p, pricing.Tokens{Prompt: 1e6, Completion: 1e6})
	assert.True(t, known)
	assert.InDelta(t, 2.0, usd, 1e-9, "qwen has no price: the caller's model's")
}

func TestStatusShowsTheSetAndTheLoad(t *testing.T) {
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai", BaseURL: "http://x/v1", Weight: 2, Timeout: time.Second,
		Breaker: BreakerConfig{Failures: 3, Cooldown: time.Minute}}},
		Routes:  []Route{{Model: "fast", Targets: []Target{{Provider: "a", Model: "m"}}}},
		Retries: Retries{MaxAttempts: 3, Backoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second}, Source: "/etc/svc/providers.yaml"}
	h := newHarness(t, set)
	st := h.r.Status()
	assert.True(t, st.OK)
	assert.Equal(t, "/etc/svc/providers.yaml", st.Source)
	assert.Equal(t, RetriesStatus{MaxAttempts: 3, BackoffMS: 100, MaxBackoffMS: 2000}, st.Retries)
	assert.Equal(t, ProviderStatus{Name: "a", Plugin: "openai", Mode: ModePlugin, BaseURL: "http://x/v1", Models: []string{}, Weight: 2, TimeoutMS: 1000,
		Breaker: BreakerStatus{State: BreakerClosed, Failures: 3, CooldownMS: 60000}}, st.Providers[0])
	assert.Equal(t, []RouteStatus{{Model: "fast", Strategy: Ordered, Targets: []TargetStatus{{Provider: "a", Model: "m", Weight: 2}}}}, st.Routes)

	assert.Nil(t, st.FailedAt)

	h.r.SetLoadStatus("/etc/svc/providers.yaml", t0, nil)
	h.r.SetLoadStatus("/etc/svc/providers.yaml", t0.Add(time.Hour), errors.New("providers[0]: bad"))
	st = h.r.Status()
	assert.False(t, st.OK)
	assert.Equal(t, "providers[0]: bad", st.Error)
	assert.Equal(t, t0, st.LoadedAt, "the set serving was read before the refused reload")
	require.NotNil(t, st.FailedAt)
	assert.Equal(t, t0.Add(time.Hour), *st.FailedAt)
	assert.Equal(t, "a", st.Providers[0].Name, "the last good set serves")

	h.r.SetLoadStatus("/etc/svc/providers.yaml", t0.Add(2*time.Hour), nil)
	st = h.r.Status()
	assert.True(t, st.OK)
	assert.Equal(t, t0.Add(2*time.Hour), st.LoadedAt)
	assert.Nil(t, st.FailedAt)
}

func TestRouterIsSafeForConcurrentUse(t *testing.T) {
	set := twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{Failures: 2, Cooldown: time.Millisecond})
	set.Providers[0].Impl = &fake{name: "a", script: []error{status(500, "x"), nil, rateLimited(time.Millisecond), nil}}
	set.Providers[1].Impl = &fake{name: "b"}
	r := NewRouter(set, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p, err := r.Plan("m")
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = r.Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
				if i%50 == 0 {
					_ = r.Status()
					if g == 0 {
						r.Swap(set)
					}
				}
			}
		}()
	}
	wg.Wait()
	st := r.Status()
	assert.Equal(t, int64(1600), st.Providers[0].Stats.Attempts+st.Providers[1].Stats.Attempts-st.Providers[0].Stats.Failures-st.Providers[1].Stats.Failures)
}

func BenchmarkPlanSingle(b *testing.B) {
	r := NewRouter(Single("openai", "openai", &fake{name: "openai"}), nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Plan("gpt-4o-mini"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChatSingle(b *testing.B) {
	f := &nopProvider{}
	r := NewRouter(Single("openai", "openai", f), nil)
	req := pluginapi.ChatRequest{Body: []byte(`{"model":"gpt-4o-mini"}`), Model: "gpt-4o-mini"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := r.Plan(req.Model)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Chat(ctx, p, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatFromAFile is one provider as a providers file declares it:
// a timeout, a breaker, three attempts.
func BenchmarkChatFromAFile(b *testing.B) {
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai", Impl: &nopProvider{}, Timeout: DefaultTimeout,
		Breaker: BreakerConfig{Failures: 5, Cooldown: time.Second}, Fingerprint: "a"}}, Retries: Retries{MaxAttempts: 3}}
	benchmarkChat(b, set)
}

// BenchmarkChatTwoOrdered is two providers in order, the first answering.
func BenchmarkChatTwoOrdered(b *testing.B) {
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai", Impl: &nopProvider{}, Timeout: DefaultTimeout, Fingerprint: "a"},
		{Name: "b", Plugin: "openai", Impl: &nopProvider{}, Timeout: DefaultTimeout, Fingerprint: "b"}}, Retries: Retries{MaxAttempts: 3}}
	benchmarkChat(b, set)
}

func benchmarkChat(b *testing.B, set *Set) {
	r := NewRouter(set, nil)
	req := pluginapi.ChatRequest{Body: []byte(`{"model":"gpt-4o-mini"}`), Model: "gpt-4o-mini"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := r.Plan(req.Model)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Chat(ctx, p, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatDirect is the floor BenchmarkChatSingle is measured against.
func BenchmarkChatDirect(b *testing.B) {
	f := &nopProvider{}
	req := pluginapi.ChatRequest{Body: []byte(`{"model":"gpt-4o-mini"}`), Model: "gpt-4o-mini"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Chat(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// nopProvider answers at once, without allocating.
type nopProvider struct{}

var nopBody = []byte(`{}`)

func (nopProvider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	return pluginapi.ChatResponse{Body: nopBody}, nil
}

func (nopProvider) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}

func (nopProvider) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

func TestTheCallsDeadlineEndsItWithItsAttemptsTold(t *testing.T) {
	h := newHarness(t, twoProviders(Retries{MaxAttempts: 3}, BreakerConfig{}))
	h.script("a", status(503, "down"))
	h.script("b", errHang)
	ctx := &deadlineCtx{Context: context.Background(), at: t0.Add(time.Hour), done: make(chan struct{})}
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	go func() {
		// b hangs until the call's deadline passes, which the test decides.
		assert.Eventually(t, func() bool { return h.fakes["b"].callCount() == 1 }, 10*time.Second, time.Millisecond)
		close(ctx.done)
	}()
	_, err = h.r.Chat(ctx, p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, []string{"a:error", "b:timeout"}, outcomes(p), "no third attempt: no time is left")
	assert.Contains(t, err.Error(), "b: timed out: the call's deadline passed")
	assert.Equal(t, BreakerClosed, h.r.Status().Providers[1].Breaker.State)
}

func TestARateLimitKeepsOutOnlyACallWithAnotherProvider(t *testing.T) {
	// One provider: each call asks it, as without a router.
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai"}}, Retries: Retries{MaxAttempts: 1}}
	h := newHarness(t, set)
	h.script("a", rateLimited(time.Minute), nil)
	_, _, err := h.chat(t, "m")
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, err, &pe)
	p, _, err := h.chat(t, "m")
	require.NoError(t, err)
	assert.Equal(t, []string{"a:ok"}, outcomes(p))

	// Two, both limited: neither is asked, and the skips say how long is left.
	h = newHarness(t, twoProviders(Retries{MaxAttempts: 2}, BreakerConfig{}))
	h.script("a", rateLimited(time.Minute))
	h.script("b", rateLimited(10*time.Second))
	_, _, err = h.chat(t, "m")
	require.Error(t, err)
	h.clock.Advance(4 * time.Second)
	p, _, err = h.chat(t, "m")
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Empty(t, p.Attempts)
	assert.Equal(t, []int64{56000, 6000}, []int64{p.Skipped[0].RetryAfterMS, p.Skipped[1].RetryAfterMS})
	assert.Equal(t, 2, h.fakes["a"].callCount()+h.fakes["b"].callCount())
}

// deadlineCtx is a call's context whose deadline passes when the test
// closes done, whatever the time.
type deadlineCtx struct {
	context.Context
	at   time.Time
	done chan struct{}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestADowngradeOnOneProviderIsPricedByTheModelThatAnswered(t *testing.T) {
	set := &Set{Providers: []*Provider{{Name: "openai", Plugin: "openai"}},
		Routes:  []Route{{Model: "smart", Strategy: Ordered, Targets: []Target{{Provider: "openai", Model: "gpt-4o"}, {Provider: "openai", Model: "gpt-4o-mini"}}}},
		Retries: Retries{MaxAttempts: 2}}
	h := newHarness(t, set)
	h.r.SetPrices(pricing.New(map[string]pricing.Price{"gpt-4o": {Input: 10, Output: 10}, "gpt-4o-mini": {Input: 1, Output: 1}}))
	h.script("openai", status(503, "down"), nil)
	p, _, err := h.chat(t, "smart")
	require.NoError(t, err)
	assert.Equal(t, []string{"openai:error", "openai:ok"}, outcomes(p))
	assert.Equal(t, "gpt-4o-mini", p.Attempts[1].Model)
	usd, known := h.r.Cost(p, pricing.Tokens{Prompt: 1_000_000, Completion: 0})
	assert.True(t, known)
	assert.InDelta(t, 1.0, usd, 1e-9, "gpt-4o-mini's price, not gpt-4o's")
}

// hangingModels is a provider whose model list never comes: it answers
// only when its call's context ends.
type hangingModels struct{ fake }

func (h *hangingModels) Models(ctx context.Context) ([]pluginapi.Model, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A provider whose list hangs costs the list its own timeout; the others'
// models are listed.
func TestModelsBoundsEachProviderByItsTimeout(t *testing.T) {
	r := NewRouter(&Set{Retries: Retries{MaxAttempts: 1}, Providers: []*Provider{
		{Name: "stuck", Plugin: "openai", Timeout: time.Millisecond, Impl: &hangingModels{}},
		{Name: "b", Plugin: "openai", Impl: &fake{models: []pluginapi.Model{{ID: "gpt-4o", OwnedBy: "openai"}}}},
	}}, nil)
	models, err := r.Models(context.Background())
	require.NoError(t, err)
	require.Len(t, models, 1)
	assert.Equal(t, "gpt-4o", models[0].ID)
}

// gatedModels is a provider whose model list comes once released, and
// that counts how often it was asked.
type gatedModels struct {
	fake
	asked   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gatedModels) Models(ctx context.Context) ([]pluginapi.Model, error) {
	if g.asked.Add(1) == 1 {
		close(g.entered)
	}
	select {
	case <-g.release:
		return []pluginapi.Model{{ID: "gpt-4o", OwnedBy: "openai"}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Calls at once share one listing: one that comes while another waits
// joins it rather than asking the providers again, and one that leaves
// does not end it for the others. A call after it lists anew, and each
// caller has a list of its own.
func TestModelsAtOnceShareOneListing(t *testing.T) {
	g := &gatedModels{entered: make(chan struct{}), release: make(chan struct{})}
	r := NewRouter(Single("openai", "openai", g), nil)
	first := make(chan []pluginapi.Model, 1)
	go func() {
		models, err := r.Models(context.Background())
		assert.NoError(t, err)
		first <- models
	}()
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := r.Models(ctx)
		left <- err
	}()
	cancel()
	require.ErrorIs(t, <-left, context.Canceled, "a caller that leaves returns at once")
	close(g.release)
	models := <-first
	require.Len(t, models, 1)
	assert.Equal(t, int32(1), g.asked.Load(), "the second caller joined the first listing")

	models[0].ID = "changed"
	again, err := r.Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "gpt-4o", again[0].ID, "each caller's own list")
	assert.Equal(t, int32(2), g.asked.Load(), "a later call lists anew")
}
