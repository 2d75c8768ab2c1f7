package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// routed is a gateway over several fake providers, a and b (and c, which
// serves other models).
type routed struct {
	gw       *gateway.Gateway
	a, b, c  *provider
	recorder *recorder
	clock    *fakeclock.Clock
}

type routedSetup struct {
	governor gateway.Governor
	cache    bool
	retries  providers.Retries
	bPrices  *pricing.Table
}

func newRouted(t *testing.T, s routedSetup) *routed {
	t.Helper()
	usage := pluginapi.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}
	f := &routed{a: &provider{body: answer, usage: usage}, b: &provider{body: answer, usage: usage}, c: &provider{body: answer, usage: usage},
		recorder: &recorder{}, clock: fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	if s.retries.MaxAttempts == 0 {
		s.retries.MaxAttempts = 3
	}
	set := &providers.Set{
		Providers: []*providers.Provider{
			{Name: "a", Plugin: "openai", Models: []string{"gpt-*"}, Impl: f.a, Fingerprint: "a"},
			{Name: "b", Plugin: "openai", Models: []string{"gpt-*"}, Impl: f.b, Fingerprint: "b", Prices: s.bPrices},
			{Name: "c", Plugin: "anthropic", Models: []string{"claude-*"}, Impl: f.c, Fingerprint: "c"},
		},
		Retries: s.retries,
	}
	o := gateway.Options{Router: providers.NewRouter(set, f.clock.Now), Recorder: f.recorder, Now: f.clock.Now,
		Prices: pricing.New(map[string]pricing.Price{model: {Input: 1, Output: 2}}), Governor: s.governor}
	if s.cache {
		o.Cache = cache.New(cache.Options{MaxBytes: 1 << 20, TTL: time.Minute, Now: f.clock.Now})
	}
	f.gw = gateway.New(o)
	return f
}

func (f *routed) complete(t *testing.T, mode auth.Mode) (gateway.Result, error) {
	t.Helper()
	return f.gw.Complete(context.Background(), caller(mode), question(t, ""))
}

func explanation(t *testing.T, rec *ledger.Record) map[string]any {
	t.Helper()
	b, err := json.Marshal(rec.Run.Explanation)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func events(t *testing.T, rec *ledger.Record, typ string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range rec.Events {
		if e.Type == typ {
			var m map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &m))
			out = append(out, m)
		}
	}
	return out
}

var down = &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "overloaded"}

func TestProviderFallbackIsRecordedOnTheRun(t *testing.T) {
	f := newRouted(t, routedSetup{})
	f.a.err = down
	res, err := f.complete(t, auth.Optimize)
	require.NoError(t, err)
	assert.JSONEq(t, answer, string(res.Body))

	rec := f.recorder.last(t)
	assert.Equal(t, "b", rec.Run.Provider, "the provider that answered")
	assert.Equal(t, model, rec.Run.Model, "the caller's model")
	ex := explanation(t, rec)
	assert.Equal(t, "b", ex["provider"])
	attempts := ex["attempts"].([]any)
	require.Len(t, attempts, 2)
	assert.Equal(t, map[string]any{"provider": "a", "model": model, "outcome": "error", "status": 503.0, "latencyMs": 0.0, "error": "overloaded"}, attempts[0])
	assert.Equal(t, "ok", attempts[1].(map[string]any)["outcome"])
	assert.Equal(t, []any{
		map[string]any{"provider": "a", "plugin": "openai", "model": model},
		map[string]any{"provider": "b", "plugin": "openai", "model": model},
	}, ex["candidates"])
	assert.Equal(t, map[string]any{"used": true, "tier": "provider", "provider": "b", "from": "a", "reason": "overloaded"}, ex["fallback"])
	assert.Contains(t, ex["rejected"], map[string]any{"route": "live", "provider": "c", "reason": "model not served"})

	assert.Equal(t, []string{"request.received", "route.decided", "provider.failed", "provider.completed"}, eventTypes(rec))
	failed := event(t, rec, "provider.failed")
	assert.Equal(t, "a", failed["provider"])
	assert.InDelta(t, 502, failed["status"], 0)
	assert.InDelta(t, 503, failed["upstreamStatus"], 0)
	assert.InDelta(t, 1, failed["attempt"], 0)
	assert.Equal(t, "overloaded", failed["error"])
	completed := event(t, rec, "provider.completed")
	assert.Equal(t, "b", completed["provider"])
	assert.InDelta(t, 2, completed["attempt"], 0)
}

