package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// The gateway's routing decisions, without HTTP: a fake provider, an
// in-memory recorder, the real cache and serving index.

const (
	tenantID = "ten_1"
	model    = "gpt-4o-mini"
)

// provider answers with a fixed body and usage, or fails with err.
type provider struct {
	mu     sync.Mutex
	calls  int
	body   string
	usage  pluginapi.Usage
	err    error
	chunks []pluginapi.ChatChunk
}

func (p *provider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.err != nil {
		return pluginapi.ChatResponse{}, p.err
	}
	return pluginapi.ChatResponse{Body: []byte(p.body), Usage: p.usage}, nil
}

func (p *provider) StreamChat(_ context.Context, _ pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	p.mu.Lock()
	p.calls++
	err, chunks := p.err, p.chunks
	p.mu.Unlock()
	if err != nil {
		return err
	}
	for _, ch := range chunks {
		if err := send(ch); err != nil {
			return err
		}
	}
	return nil
}

func (p *provider) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

func (p *provider) called() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// recorder keeps every record in memory.
type recorder struct {
	mu   sync.Mutex
	recs []*ledger.Record
}

func (r *recorder) Record(_ context.Context, rec *ledger.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}

func (r *recorder) last(t *testing.T) *ledger.Record {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.recs, "no run was recorded")
	return r.recs[len(r.recs)-1]
}

func eventTypes(rec *ledger.Record) []string {
	out := make([]string, len(rec.Events))
	for i, e := range rec.Events {
		out[i] = e.Type
	}
	return out
}

func event(t *testing.T, rec *ledger.Record, typ string) map[string]any {
	t.Helper()
	for _, e := range rec.Events {
		if e.Type == typ {
			var m map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &m))
			return m
		}
	}
	t.Fatalf("no %s event in %v", typ, eventTypes(rec))
	return nil
}

// governor gives every call the same decision, or fails with err.
type governor struct {
	targets  map[policy.Target]bool
	decision governance.Decision
	err      error
	// providers maps a provider to the rule that denies it; observe
	// records the denies without enforcing them.
	providers map[string]string
	observe   bool
	requests  []policy.Request // what JudgeProviders saw
	inputs    []policy.Request // what Decide saw
	spends    []policy.Spend   // the spend Decide saw
	// needsSpend is NeedsSpend's answer; budgetError BudgetError's, for
	// the verdicts it denies.
	needsSpend  bool
	budgetError *errs.Error
	budgeted    []policy.Verdict // the verdicts BudgetError was asked about
}

func (g *governor) Has(t policy.Target) bool { return g.targets[t] }

func (g *governor) Decide(ctx context.Context, c governance.Call, in *policy.Input) (governance.Decision, error) {
	j, err := g.Judge(ctx, c, in)
	if err != nil {
		return governance.Decision{}, err
	}
	return g.Settle(ctx, j)
}

func (g *governor) Prepare(context.Context, governance.Call, *policy.Input) {}

func (g *governor) Judge(_ context.Context, _ governance.Call, in *policy.Input) (governance.Judgment, error) {
	g.inputs = append(g.inputs, in.Request)
	g.spends = append(g.spends, in.Spend)
	return governance.Judgment{Decision: g.decision}, g.err
}

func (g *governor) Settle(_ context.Context, j governance.Judgment) (governance.Decision, error) {
	return j.Decision, nil
}

func (g *governor) NeedsSpend(context.Context, string) bool { return g.needsSpend }

func (g *governor) BudgetError(_ context.Context, _ *auth.Identity, v policy.Verdict, _ *policy.Spend) *errs.Error {
	g.budgeted = append(g.budgeted, v)
	if v.Decision != policy.Deny {
		return nil
	}
	return g.budgetError
}