func TestTheFirstProviderAnsweringIsNoFallback(t *testing.T) {
	f := newRouted(t, routedSetup{})
	_, err := f.complete(t, auth.Optimize)
	require.NoError(t, err)
	rec := f.recorder.last(t)
	assert.Equal(t, "a", rec.Run.Provider)
	assert.Nil(t, rec.Run.Explanation.Fallback)
	assert.Zero(t, f.b.called())
}

func TestCallIsPricedByTheAnsweringProvider(t *testing.T) {
	f := newRouted(t, routedSetup{bPrices: pricing.New(map[string]pricing.Price{model: {Input: 3, Output: 5}})})
	_, err := f.complete(t, auth.Optimize)
	require.NoError(t, err)
	assert.InDelta(t, (10*1+2*2)/1e6, f.recorder.last(t).Run.CostUSD, 1e-12, "a: the table's price")

	f.a.err = down
	_, err = f.gw.Complete(context.Background(), caller(auth.Optimize), question(t, `"temperature":0.5,`))
	require.NoError(t, err)
	run := f.recorder.last(t).Run
	assert.Equal(t, "b", run.Provider)
	assert.InDelta(t, (10*3+2*5)/1e6, run.CostUSD, 1e-12, "b's own price")
}

func TestProviderRulesForbidACandidate(t *testing.T) {
	gov := &governor{targets: map[policy.Target]bool{policy.Chat: true, policy.Provider: true},
		decision:  governance.Decision{Verdict: policy.Verdict{Decision: policy.Allow, Rules: []policy.RuleResult{}}},
		providers: map[string]string{"a": "no-a"}}
	f := newRouted(t, routedSetup{governor: gov})
	_, err := f.complete(t, auth.Optimize)
	require.NoError(t, err)
	assert.Zero(t, f.a.called(), "a is forbidden")
	assert.Equal(t, 1, f.b.called())

	require.Len(t, gov.inputs, 1)
	assert.Equal(t, []string{"a", "b"}, gov.inputs[0].Providers, "chat rules see the candidates")
	assert.Equal(t, []string{"a", "b"}, gov.requests[0].Providers)

	rec := f.recorder.last(t)
	assert.Equal(t, "b", rec.Run.Provider)
	ex := explanation(t, rec)
	assert.Contains(t, ex["rejected"], map[string]any{"route": "live", "provider": "a", "reason": "forbidden by policy rule no-a"})
	assert.Nil(t, ex["fallback"], "a was never tried: no fallback")
	rules := rec.Run.Explanation.Policy.Rules
	require.Len(t, rules, 1)
	assert.Equal(t, "no-a", rules[0].ID)
	var verdicts []map[string]any
	for _, v := range events(t, rec, "policy.evaluated") {
		if v["target"] == "provider" {
			verdicts = append(verdicts, v)
		}
	}
	require.Len(t, verdicts, 1)
	assert.Equal(t, "a", verdicts[0]["provider"])
	assert.Equal(t, true, verdicts[0]["enforced"])
}

func TestProviderRulesInObserveModeOnlyRecord(t *testing.T) {
	gov := &governor{targets: map[policy.Target]bool{policy.Provider: true}, providers: map[string]string{"a": "no-a"}, observe: true}
	f := newRouted(t, routedSetup{governor: gov})
	_, err := f.complete(t, auth.Observe)
	require.NoError(t, err)
	assert.Equal(t, 1, f.a.called(), "a deny in observe mode is not enforced")
	rec := f.recorder.last(t)
	assert.Equal(t, "a", rec.Run.Provider)
	require.Len(t, rec.Run.Explanation.Policy.Rules, 1)
	assert.Equal(t, false, events(t, rec, "policy.evaluated")[0]["enforced"])
}