func (g *governor) JudgeProviders(_ context.Context, _ *auth.Identity, _ string, req policy.Request, cands []policy.Candidate) ([]governance.ProviderVerdict, error) {
	g.requests = append(g.requests, req)
	if g.providers == nil {
		return nil, nil
	}
	out := make([]governance.ProviderVerdict, len(cands))
	for i, c := range cands {
		out[i] = governance.ProviderVerdict{Provider: c.Name, Verdict: policy.Verdict{Decision: policy.Allow, Rules: []policy.RuleResult{}}}
		if rule, ok := g.providers[c.Name]; ok {
			out[i].Verdict = policy.Verdict{Decision: policy.Deny, Rules: []policy.RuleResult{{ID: rule, Effect: policy.Deny, Reason: "not " + c.Name}}}
			out[i].Enforced = !g.observe
		}
	}
	return out, nil
}

// learner serves one tenant's artifacts from a real index, and keeps the
// shadow evidence it is handed.
type learner struct {
	svc     *learning.Service
	share   float64
	mu      sync.Mutex
	shadows []string // outcomes
}

func (l *learner) Index() *learning.Index { return l.svc.Index() }

func (l *learner) RecordShadow(_, _, _, outcome, _, _, _ string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shadows = append(l.shadows, outcome)
}

func (l *learner) CanaryShare() float64 { return l.share }

// servingStore is the one part of the learning store the index loads from.
type servingStore struct {
	learning.Store
	rows []learning.ServingRow
}

func (s servingStore) ServingArtifacts(context.Context) ([]learning.ServingRow, error) {
	return s.rows, nil
}

type canary bool

func (c canary) Canary(context.Context, string) bool { return bool(c) }

type fixture struct {
	gw       *gateway.Gateway
	provider *provider
	recorder *recorder
	clock    *fakeclock.Clock
	learner  *learner
}

type setup struct {
	noCache  bool
	governor gateway.Governor
	artifact string // "", synth.ArtifactPromoted or synth.ArtifactShadow
	share    float64
	canary   bool
	spend    gateway.Spend
	price    *pricing.Price // the model's price; nil: input 1, output 2
}