func TestEveryCandidateForbiddenIsBlocked(t *testing.T) {
	gov := &governor{targets: map[policy.Target]bool{policy.Provider: true}, providers: map[string]string{"a": "no-a", "b": "no-b"}}
	f := newRouted(t, routedSetup{governor: gov})
	_, err := f.complete(t, auth.Optimize)
	require.Error(t, err)
	assert.Equal(t, 403, httpstatus.Of(err))
	assert.Equal(t, "policy_denied", errs.Code(err))
	assert.Contains(t, errs.Public(err), "no-a")
	assert.Contains(t, errs.Public(err), "no-b")
	assert.Zero(t, f.a.called()+f.b.called())
	rec := f.recorder.last(t)
	assert.Equal(t, ledger.RouteBlocked, rec.Run.Route)
	assert.Equal(t, "deny", rec.Run.Explanation.Policy.Decision)
	ex := explanation(t, rec)
	assert.Equal(t, []any{
		map[string]any{"route": "live", "reason": "a policy does not allow this request"},
		map[string]any{"route": "live", "provider": "a", "reason": "forbidden by policy rule no-a"},
		map[string]any{"route": "live", "provider": "b", "reason": "forbidden by policy rule no-b"},
		map[string]any{"route": "live", "provider": "c", "reason": "model not served"},
	}, ex["rejected"], "each candidate, and why it was not tried")
	assert.Len(t, ex["candidates"], 2)
}

// A rule that forbids every candidate is named once, in the answer and in
// the run's verdict.
func TestOneRuleForbiddingEveryCandidateIsNamedOnce(t *testing.T) {
	gov := &governor{targets: map[policy.Target]bool{policy.Provider: true}, providers: map[string]string{"a": "nobody", "b": "nobody"}}
	f := newRouted(t, routedSetup{governor: gov})
	_, err := f.complete(t, auth.Optimize)
	require.Error(t, err)
	assert.Equal(t, 403, httpstatus.Of(err))
	assert.Equal(t, 1, strings.Count(errs.Public(err), "nobody"), errs.Public(err))
	rules := f.recorder.last(t).Run.Explanation.Policy.Rules
	require.Len(t, rules, 1)
	assert.Equal(t, "nobody", rules[0].ID)
}

func TestEveryProviderFailingIs502NamingTheAttempts(t *testing.T) {
	f := newRouted(t, routedSetup{retries: providers.Retries{MaxAttempts: 2}})
	f.a.err = down
	f.b.err = &pluginapi.ProviderError{Status: 500, Type: "server_error", Message: "boom sk-secret"}
	_, err := f.complete(t, auth.Optimize)
	require.Error(t, err)
	assert.Equal(t, 502, httpstatus.Of(err))
	assert.Equal(t, "providers_failed", errs.Code(err))
	assert.Equal(t, "all providers failed: a: 503 overloaded (0 ms); b: 500 boom sk-secret (0 ms)", errs.Public(err),
		"no secret is configured on this gateway")

	rec := f.recorder.last(t)
	assert.Equal(t, ledger.StatusError, rec.Run.Status)
	assert.Equal(t, 502, rec.Run.HTTPStatus)
	assert.Equal(t, "b", rec.Run.Provider, "the last one tried")
	failed := events(t, rec, "provider.failed")
	require.Len(t, failed, 2, "one event an attempt")
	assert.Equal(t, "a", failed[0]["provider"])
	assert.Equal(t, "b", failed[1]["provider"])
	assert.InDelta(t, 2, failed[1]["attempt"], 0)
	assert.Nil(t, rec.Run.Explanation.Fallback)
	assert.Empty(t, rec.Run.Explanation.Provider)
}

func TestEveryProviderRateLimitedIs429WithTheShortestWait(t *testing.T) {
	f := newRouted(t, routedSetup{retries: providers.Retries{MaxAttempts: 2}})
	f.a.err = &pluginapi.ProviderError{Status: 429, Type: "rate_limit_error", Message: "slow", RetryAfter: 30 * time.Second}
	f.b.err = &pluginapi.ProviderError{Status: 429, Type: "rate_limit_error", Message: "slower", RetryAfter: 5 * time.Second}
	_, err := f.complete(t, auth.Optimize)
	require.Error(t, err)
	assert.Equal(t, 429, httpstatus.Of(err))
	assert.Equal(t, "rate_limited", errs.Code(err))
	assert.Equal(t, 5*time.Second, errs.As(err).Retry)
	assert.Equal(t, 429, f.recorder.last(t).Run.HTTPStatus)

	// Both are now rate limited for every call: none is asked, and the
	// answer is still a 429 with the shortest wait left.
	f.clock.Advance(2 * time.Second)
	_, err = f.complete(t, auth.Optimize)
	require.Error(t, err)
	assert.Equal(t, 429, httpstatus.Of(err))
	assert.Equal(t, 3*time.Second, errs.As(err).Retry)
	assert.Equal(t, 1, f.a.called())
	assert.Equal(t, 1, f.b.called())
}

// A provider that cannot serve the request has no say on the answer when
// the others are rate limited: the caller waits, rather than being told to
// change a request they will serve; when none can serve it, the caller is.
func TestAnUnsupportedRefusalLeavesTheOthersToSay(t *testing.T) {
	unsupported := &pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Code: pluginapi.CodeUnsupported,
		Param: "n", Message: "n > 1 is not supported by this provider"}
	f := newRouted(t, routedSetup{retries: providers.Retries{MaxAttempts: 2}})
	f.a.err = unsupported
	f.b.err = &pluginapi.ProviderError{Status: 429, Type: "rate_limit_error", Message: "slow", RetryAfter: 30 * time.Second}
	_, err := f.complete(t, auth.Optimize)
	require.Error(t, err)
	assert.Equal(t, 429, httpstatus.Of(err), "b could serve it, later")
	assert.Equal(t, 30*time.Second, errs.As(err).Retry)

	// b is now rate limited for every call: skipped, it still says wait.
	_, err = f.complete(t, auth.Optimize)
	require.Error(t, err)
	assert.Equal(t, 429, httpstatus.Of(err))
	assert.Equal(t, 1, f.b.called())

	f = newRouted(t, routedSetup{})
	f.a.err, f.b.err = unsupported, unsupported
	_, err = f.complete(t, auth.Optimize)
	require.Error(t, err)
	assert.Equal(t, 400, httpstatus.Of(err), "none serves it: the request is the caller's to change")
	assert.Equal(t, pluginapi.CodeUnsupported, errs.Code(err))
}