const answer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`

func newFixture(t *testing.T, s setup) *fixture {
	t.Helper()
	f := &fixture{
		provider: &provider{body: answer, usage: pluginapi.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		recorder: &recorder{},
		clock:    fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	}
	price := pricing.Price{Input: 1, Output: 2}
	if s.price != nil {
		price = *s.price
	}
	o := gateway.Options{Provider: f.provider, ProviderName: "fake", Recorder: f.recorder, Now: f.clock.Now,
		Prices: pricing.New(map[string]pricing.Price{model: price}), Governor: s.governor,
		Secrets: []string{"sk-secret"}, Spend: s.spend}
	if !s.noCache {
		o.Cache = cache.New(cache.Options{MaxBytes: 1 << 20, TTL: time.Minute, Now: f.clock.Now})
	}
	if s.artifact != "" {
		f.learner = &learner{svc: loadedIndex(t, s.artifact), share: s.share}
		o.Learner = f.learner
		o.Canary = canary(s.canary)
	}
	f.gw = gateway.New(o)
	return f
}

// loadedIndex is a learning service whose index holds one template
// artifact, in state, for the shape of question().
func loadedIndex(t *testing.T, state string) *learning.Service {
	t.Helper()
	sh, err := shape.Of("", model, []shape.Message{{Role: "user", Content: "What is the capital of France?"}}, "", nil)
	require.NoError(t, err)
	rep, err := json.Marshal(synth.Template{Text: "Paris"})
	require.NoError(t, err)
	row := learning.ServingRow{
		Artifact: synth.Artifact{ID: "art_1", TenantID: tenantID, PatternID: "pat_1", State: state,
			Type: synth.TypeTemplate, Representation: rep},
		Pattern: synth.Pattern{ID: "pat_1", TenantID: tenantID, Key: sh.Key, AvgCostUSD: 0.5, AvgLatencyMS: 800},
	}
	svc := learning.New(learning.Options{Store: servingStore{rows: []learning.ServingRow{row}}})
	require.NoError(t, svc.Load(context.Background()))
	require.False(t, svc.Index().Empty(tenantID), "the artifact entered the index")
	return svc
}

func question(t *testing.T, extra string) *gateway.Request {
	t.Helper()
	req, err := gateway.ParseRequest([]byte(`{"model":"` + model + `",` + extra +
		`"messages":[{"role":"user","content":"What is the capital of France?"}]}`))
	require.NoError(t, err)
	return req
}

func caller(mode auth.Mode) *auth.Identity {
	return &auth.Identity{TenantID: tenantID, KeyID: "key_1", Mode: mode}
}

func (f *fixture) complete(t *testing.T, mode auth.Mode, extra string) (gateway.Result, error) {
	t.Helper()
	return f.gw.Complete(context.Background(), caller(mode), question(t, extra))
}

func TestLiveCallIsPricedAndRecorded(t *testing.T) {
	f := newFixture(t, setup{})
	res, err := f.complete(t, auth.Optimize, "")
	require.NoError(t, err)
	assert.Equal(t, ledger.RouteLive, res.Route)
	assert.JSONEq(t, answer, string(res.Body))
	assert.Equal(t, 1, f.provider.called())

	rec := f.recorder.last(t)
	run := rec.Run
	assert.Equal(t, res.RunID, run.ID)
	assert.Equal(t, ledger.StatusOK, run.Status)
	assert.Equal(t, 200, run.HTTPStatus)
	assert.Equal(t, "fake", run.Provider)
	assert.Equal(t, int64(12), run.TotalTokens)
	assert.InDelta(t, (10*1+2*2)/1e6, run.CostUSD, 1e-12)
	assert.False(t, run.UsageUnknown)
	assert.Equal(t, []string{"request.received", "route.decided", "provider.completed"}, eventTypes(rec))
	assert.InDelta(t, 200, event(t, rec, "provider.completed")["status"], 0)
}

func TestPromptCacheTokensArePricedAtTheirOwnPrice(t *testing.T) {
	f := newFixture(t, setup{price: &pricing.Price{Input: 1, Output: 2, CachedInput: 0.5, CacheWrite: 3}})
	// 10 prompt tokens: 4 read from the provider's cache, 2 written to it.
	f.provider.usage = pluginapi.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, CachedPromptTokens: 4, CacheWriteTokens: 2}
	_, err := f.complete(t, auth.Optimize, "")
	require.NoError(t, err)
	run := f.recorder.last(t).Run
	assert.InDelta(t, (4*1+4*0.5+2*3+2*2)/1e6, run.CostUSD, 1e-12)
}

func TestUnbelievableUsageIsUnknown(t *testing.T) {
	for name, u := range map[string]pluginapi.Usage{
		"negative prompt":      {PromptTokens: -1_000_000, CompletionTokens: 5, TotalTokens: -999_995},
		"negative completion":  {PromptTokens: 10, CompletionTokens: -5},
		"negative cached":      {PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, CachedPromptTokens: -4},
		"negative cache write": {PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, CacheWriteTokens: -4},
		"beyond any model":     {PromptTokens: 1 << 62, CompletionTokens: 1 << 62, TotalTokens: 1 << 62},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, setup{})
			f.provider.usage = u
			_, err := f.complete(t, auth.Optimize, "")
			require.NoError(t, err, "the answer is the provider's; only its count is not taken")
			run := f.recorder.last(t).Run
			assert.True(t, run.UsageUnknown)
			assert.Zero(t, run.PromptTokens)
			assert.Zero(t, run.CompletionTokens)
			assert.Zero(t, run.TotalTokens)
			assert.Zero(t, run.CostUSD, "no negative cost lowers the tenant's spend")
		})
	}
}

func TestUnknownUsageIsFlaggedNotZero(t *testing.T) {
	f := newFixture(t, setup{})
	f.provider.usage = pluginapi.Usage{}
	_, err := f.complete(t, auth.Optimize, "")
	require.NoError(t, err)
	run := f.recorder.last(t).Run
	assert.True(t, run.UsageUnknown)
	assert.False(t, run.PriceUnknown, "the model has a price; only the usage is unknown")
	assert.Zero(t, run.CostUSD)
	assert.Equal(t, true, event(t, f.recorder.last(t), "provider.completed")["usageUnknown"])
}

func TestExactCacheByMode(t *testing.T) {
	t.Run("optimize serves the cached answer without the provider", func(t *testing.T) {
		f := newFixture(t, setup{})
		first, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		res, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteExactCache, res.Route)
		assert.Equal(t, 1, f.provider.called())
		assert.JSONEq(t, answer, string(res.Body))
		rec := f.recorder.last(t)
		assert.Equal(t, ledger.RouteExactCache, rec.Run.Route)
		assert.InDelta(t, f.recorder.recs[0].Run.CostUSD, rec.Run.SavedUSD, 1e-12, "saves what the live call cost")
		assert.Zero(t, rec.Run.CostUSD)
		assert.Equal(t, []string{"request.received", "route.decided", "cache.hit"}, eventTypes(rec))
		assert.Equal(t, first.RunID, event(t, rec, "cache.hit")["sourceRunId"])
	})
	t.Run("observe goes live and counts ghost savings", func(t *testing.T) {
		f := newFixture(t, setup{})
		_, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		res, err := f.complete(t, auth.Observe, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
		assert.Equal(t, 2, f.provider.called())
		run := f.recorder.last(t).Run
		assert.InDelta(t, f.recorder.recs[0].Run.CostUSD, run.GhostSavedUSD, 1e-12)
		assert.Zero(t, run.SavedUSD)
	})
	t.Run("a request with temperature is never served again", func(t *testing.T) {
		f := newFixture(t, setup{})
		for range 2 {
			res, err := f.complete(t, auth.Optimize, `"temperature":0.7,`)
			require.NoError(t, err)
			assert.Equal(t, ledger.RouteLive, res.Route)
		}
		assert.Equal(t, 2, f.provider.called())
	})
	t.Run("an expired answer is not served", func(t *testing.T) {
		f := newFixture(t, setup{})
		_, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		f.clock.Advance(2 * time.Minute)
		res, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
		assert.Equal(t, 2, f.provider.called())
	})
	t.Run("without a cache every call is live", func(t *testing.T) {
		f := newFixture(t, setup{noCache: true})
		for range 2 {
			res, err := f.complete(t, auth.Optimize, "")
			require.NoError(t, err)
			assert.Equal(t, ledger.RouteLive, res.Route)
		}
	})
}

func TestProviderFailureFallsBackToACachedAnswer(t *testing.T) {
	down := &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "overloaded"}
	t.Run("optimize: the expired answer stands in", func(t *testing.T) {
		f := newFixture(t, setup{})
		_, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		f.clock.Advance(2 * time.Minute) // stale, still kept for fallbacks
		f.provider.err = down
		res, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteExactCache, res.Route)
		assert.JSONEq(t, answer, string(res.Body))
		rec := f.recorder.last(t)
		assert.Equal(t, ledger.StatusOK, rec.Run.Status)
		assert.Equal(t, 200, rec.Run.HTTPStatus)
		require.NotNil(t, rec.Run.Explanation.Fallback)
		failed := event(t, rec, "provider.failed")
		assert.InDelta(t, 502, failed["status"], 0, "the provider's failure is recorded as the 502 it would have been")
		assert.InDelta(t, 503, failed["upstreamStatus"], 0, "told as any failed attempt")
		assert.Equal(t, "overloaded", failed["error"])
		assert.Equal(t, true, event(t, rec, "cache.hit")["fallback"])
	})
	t.Run("observe: the failure is answered", func(t *testing.T) {
		f := newFixture(t, setup{})
		_, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		f.provider.err = down
		_, err = f.complete(t, auth.Observe, "")
		require.Error(t, err)
		assert.Equal(t, errs.Upstream, errs.KindOf(err))
		run := f.recorder.last(t).Run
		assert.Equal(t, ledger.StatusError, run.Status)
		assert.Equal(t, 502, run.HTTPStatus)
	})
	t.Run("a refusal the client caused is never covered up", func(t *testing.T) {
		f := newFixture(t, setup{})
		_, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		f.clock.Advance(2 * time.Minute)
		f.provider.err = &pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Message: "bad"}
		_, err = f.complete(t, auth.Optimize, "")
		require.Error(t, err)
		assert.Equal(t, 400, f.recorder.last(t).Run.HTTPStatus)
	})
}

func TestProviderRefusalKeepsItsStatus(t *testing.T) {
	for _, tc := range []struct {
		status, want int
		kind         errs.Kind
	}{
		{422, 422, errs.Invalid},
		{404, 404, errs.NotFound},
		{429, 429, errs.RateLimited},
		{401, 502, errs.Upstream}, // svc's own key refused: not the caller's doing
		{500, 502, errs.Upstream},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			f := newFixture(t, setup{noCache: true})
			f.provider.err = &pluginapi.ProviderError{Status: tc.status, Type: "x", Code: "c", Message: "no: sk-secret"}
			res, err := f.complete(t, auth.Optimize, "")
			require.Error(t, err)
			assert.NotEmpty(t, res.RunID, "the failed run is named")
			assert.Equal(t, tc.kind, errs.KindOf(err))
			assert.Equal(t, tc.want, httpstatus.Of(err))
			assert.Equal(t, "no: [redacted]", errs.Public(err))
			assert.NotContains(t, err.Error(), "sk-secret", "the cause is scrubbed too")
			rec := f.recorder.last(t)
			assert.Equal(t, tc.want, rec.Run.HTTPStatus, "the run records the status the caller got")
			assert.Equal(t, ledger.StatusError, rec.Run.Status)
			failed := event(t, rec, "provider.failed")
			assert.InDelta(t, tc.want, failed["status"], 0)
			assert.InDelta(t, tc.status, failed["upstreamStatus"], 0, "the one attempt, told as any attempt is")
			assert.Equal(t, "no: [redacted]", failed["error"])
			assert.InDelta(t, 1, failed["attempt"], 0)
		})
	}
}

func TestPolicyBlocksBeforeTheProvider(t *testing.T) {
	deny := governance.Decision{Evaluated: true, Enforced: true, Verdict: policy.Verdict{Decision: policy.Deny,
		Rules: []policy.RuleResult{{ID: "no-geography", Effect: policy.Deny}}}}
	f := newFixture(t, setup{governor: &governor{targets: map[policy.Target]bool{policy.Chat: true}, decision: deny}})
	res, err := f.complete(t, auth.Optimize, "")
	require.Error(t, err)
	assert.Equal(t, errs.Forbidden, errs.KindOf(err))
	assert.Equal(t, ledger.RouteBlocked, res.Route)
	assert.Zero(t, f.provider.called())
	rec := f.recorder.last(t)
	assert.Equal(t, ledger.StatusBlocked, rec.Run.Status)
	assert.Equal(t, 403, rec.Run.HTTPStatus)
	assert.Equal(t, []string{"request.received", "policy.evaluated", "route.decided"}, eventTypes(rec))

	t.Run("observe records the verdict and goes live", func(t *testing.T) {
		observe := deny
		observe.Enforced = false
		f := newFixture(t, setup{governor: &governor{targets: map[policy.Target]bool{policy.Chat: true}, decision: observe}})
		res, err := f.complete(t, auth.Observe, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
		assert.Equal(t, "deny", f.recorder.last(t).Run.Explanation.Policy.Decision)
	})
}

func TestUndecidedCallIsNeverLetThrough(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		route  string
	}{
		{"too many approvals pending", errs.E(errs.RateLimited, "too_many_pending_approvals", "wait"), 429, ledger.RouteBlocked},
		{"the policy failed", errors.New("store down"), 500, ledger.RouteLive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, setup{governor: &governor{targets: map[policy.Target]bool{policy.Chat: true}, err: tc.err}})
			_, err := f.complete(t, auth.Optimize, "")
			require.Error(t, err)
			assert.Equal(t, tc.status, httpstatus.Of(err))
			assert.Zero(t, f.provider.called())
			run := f.recorder.last(t).Run
			assert.Equal(t, tc.status, run.HTTPStatus)
			assert.Equal(t, tc.route, run.Route)
		})
	}
}

func TestArtifactRouting(t *testing.T) {
	t.Run("promoted serves an optimize call", func(t *testing.T) {
		f := newFixture(t, setup{artifact: synth.ArtifactPromoted})
		res, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteArtifact, res.Route)
		assert.Zero(t, f.provider.called())
		assert.Contains(t, string(res.Body), `"content":"Paris"`)
		rec := f.recorder.last(t)
		assert.InDelta(t, 0.5, rec.Run.SavedUSD, 1e-12, "saves the pattern's average live cost")
		assert.Equal(t, []string{"request.received", "route.decided", "artifact.served"}, eventTypes(rec))
		assert.Equal(t, "art_1", event(t, rec, "artifact.served")["artifactId"])
	})
	t.Run("observe goes live with ghost savings and shadow evidence", func(t *testing.T) {
		f := newFixture(t, setup{artifact: synth.ArtifactPromoted})
		res, err := f.complete(t, auth.Observe, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
		assert.Equal(t, 1, f.provider.called())
		assert.InDelta(t, 0.5, f.recorder.last(t).Run.GhostSavedUSD, 1e-12)
		assert.Len(t, f.learner.shadows, 1)
	})
	t.Run("shadow goes live and compares", func(t *testing.T) {
		f := newFixture(t, setup{artifact: synth.ArtifactShadow})
		res, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
		require.Len(t, f.learner.shadows, 1)
		assert.Equal(t, synth.OutcomePass, f.learner.shadows[0], "the artifact said Paris, as the live answer did")
		d, ok := f.recorder.last(t).Run.Explanation.Artifact.(*learning.ArtifactDetailOfRun)
		require.True(t, ok)
		assert.False(t, d.Served)
	})
	t.Run("canary sends all but its share live", func(t *testing.T) {
		f := newFixture(t, setup{artifact: synth.ArtifactPromoted, canary: true, share: 0})
		res, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
		d := f.recorder.last(t).Run.Explanation.Artifact.(*learning.ArtifactDetailOfRun)
		assert.True(t, d.Canary)
		assert.Len(t, f.learner.shadows, 1)
	})
	t.Run("canary serves its share", func(t *testing.T) {
		f := newFixture(t, setup{artifact: synth.ArtifactPromoted, canary: true, share: 1})
		res, err := f.complete(t, auth.Optimize, "")
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteArtifact, res.Route)
		assert.True(t, f.recorder.last(t).Run.Explanation.Artifact.(*learning.ArtifactDetailOfRun).Canary)
	})
	t.Run("a request an artifact may not answer goes live", func(t *testing.T) {
		f := newFixture(t, setup{artifact: synth.ArtifactPromoted})
		res, err := f.complete(t, auth.Optimize, `"n":2,`)
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
	})
}

// sink keeps a stream's chunks; it can fail like a client that left.
type sink struct {
	began  bool
	chunks []string
	err    error
}

func (s *sink) Begin(string, string) error { s.began = true; return s.err }

func (s *sink) Chunk(data []byte) error {
	s.chunks = append(s.chunks, string(data))
	return s.err
}

func chunk(content string) pluginapi.ChatChunk {
	return pluginapi.ChatChunk{Data: []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}`)}
}