func TestAModelNoProviderServesIs404(t *testing.T) {
	f := newRouted(t, routedSetup{})
	req, err := gateway.ParseRequest([]byte(`{"model":"llama-3","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	_, err = f.gw.Complete(context.Background(), caller(auth.Optimize), req)
	require.Error(t, err)
	e := errs.As(err)
	require.NotNil(t, e)
	assert.Equal(t, 404, httpstatus.Of(err))
	assert.Equal(t, "model_not_found", e.Code)
	assert.Equal(t, "invalid_request_error", e.Type)
	assert.Equal(t, "model", e.Param)
	assert.Equal(t, "no provider serves model llama-3", e.Public)
	rec := f.recorder.last(t)
	assert.Equal(t, 404, rec.Run.HTTPStatus)
	assert.Equal(t, "no provider serves model llama-3", rec.Run.Error)
	assert.Zero(t, f.a.called()+f.b.called()+f.c.called())
}

func TestStreamFallsBackBeforeItsFirstChunk(t *testing.T) {
	f := newRouted(t, routedSetup{})
	f.a.err = down
	f.b.chunks = []pluginapi.ChatChunk{chunk("Par"), chunk("is")}
	s := &sink{}
	_, err := f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), s)
	require.NoError(t, err)
	assert.Len(t, s.chunks, 2)
	rec := f.recorder.last(t)
	assert.Equal(t, "b", rec.Run.Provider)
	assert.Equal(t, []string{"request.received", "route.decided", "provider.failed", "provider.completed"}, eventTypes(rec))
	assert.Equal(t, "provider", explanation(t, rec)["fallback"].(map[string]any)["tier"])
}

func TestACachedAnswerStandsInWhenEveryProviderFailed(t *testing.T) {
	f := newRouted(t, routedSetup{cache: true, retries: providers.Retries{MaxAttempts: 2}})
	_, err := f.complete(t, auth.Optimize)
	require.NoError(t, err)
	f.clock.Advance(2 * time.Minute) // stale, kept for fallbacks
	f.a.err, f.b.err = down, down
	res, err := f.complete(t, auth.Optimize)
	require.NoError(t, err)
	assert.Equal(t, ledger.RouteExactCache, res.Route)
	rec := f.recorder.last(t)
	ex := explanation(t, rec)
	assert.Equal(t, string(cache.ExactResponse), ex["fallback"].(map[string]any)["tier"])
	assert.Len(t, events(t, rec, "provider.failed"), 2, "each failed attempt")
	assert.Contains(t, ex["fallback"].(map[string]any)["reason"], "all providers failed")
}

func TestExistingRunsKeepTheirExplanationJSON(t *testing.T) {
	// A run recorded before several providers: none of the new fields.
	ex := ledger.RouteExplanation{Route: "live", Reason: "r", Rejected: []ledger.Alternative{{Route: "exact_cache", Reason: "x"}},
		Policy: ledger.Verdict{Decision: "allow", Rules: []ledger.RuleResult{}}}
	b, err := json.Marshal(ex)
	require.NoError(t, err)
	assert.JSONEq(t, `{"route":"live","reason":"r","rejected":[{"route":"exact_cache","reason":"x"}],`+
		`"policy":{"decision":"allow","rules":[],"enforced":false},"cache":null,"artifact":null,"estimatedSavingsUsd":0,"fallback":null}`, string(b))
}

// embedder is a provider that serves embeddings.
type embedder struct{ *provider }

func (e embedder) Embed(context.Context, pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	return pluginapi.EmbedResponse{Body: []byte(`{"object":"list","model":"gpt-e","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}]}`),
		Usage: pluginapi.Usage{PromptTokens: 3, TotalTokens: 3}}, nil
}

func TestEmbeddingsGoToAProviderThatServesThem(t *testing.T) {
	rec := &recorder{}
	a, b := &provider{}, &provider{}
	set := &providers.Set{
		Providers: []*providers.Provider{{Name: "a", Plugin: "openai", Impl: a}, {Name: "b", Plugin: "openai", Impl: embedder{b}}},
		Retries:   providers.Retries{MaxAttempts: 2},
	}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: rec,
		Prices: pricing.New(map[string]pricing.Price{"gpt-e": {Input: 1}})})
	req, err := gateway.ParseEmbedRequest([]byte(`{"model":"gpt-e","input":"hello"}`))
	require.NoError(t, err)
	res, err := gw.Embed(context.Background(), caller(auth.Optimize), req)
	require.NoError(t, err)
	assert.Contains(t, string(res.Body), `"embedding"`)
	assert.Zero(t, a.called())
	assert.Equal(t, 1, b.called())
	run := rec.last(t).Run
	assert.Equal(t, "b", run.Provider)
	assert.InDelta(t, 3/1e6, run.CostUSD, 1e-12)
	assert.Contains(t, explanation(t, rec.last(t))["rejected"], map[string]any{"route": "live", "provider": "a", "reason": "model not served: no embeddings"})
}

// A call no candidate could be tried for tells no provider.failed: no
// provider failed, and the route explanation says why none was tried.
func TestACallWithNoAttemptTellsNoProviderFailure(t *testing.T) {
	rec := &recorder{}
	set := &providers.Set{
		Providers: []*providers.Provider{{Name: "a", Plugin: "anthropic", Impl: &provider{}}, {Name: "b", Plugin: "anthropic", Impl: &provider{}}},
		Retries:   providers.Retries{MaxAttempts: 2},
	}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: rec})
	req, err := gateway.ParseEmbedRequest([]byte(`{"model":"gpt-e","input":"hello"}`))
	require.NoError(t, err)
	_, err = gw.Embed(context.Background(), caller(auth.Optimize), req)
	require.Error(t, err)
	assert.Equal(t, 404, httpstatus.Of(err))
	assert.Empty(t, events(t, rec.last(t), "provider.failed"))
	assert.Contains(t, explanation(t, rec.last(t))["rejected"], map[string]any{"route": "live", "provider": "b", "reason": "model not served: no embeddings"})
}

func TestModelsListEveryProviderAndTheRoutes(t *testing.T) {
	set := &providers.Set{
		Providers: []*providers.Provider{{Name: "a", Plugin: "openai", Impl: &listing{models: []pluginapi.Model{{ID: "gpt-4o"}}}},
			{Name: "b", Plugin: "openai", Impl: &listing{models: []pluginapi.Model{{ID: "gpt-4o"}, {ID: "llama"}}}}},
		Routes: []providers.Route{{Model: "fast", Targets: []providers.Target{{Provider: "b", Model: "llama"}}}},
	}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: &recorder{}})
	models, err := gw.Models(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, m := range models {
		ids = append(ids, m.ID+"/"+m.OwnedBy)
	}
	assert.Equal(t, []string{"gpt-4o/", "llama/", "fast/svc"}, ids)
}

// listing is a provider with a model list.
type listing struct {
	provider
	models []pluginapi.Model
}

func (l *listing) Models(context.Context) ([]pluginapi.Model, error) { return l.models, nil }

// byModel fails the calls for its down model and answers the others.
type byModel struct {
	provider
	down string
}

func (p *byModel) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if req.Model == p.down {
		return pluginapi.ChatResponse{}, down
	}
	return p.provider.Chat(ctx, req)
}

// A route may fall back to a cheaper model of the same provider: the run
// is priced by the model that answered, and the fallback is recorded.
func TestADowngradeOnOneProviderIsPricedByTheModelThatAnswered(t *testing.T) {
	p := &byModel{provider: provider{body: answer, usage: pluginapi.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}, down: "gpt-4o"}
	set := &providers.Set{
		Providers: []*providers.Provider{{Name: "openai", Plugin: "openai", Impl: p, Fingerprint: "o"}},
		Routes: []providers.Route{{Model: model, Targets: []providers.Target{
			{Provider: "openai", Model: "gpt-4o"}, {Provider: "openai", Model: "gpt-4o-cheap"}}}},
		Retries: providers.Retries{MaxAttempts: 2},
	}
	rec := &recorder{}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: rec,
		Prices: pricing.New(map[string]pricing.Price{"gpt-4o": {Input: 100, Output: 100}, "gpt-4o-cheap": {Input: 1, Output: 2}})})
	_, err := gw.Complete(context.Background(), caller(auth.Optimize), question(t, ""))
	require.NoError(t, err)
	run := rec.last(t).Run
	assert.InDelta(t, (10*1+2*2)/1e6, run.CostUSD, 1e-12, "the cheap model's price")
	ex := explanation(t, rec.last(t))
	assert.Equal(t, map[string]any{"used": true, "tier": "provider", "provider": "openai", "from": "openai", "reason": "overloaded"}, ex["fallback"])
}

// failsMidStream streams one chunk, then fails.
type failsMidStream struct{ provider }

func (m *failsMidStream) StreamChat(_ context.Context, _ pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	if err := send(chunk("Par")); err != nil {
		return err
	}
	return &pluginapi.ProviderError{Status: 500, Type: "server_error", Message: "cut"}
}

// A stream held for the tool rules that fails after a chunk is not
// replayed, and the provider may bill what it sent: usage unknown.
// heldStreams is a gateway that holds a stream with tools on offer until
// its tool calls are judged, over providers a, b, … tried in that order.
func heldStreams(rec *recorder, impls ...pluginapi.Provider) *gateway.Gateway {
	set := &providers.Set{Retries: providers.Retries{MaxAttempts: len(impls)}}
	for i, impl := range impls {
		set.Providers = append(set.Providers, &providers.Provider{Name: string(rune('a' + i)), Plugin: "openai", Impl: impl})
	}
	gov := &governor{targets: map[policy.Target]bool{policy.Tool: true}}
	return gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: rec, Governor: gov,
		Prices: pricing.New(map[string]pricing.Price{model: {Input: 1, Output: 2}})})
}