func TestStream(t *testing.T) {
	usage := pluginapi.ChatChunk{Data: []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`), Usage: &pluginapi.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}, UsageOnly: true}
	stream := []pluginapi.ChatChunk{chunk("Par"), chunk("is"), usage}

	t.Run("live, then replayed from the cache", func(t *testing.T) {
		f := newFixture(t, setup{})
		f.provider.chunks = stream
		s := &sink{}
		res, err := f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), s)
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
		assert.Len(t, s.chunks, 2, "the usage chunk svc asked for is not passed on")
		run := f.recorder.last(t).Run
		assert.Equal(t, int64(12), run.TotalTokens)
		assert.Equal(t, 200, run.HTTPStatus)

		again := &sink{}
		res, err = f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), again)
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteExactCache, res.Route)
		assert.Equal(t, 1, f.provider.called())
		require.NotEmpty(t, again.chunks)
		assert.Contains(t, again.chunks[0], `"content":"Paris"`, "the assembled answer is replayed")
	})
	t.Run("a replay keeps the prompt cache's counts in its usage", func(t *testing.T) {
		f := newFixture(t, setup{})
		cached := pluginapi.ChatChunk{Data: []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],` +
			`"usage":{"prompt_tokens":110,"completion_tokens":2,"total_tokens":112,"prompt_tokens_details":{"cached_tokens":80},"cache_creation_input_tokens":20}}`),
			Usage: &pluginapi.Usage{PromptTokens: 110, CompletionTokens: 2, TotalTokens: 112, CachedPromptTokens: 80, CacheWriteTokens: 20}, UsageOnly: true}
		f.provider.chunks = []pluginapi.ChatChunk{chunk("Par"), chunk("is"), cached}
		withUsage := question(t, `"stream":true,"stream_options":{"include_usage":true},`)
		_, err := f.gw.Stream(context.Background(), caller(auth.Optimize), withUsage, &sink{})
		require.NoError(t, err)
		again := &sink{}
		res, err := f.gw.Stream(context.Background(), caller(auth.Optimize), withUsage, again)
		require.NoError(t, err)
		require.Equal(t, ledger.RouteExactCache, res.Route)
		last := again.chunks[len(again.chunks)-1]
		var u struct {
			Usage map[string]any `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(last), &u), last)
		assert.Equal(t, map[string]any{"prompt_tokens": 110.0, "completion_tokens": 2.0, "total_tokens": 112.0,
			"prompt_tokens_details": map[string]any{"cached_tokens": 80.0}, "cache_creation_input_tokens": 20.0}, u.Usage)
	})
	t.Run("a client that left is recorded as 499", func(t *testing.T) {
		f := newFixture(t, setup{noCache: true})
		f.provider.chunks = stream
		_, err := f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), &sink{err: errors.New("broken pipe")})
		require.ErrorIs(t, err, context.Canceled)
		rec := f.recorder.last(t)
		assert.Equal(t, httpstatus.ClientClosed, rec.Run.HTTPStatus)
		assert.True(t, rec.Run.UsageUnknown, "the provider was called and may bill")
		assert.Contains(t, eventTypes(rec), "provider.cancelled")
	})
	t.Run("a provider failure before the first chunk is answered with its status", func(t *testing.T) {
		f := newFixture(t, setup{noCache: true})
		f.provider.err = &pluginapi.ProviderError{Status: 422, Type: "invalid_request_error", Message: "no tools"}
		s := &sink{}
		_, err := f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), s)
		require.Error(t, err)
		assert.False(t, s.began)
		assert.Equal(t, 422, httpstatus.Of(err))
		assert.Equal(t, 422, f.recorder.last(t).Run.HTTPStatus)
	})
}

// A request's origin is kept in its request.received event and never
// reaches the provider.
func TestOriginIsKeptWithTheRun(t *testing.T) {
	f := newFixture(t, setup{})
	req := question(t, "")
	req.Origin = json.RawMessage(`{"instructions":"Be brief.","metadata":{"k":"v"}}`)
	_, err := f.gw.Complete(context.Background(), caller(auth.Optimize), req)
	require.NoError(t, err)
	rec := f.recorder.last(t)
	assert.Equal(t, map[string]any{"instructions": "Be brief.", "metadata": map[string]any{"k": "v"}},
		event(t, rec, "request.received")["origin"])
	assert.NotContains(t, string(rec.Run.Request), "Be brief.")

	_, err = f.complete(t, auth.Optimize, "")
	require.NoError(t, err)
	_, has := event(t, f.recorder.last(t), "request.received")["origin"]
	assert.False(t, has, "a request without one keeps none")
}

// A stream longer than svc keeps: relayed whole, its record cut at the
// bound and not cached; held to judge its tool calls, it fails.
func TestAStreamLargerThanSvcKeeps(t *testing.T) {
	big := chunk(strings.Repeat("a", 1<<20))
	stream := make([]pluginapi.ChatChunk, 40) // 40 MiB, past the 32 svc keeps
	for i := range stream {
		stream[i] = big
	}
	t.Run("relayed", func(t *testing.T) {
		f := newFixture(t, setup{})
		f.provider.chunks = stream
		s := &sink{}
		res, err := f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), s)
		require.NoError(t, err)
		assert.Equal(t, ledger.RouteLive, res.Route)
		assert.Len(t, s.chunks, 40, "the client has the whole answer")
		run := f.recorder.last(t).Run
		assert.Less(t, len(run.Response), 33<<20)
		var record struct {
			Chunks []json.RawMessage `json:"chunks"`
			Cut    bool              `json:"cut"`
		}
		require.NoError(t, json.Unmarshal(run.Response, &record))
		assert.True(t, record.Cut)
		assert.Less(t, len(record.Chunks), 32)

		_, err = f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), &sink{})
		require.NoError(t, err)
		assert.Equal(t, 2, f.provider.called(), "an answer svc did not keep whole is not cached")
	})
	t.Run("held", func(t *testing.T) {
		rec := &recorder{}
		s := &sink{}
		_, err := heldStreams(rec, &provider{chunks: stream}).Stream(context.Background(), caller(auth.Optimize), toolStream(t), s)
		require.Error(t, err)
		assert.Equal(t, "upstream_response_too_large", errs.Code(err))
		assert.Equal(t, 502, httpstatus.Of(err))
		assert.False(t, s.began, "nothing reached the client")
		assert.Equal(t, 502, rec.last(t).Run.HTTPStatus)
	})
}

// A chunk that cannot go to the client as one event (no JSON, or JSON
// over several lines, from a provider of any origin) ends the stream as
// the provider's failure, and is not passed on.
func TestAStreamChunkThatIsNotOneLineOfJSONEndsTheStream(t *testing.T) {
	for name, bad := range map[string]string{
		"not JSON":      `{this is not json}`,
		"several lines": "{\"a\":1}\ndata: injected",
		"a line end":    "{\"a\":\n1}",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, setup{noCache: true})
			f.provider.chunks = []pluginapi.ChatChunk{chunk("Par"), {Data: []byte(bad)}, chunk("is")}
			s := &sink{}
			_, err := f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), s)
			require.Error(t, err)
			assert.Equal(t, "upstream_bad_response", errs.Code(err))
			assert.Len(t, s.chunks, 1, "the chunks before it went on, it did not")
			run := f.recorder.last(t).Run
			assert.Equal(t, 502, run.HTTPStatus)
			assert.True(t, json.Valid(run.Response), "the run keeps what went on: %s", run.Response)
			failed := events(t, f.recorder.last(t), "provider.failed")
			require.Len(t, failed, 1)
			assert.InDelta(t, 502, failed[0]["status"], 0)
		})
	}
}

// refusingSink carries chunks until one it cannot, which it refuses as the
// provider's answer (a translation past what it holds).
type refusingSink struct{ sink }

func (s *refusingSink) Chunk(data []byte) error {
	if len(s.chunks) == 1 {
		return &pluginapi.ProviderError{Status: 502, Type: "upstream_error", Code: "upstream_response_too_large", Message: "too large to translate"}
	}
	return s.sink.Chunk(data)
}

func TestASinkRefusingTheAnswerFailsTheCallNotTheClient(t *testing.T) {
	f := newFixture(t, setup{noCache: true})
	f.provider.chunks = []pluginapi.ChatChunk{chunk("Par"), chunk("is"), chunk("!")}
	_, err := f.gw.Stream(context.Background(), caller(auth.Optimize), question(t, `"stream":true,`), &refusingSink{})
	require.Error(t, err)
	assert.Equal(t, "upstream_response_too_large", errs.Code(err))
	assert.Equal(t, 502, f.recorder.last(t).Run.HTTPStatus, "not a client that left (499)")
}