// toolStream is a streamed request with a tool on offer.
func toolStream(t *testing.T) *gateway.Request {
	t.Helper()
	req, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`))
	require.NoError(t, err)
	return req
}

func TestAHeldStreamFailingMidwayHasUsageUnknown(t *testing.T) {
	rec := &recorder{}
	a, b := &failsMidStream{}, &provider{body: answer}
	gw := heldStreams(rec, a, b)
	s := &sink{}
	_, err := gw.Stream(context.Background(), caller(auth.Optimize), toolStream(t), s)
	require.Error(t, err)
	assert.False(t, s.began, "nothing reached the client")
	assert.Zero(t, b.called(), "a stream that sent a chunk is not replayed")
	run := rec.last(t).Run
	assert.True(t, run.UsageUnknown, "the provider streamed, and may bill, part of an answer")
	assert.Zero(t, run.CostUSD)
}

// A client that leaves while the call waits to retry leaves every failed
// attempt told.
func TestAClientLeavingDuringABackoffKeepsEveryFailedAttempt(t *testing.T) {
	rec := &recorder{}
	a, b := &provider{err: down}, &provider{err: down}
	set := &providers.Set{Providers: []*providers.Provider{{Name: "a", Plugin: "openai", Impl: a}, {Name: "b", Plugin: "openai", Impl: b}},
		Retries: providers.Retries{MaxAttempts: 3, Backoff: time.Hour, MaxBackoff: time.Hour}}
	clock := fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	router := providers.NewRouter(set, clock.Now)
	router.UseTimers(clock.AfterFunc)
	gw := gateway.New(gateway.Options{Router: router, Recorder: rec, Now: clock.Now,
		Prices: pricing.New(map[string]pricing.Price{model: {Input: 1, Output: 2}})})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := gw.Complete(ctx, caller(auth.Optimize), question(t, ""))
		done <- err
	}()
	require.Eventually(t, func() bool { return clock.Timers() == 1 }, 10*time.Second, time.Millisecond, "the call waits to retry")
	cancel() // during the backoff before the third attempt
	require.Error(t, <-done)
	failed := events(t, rec.last(t), "provider.failed")
	require.Len(t, failed, 2, "both failed attempts are told")
	assert.Equal(t, "a", failed[0]["provider"])
	assert.Equal(t, "b", failed[1]["provider"])
}

// redactAll masks every tenant's stored text.
type redactAll struct{}

func (redactAll) Redaction(context.Context, string) bool { return true }

// A tenant whose stored text is masked has its attempts' errors, the
// fallback's reason and the provider.failed events masked too: an
// upstream may quote the request back.
func TestAttemptErrorsAreMaskedWhenTheTenantRedacts(t *testing.T) {
	rec := &recorder{}
	quoted := &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "cannot answer ann@example.com now"}
	a, b := &provider{err: quoted}, &provider{body: answer}
	set := &providers.Set{Providers: []*providers.Provider{{Name: "a", Plugin: "openai", Impl: a}, {Name: "b", Plugin: "openai", Impl: b}},
		Retries: providers.Retries{MaxAttempts: 2}}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: rec, Redaction: redactAll{},
		Prices: pricing.New(map[string]pricing.Price{model: {Input: 1, Output: 2}})})
	_, err := gw.Complete(context.Background(), caller(auth.Optimize), question(t, ""))
	require.NoError(t, err)
	r := rec.last(t)
	ex := explanation(t, r)
	assert.Equal(t, "cannot answer [email] now", ex["attempts"].([]any)[0].(map[string]any)["error"])
	assert.Equal(t, "cannot answer [email] now", ex["fallback"].(map[string]any)["reason"])
	assert.Equal(t, "cannot answer [email] now", event(t, r, "provider.failed")["error"])
}

// answeringEmbedder answers every embeddings call with body.
type answeringEmbedder struct {
	*provider
	body string
}

func (e answeringEmbedder) Embed(context.Context, pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	return pluginapi.EmbedResponse{Body: []byte(e.body), Usage: pluginapi.Usage{PromptTokens: 3, TotalTokens: 3}}, nil
}

// An embeddings answer a client could not use is the provider's fault: a
// 502, and nothing cached that a later call would be served.
func TestAnEmbeddingsAnswerNoClientCouldUseIsABadResponse(t *testing.T) {
	const input = `{"model":"gpt-e","input":["a","b"]}`
	for name, data := range map[string]string{
		"fewer vectors":          `[{"index":0,"embedding":[0.1,0.2]}]`,
		"more vectors":           `[{"index":0,"embedding":[0.1]},{"index":1,"embedding":[0.2]},{"index":2,"embedding":[0.3]}]`,
		"an index twice":         `[{"index":0,"embedding":[0.1]},{"index":0,"embedding":[0.2]}]`,
		"an index out of range":  `[{"index":0,"embedding":[0.1]},{"index":5,"embedding":[0.2]}]`,
		"no index, then a clash": `[{"embedding":[0.1]},{"index":0,"embedding":[0.2]}]`,
		"strings for numbers":    `[{"index":0,"embedding":["a","b"]},{"index":1,"embedding":["c","d"]}]`,
		"a null vector":          `[{"index":0,"embedding":null},{"index":1,"embedding":[0.2]}]`,
		"sizes that differ":      `[{"index":0,"embedding":[0.1,0.2]},{"index":1,"embedding":[0.3]}]`,
		"base64 not asked for":   `[{"index":0,"embedding":"AAAAAA=="},{"index":1,"embedding":"AAAAAA=="}]`,
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			e := answeringEmbedder{provider: &provider{}, body: `{"object":"list","model":"gpt-e","data":` + data + `}`}
			set := &providers.Set{Providers: []*providers.Provider{{Name: "e", Plugin: "openai", Impl: e}}}
			gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: rec, Cache: cache.New(cache.Options{MaxBytes: 1 << 20, TTL: time.Minute}),
				Prices: pricing.New(map[string]pricing.Price{"gpt-e": {Input: 1}})})
			for range 2 {
				req, err := gateway.ParseEmbedRequest([]byte(input))
				require.NoError(t, err)
				_, err = gw.Embed(context.Background(), caller(auth.Optimize), req)
				require.Error(t, err)
				assert.Equal(t, "upstream_bad_response", errs.Code(err))
				assert.Equal(t, 502, rec.last(t).Run.HTTPStatus)
				failed := events(t, rec.last(t), "provider.failed")
				require.Len(t, failed, 1, "the provider answered, and its answer failed the call")
				assert.Equal(t, "e", failed[0]["provider"])
				assert.InDelta(t, 502, failed[0]["status"], 0)
				assert.Contains(t, failed[0]["error"], "embedding")
			}
			assert.Equal(t, 2, e.called(), "nothing was cached")
		})
	}
	for name, good := range map[string]struct{ request, data string }{
		"base64 as asked, numbered out of order": {`{"model":"gpt-e","input":["a","b"],"encoding_format":"base64"}`,
			`[{"index":1,"embedding":"AAAAAA=="},{"index":0,"embedding":"AAAAAA=="}]`},
		"from a server that numbers none": {input, `[{"embedding":[0.1,-2e-3]},{"embedding":[0.3,0.4]}]`},
	} {
		t.Run(name, func(t *testing.T) {
			e := answeringEmbedder{provider: &provider{}, body: `{"object":"list","model":"gpt-e","data":` + good.data + `}`}
			set := &providers.Set{Providers: []*providers.Provider{{Name: "e", Plugin: "openai", Impl: e}}}
			gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: &recorder{},
				Prices: pricing.New(map[string]pricing.Price{"gpt-e": {Input: 1}})})
			req, err := gateway.ParseEmbedRequest([]byte(good.request))
			require.NoError(t, err)
			_, err = gw.Embed(context.Background(), caller(auth.Optimize), req)
			require.NoError(t, err)
		})
	}
}
