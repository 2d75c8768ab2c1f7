package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// flakyProvider answers until told to fail like an upstream outage.
type flakyProvider struct {
	countingProvider
	down atomic.Bool
}

func (f *flakyProvider) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if f.down.Load() {
		f.calls.Add(1)
		return pluginapi.ChatResponse{}, &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "upstream is down"}
	}
	return f.countingProvider.Chat(ctx, req)
}

func (f *flakyProvider) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	if f.down.Load() {
		f.calls.Add(1)
		return &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "upstream is down"}
	}
	return f.countingProvider.StreamChat(ctx, req, send)
}

func cachingServer(t *testing.T) (*testServer, *flakyProvider) {
	t.Helper()
	p := &flakyProvider{countingProvider: countingProvider{Provider: mockProvider(t)}}
	return newServerWith(t, bootstrap, nil, p), p
}

func runOf(t *testing.T, ts *testServer, res response) map[string]any {
	t.Helper()
	return ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))["run"].(map[string]any)
}

func explanation(run map[string]any) map[string]any {
	return run["routeExplanation"].(map[string]any)
}

func TestExactCacheServesTheIdenticalRequest(t *testing.T) {
	ts, p := cachingServer(t)
	first := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusOK, first.status, first.body)
	assert.Equal(t, "live", first.header.Get("x-svc-route"))
	live := runOf(t, ts, first)
	assert.Equal(t, "no cached answer for this request", rejectedReason(explanation(live), "exact_cache"))

	// The same request with its keys in another order and other spacing.
	reordered := `{"messages":[{"content":"Classify the ticket as one of: billing, bug, feature_request. Answer with the label only.","role":"system"},` +
		` {"role":"user","content":"I was charged twice for my invoice this month."}],   "model":"gpt-4o-mini"}`
	second := ts.call(t, "POST", "/v1/chat/completions", bootstrap, reordered)
	require.Equal(t, http.StatusOK, second.status, second.body)
	assert.Equal(t, "exact_cache", second.header.Get("x-svc-route"))
	assert.JSONEq(t, first.body, second.body, "the cached answer, as the provider gave it")
	assert.EqualValues(t, 1, p.calls.Load(), "the provider answered once")

	hit := runOf(t, ts, second)
	assert.Equal(t, "exact_cache", hit["route"])
	assert.Equal(t, 0.0, hit["costUsd"], "a cache hit costs nothing")
	assert.InDelta(t, live["costUsd"], hit["savedUsd"], 1e-12, "it saved what the live call cost")
	ex := explanation(hit)
	assert.Equal(t, "exact_cache", ex["route"])
	assert.InDelta(t, live["costUsd"], ex["estimatedSavingsUsd"], 1e-12)
	c := ex["cache"].(map[string]any)
	assert.Equal(t, "exact_response", c["tier"])
	assert.Equal(t, "fresh", c["lookup"])
	assert.Equal(t, true, c["served"])
	assert.Equal(t, live["id"], c["sourceRunId"])
	assert.NotEmpty(t, rejectedReason(ex, "live"))
	var types []string
	for _, e := range ts.run(t, bootstrap, hit["id"].(string))["events"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	assert.Equal(t, []string{"request.received", "route.decided", "cache.hit"}, types)

	stats := ts.call(t, "GET", "/api/v1/cache/stats", bootstrap, "").json["stats"].([]any)
	assert.Equal(t, map[string]any{"cacheType": "exact_response", "entries": 1.0, "hits": 1.0}, stats[0])

	// What changes the answer changes the key: another subject, another app,
	// a different message.
	for _, h := range [][]string{{"X-Svc-Subject", "user-2"}, {"X-Svc-App", "other"}} {
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage, h...)
		assert.Equal(t, "live", res.header.Get("x-svc-route"), h[0])
	}
}

func rejectedReason(ex map[string]any, route string) string {
	for _, r := range ex["rejected"].([]any) {
		if r.(map[string]any)["route"] == route {
			return r.(map[string]any)["reason"].(string)
		}
	}
	return ""
}

func TestExactCacheRules(t *testing.T) {
	ts, p := cachingServer(t)
	warm := strings.Replace(triage, `{"model"`, `{"temperature":0.8,"model"`, 1)
	for range 2 {
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, warm)
		assert.Equal(t, "live", res.header.Get("x-svc-route"))
		assert.Equal(t, "not cacheable: temperature is not 0", rejectedReason(explanation(runOf(t, ts, res)), "exact_cache"))
	}
	assert.EqualValues(t, 2, p.calls.Load())

	// Never across tenants.
	ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirs, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize})
	require.NoError(t, err)
	res := ts.call(t, "POST", "/v1/chat/completions", theirs, triage)
	assert.Equal(t, "live", res.header.Get("x-svc-route"), "another tenant never gets this tenant's answer")

	// Expiry (SVC_CACHE_TTL, an hour by default), with time injected.
	ts.clock.Advance(time.Hour)
	res = ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	assert.Equal(t, "live", res.header.Get("x-svc-route"))
	assert.Contains(t, rejectedReason(explanation(runOf(t, ts, res)), "exact_cache"), "expired")
	res = ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	assert.Equal(t, "exact_cache", res.header.Get("x-svc-route"), "the fresh answer replaced the expired one")
}

func TestObserveModeRecordsGhostSavings(t *testing.T) {
	ts, p := cachingServer(t)
	live := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	_, observer := ts.createKey(t, bootstrap, `{"name":"watch","mode":"observe"}`)
	res := ts.call(t, "POST", "/v1/chat/completions", observer, triage)
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, "live", res.header.Get("x-svc-route"), "observe keys always get the live answer")
	assert.EqualValues(t, 2, p.calls.Load())
	run := runOf(t, ts, res)
	cost := runOf(t, ts, live)["costUsd"].(float64)
	assert.InDelta(t, cost, run["ghostSavedUsd"], 1e-12, "what the cache would have saved")
	assert.Equal(t, 0.0, run["savedUsd"])
	assert.Contains(t, rejectedReason(explanation(run), "exact_cache"), "observe mode")
}

func TestACachedAnswerStreams(t *testing.T) {
	ts, p := cachingServer(t)
	plain := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusOK, plain.status)
	streamed := strings.Replace(triage, `{"model"`, `{"stream":true,"stream_options":{"include_usage":true},"model"`, 1)
	res, events := ts.stream(t, bootstrap, streamed)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "exact_cache", res.Header.Get("x-svc-route"))
	assert.Equal(t, "[DONE]", events[len(events)-1])
	var text strings.Builder
	var usage bool
	for _, e := range events[:len(events)-1] {
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(e), &c), e)
		assert.Equal(t, "chat.completion.chunk", c.Object)
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
		usage = usage || c.Usage != nil
	}
	assert.Equal(t, decodeCompletion(t, plain.body).Choices[0].Message.Content, text.String())
	assert.True(t, usage, "the usage chunk the client asked for")
	assert.EqualValues(t, 1, p.calls.Load())

	// And a streamed answer is cached for the plain request.
	other := strings.Replace(streamed, "twice", "three times", 1)
	_, _ = ts.stream(t, bootstrap, other)
	again := ts.call(t, "POST", "/v1/chat/completions", bootstrap, strings.Replace(triage, "twice", "three times", 1))
	assert.Equal(t, "exact_cache", again.header.Get("x-svc-route"))
}

func TestAFailingProviderFallsBackToACachedAnswer(t *testing.T) {
	ts, p := cachingServer(t)
	first := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusOK, first.status)
	ts.clock.Advance(2 * time.Hour) // expired
	p.down.Store(true)

	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "exact_cache", res.header.Get("x-svc-route"))
	assert.JSONEq(t, first.body, res.body)
	run := runOf(t, ts, res)
	fb := explanation(run)["fallback"].(map[string]any)
	assert.Equal(t, true, fb["used"])
	assert.Equal(t, true, fb["stale"], "even an expired answer stands in")
	assert.Contains(t, fb["reason"], "upstream is down")

	_, events := ts.stream(t, bootstrap, strings.Replace(triage, `{"model"`, `{"stream":true,"model"`, 1))
	assert.Equal(t, "[DONE]", events[len(events)-1], "a stream falls back too")

	miss := ts.call(t, "POST", "/v1/chat/completions", bootstrap, strings.Replace(triage, "twice", "once", 1))
	assert.Equal(t, http.StatusBadGateway, miss.status, "without a cached answer the failure is the provider's")

	_, observer := ts.createKey(t, bootstrap, `{"name":"watch","mode":"observe"}`)
	assert.Equal(t, http.StatusBadGateway, ts.call(t, "POST", "/v1/chat/completions", observer, triage).status,
		"observe keys are never served from the cache")
}

func TestPoliciesComeBeforeTheCache(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	ok := ts.call(t, "POST", "/v1/chat/completions", bootstrap, bigModel, "X-Svc-App", "batch")
	require.Equal(t, http.StatusOK, ok.status)
	require.Equal(t, "exact_cache", ts.call(t, "POST", "/v1/chat/completions", bootstrap, bigModel, "X-Svc-App", "batch").header.Get("x-svc-route"))
	// Same body, an app the rule denies: blocked, though an answer is cached
	// for another app (and the key would differ anyway).
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, bigModel, "X-Svc-App", "support")
	assert.Equal(t, http.StatusForbidden, res.status)
}

func TestCacheInvalidation(t *testing.T) {
	ts, _ := cachingServer(t)
	ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	store := ts.call(t, "POST", "/api/v1/tool-cache/store", bootstrap, `{"toolName":"lookup","subject":"u1","args":{"id":1},"result":{"ok":true}}`)
	require.Equal(t, http.StatusCreated, store.status, store.body)

	_, member := ts.createKey(t, bootstrap, `{"name":"member","mode":"optimize"}`)
	assert.Equal(t, http.StatusForbidden, ts.call(t, "POST", "/api/v1/cache/invalidate", member, `{}`).status, "admin only")
	assert.Equal(t, http.StatusBadRequest, ts.call(t, "POST", "/api/v1/cache/invalidate", bootstrap, `{"cacheType":"everything"}`).status)

	res := ts.call(t, "POST", "/api/v1/cache/invalidate", bootstrap, `{"cacheType":"exact_response"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	stats := ts.call(t, "GET", "/api/v1/cache/stats", bootstrap, "").json["stats"].([]any)
	assert.InDelta(t, 0, stats[0].(map[string]any)["entries"], 0)
	assert.InDelta(t, 1, stats[1].(map[string]any)["entries"], 0, "the other tiers stay")
	assert.Equal(t, "live", ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage).header.Get("x-svc-route"))

	res = ts.call(t, "POST", "/api/v1/cache/invalidate", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	for _, s := range ts.call(t, "GET", "/api/v1/cache/stats", bootstrap, "").json["stats"].([]any) {
		assert.InDelta(t, 0, s.(map[string]any)["entries"], 0, s)
	}
}

func TestToolCache(t *testing.T) {
	ts, _ := cachingServer(t)
	check := func(token, body string) map[string]any {
		res := ts.call(t, "POST", "/api/v1/tool-cache/check", token, body)
		require.Equal(t, http.StatusOK, res.status, res.body)
		return res.json
	}
	const call = `{"toolName":"lookup_invoice","subject":"u1","args":{"id":42,"fields":["total"]}}`
	assert.Equal(t, map[string]any{"hit": false}, check(bootstrap, call))

	res := ts.call(t, "POST", "/api/v1/tool-cache/store", bootstrap,
		`{"toolName":"lookup_invoice","subject":"u1","args":{"fields":["total"],"id":42},"result":{"total":99.5},"ttlSeconds":60}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	assert.Equal(t, true, res.json["stored"])
	assert.NotEmpty(t, res.json["expiresAt"])

	got := check(bootstrap, call)
	assert.Equal(t, true, got["hit"], "the same call, its arguments in another order")
	assert.Equal(t, map[string]any{"total": 99.5}, got["result"])
	assert.Equal(t, map[string]any{"hit": false}, check(bootstrap, strings.Replace(call, `"u1"`, `"u2"`, 1)), "another subject")
	assert.Equal(t, map[string]any{"hit": false}, check(bootstrap, strings.Replace(call, "42", "43", 1)), "other arguments")

	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirs, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"hit": false}, check(theirs, call), "never across tenants")

	ts.clock.Advance(60 * time.Second)
	assert.Equal(t, map[string]any{"hit": false}, check(bootstrap, call), "an expired result is never served")

	for _, body := range []string{
		`{"subject":"u1","args":{},"result":1}`,
		`{"toolName":"x","args":{},"result":1,"ttlSeconds":0}`,
		`{"toolName":"x","args":{},"result":1,"ttlSeconds":-5}`,
		`{"toolName":"x","args":{},"result":1,"ttlSeconds":99999999}`,
		`{"toolName":"x","args":{}}`,
		`{"toolName":"x","args":{},"result":1,"extra":1}`,
	} {
		assert.Equal(t, http.StatusBadRequest, ts.call(t, "POST", "/api/v1/tool-cache/store", bootstrap, body).status, body)
	}
	assert.Equal(t, http.StatusBadRequest, ts.call(t, "POST", "/api/v1/tool-cache/check", bootstrap, `{"args":{}}`).status)
}

func TestSavings(t *testing.T) {
	ts, _ := cachingServer(t)
	empty := ts.call(t, "GET", "/api/v1/savings", bootstrap, "")
	require.Equal(t, http.StatusOK, empty.status, empty.body)
	for _, k := range []string{"totalRuns", "liveRuns", "optimizedRuns", "blockedRuns", "totalCostUsd", "totalSavedUsd",
		"ghostSavedUsd", "totalSavedMs", "cacheHitRate", "artifactHitRate", "somTokensSaved"} {
		assert.Equal(t, 0.0, empty.json[k], k)
	}
	assert.Equal(t, []any{}, empty.json["daily"])

	live := runOf(t, ts, ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage))
	hits := []map[string]any{
		runOf(t, ts, ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)),
		runOf(t, ts, ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)),
	}
	_, observer := ts.createKey(t, bootstrap, `{"name":"watch","mode":"observe"}`)
	ghost := runOf(t, ts, ts.call(t, "POST", "/v1/chat/completions", observer, triage))

	res := ts.call(t, "GET", "/api/v1/savings", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	s := res.json
	cost := live["costUsd"].(float64)
	assert.InDelta(t, 4, s["totalRuns"], 0)
	assert.InDelta(t, 2, s["liveRuns"], 0)
	assert.InDelta(t, 2, s["optimizedRuns"], 0)
	assert.InDelta(t, 0, s["blockedRuns"], 0)
	assert.InDelta(t, cost+ghost["costUsd"].(float64), s["totalCostUsd"], 1e-12)
	assert.InDelta(t, 2*cost, s["totalSavedUsd"], 1e-12, "each hit saved the cost of the live call")
	assert.InDelta(t, cost, s["ghostSavedUsd"], 1e-12)
	assert.InDelta(t, hits[0]["savedMs"].(float64)+hits[1]["savedMs"].(float64), s["totalSavedMs"], 1e-9)
	assert.InDelta(t, 0.5, s["cacheHitRate"], 1e-12)
	assert.InDelta(t, 0, s["artifactHitRate"], 0)
	daily := s["daily"].([]any)
	require.Len(t, daily, 1)
	assert.InDelta(t, 4, daily[0].(map[string]any)["runs"], 0)

	later := ts.call(t, "GET", "/api/v1/savings?since=2999-01-01", bootstrap, "")
	require.Equal(t, http.StatusOK, later.status)
	assert.InDelta(t, 0, later.json["totalRuns"], 0)
	assert.Equal(t, "2999-01-01T00:00:00Z", later.json["since"])
	assert.Equal(t, http.StatusBadRequest, ts.call(t, "GET", "/api/v1/savings?since=yesterday", bootstrap, "").status)
}

// echoProvider answers with the last message's text.
type echoProvider struct{ fakeProvider }

func (*echoProvider) Chat(_ context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	var r struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(req.Body, &r)
	content, _ := json.Marshal("You said: " + r.Messages[len(r.Messages)-1].Content)
	return pluginapi.ChatResponse{Body: []byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":` +
		string(content) + `}}]}`), Usage: pluginapi.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}, nil
}

func TestRedactionMasksWhatIsStoredNotWhatIsAnswered(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &echoProvider{})
	const pii = `mail bob@example.com, card 4111 1111 1111 1111, from 203.0.113.9, call +1 415 555 0132, key sk-abcdefghijklmnopqrstuv`
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + pii + `"}]}`

	plain := ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
	require.Equal(t, http.StatusOK, plain.status)
	stored := ts.run(t, bootstrap, plain.header.Get("x-svc-run-id"))["run"].(map[string]any)
	assert.Contains(t, mustMarshal(t, stored["request"]), "bob@example.com", "redaction is off by default")

	require.Equal(t, http.StatusOK, ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"redaction","value":true}`).status)
	// Another message, so that the answer does not come from the cache.
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, strings.Replace(body, "mail bob", "mail to bob", 1))
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Contains(t, res.body, "bob@example.com", "the caller gets the real answer")
	assert.Contains(t, res.body, "4111 1111 1111 1111")

	id := res.header.Get("x-svc-run-id")
	run := ts.run(t, bootstrap, id)["run"].(map[string]any)
	for _, text := range []string{mustMarshal(t, run["request"]), mustMarshal(t, run["response"])} {
		for _, secret := range []string{"bob@example.com", "4111 1111 1111 1111", "203.0.113.9", "415 555 0132", "sk-abcdefghijklmnopqrstuv"} {
			assert.NotContains(t, text, secret)
		}
		for _, mask := range []string{"[email]", "[card]", "[ip]", "[phone]", "[secret]"} {
			assert.Contains(t, text, mask)
		}
	}
	bundle := ts.call(t, "GET", "/api/v1/runs/"+id+"/replay-bundle", bootstrap, "")
	assert.NotContains(t, bundle.body, "bob@example.com")
}

// BenchmarkExactCacheHit is a cache hit served through the whole HTTP
// handler: identification, validation, policies, the cache, the run
// journaled (as durably as any other) and the answer written. It reports
// the median alongside the mean.
func BenchmarkExactCacheHit(b *testing.B) {
	ts := newServerWith(b, bootstrap, nil, &fakeProvider{})
	h := ts.Config.Handler
	serve := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(triage))
		req.Header.Set("Authorization", "Bearer "+bootstrap)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	serve() // the live call that fills the cache
	if rec := serve(); rec.Header().Get("x-svc-route") != "exact_cache" {
		b.Fatalf("route %q, want exact_cache", rec.Header().Get("x-svc-route"))
	}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		serve()
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkLiveCall is a live call through the whole HTTP handler with the
// provider in the same process: svc's own work on a call's path (everything
// but the plugin hop), each request one the cache has not seen.
func BenchmarkLiveCall(b *testing.B) {
	ts := newServerWith(b, bootstrap, nil, &fakeProvider{})
	h := ts.Config.Handler
	bodies := make([]string, b.N)
	for i := range bodies {
		bodies[i] = strings.Replace(triage, "charged twice", "charged twice ("+strconv.Itoa(i)+")", 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(bodies[i]))
		req.Header.Set("Authorization", "Bearer "+bootstrap)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Header().Get("x-svc-route") != "live" {
			b.Fatalf("route %q, want live", rec.Header().Get("x-svc-route"))
		}
	}
}

func TestRedactionOfAStreamedAnswerSeesTheWholeText(t *testing.T) {
	for name, p := range map[string]*splitProvider{"plain chunks": {}, "with log probabilities and null members": {extras: true}} {
		t.Run(name, func(t *testing.T) {
			ts2 := newServerWith(t, bootstrap, nil, p)
			require.Equal(t, http.StatusOK, ts2.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"redaction","value":true}`).status)
			res, events := ts2.stream(t, bootstrap, `{"model":"gpt-4o-mini","stream":true,"temperature":1,"messages":[{"role":"user","content":"hi"}]}`)
			require.Equal(t, http.StatusOK, res.StatusCode)
			assert.Contains(t, strings.Join(events, ""), "john.smith", "the caller gets the answer as it was")
			stored := mustMarshal(t, ts2.run(t, bootstrap, res.Header.Get("x-svc-run-id"))["run"].(map[string]any)["response"])
			assert.NotContains(t, stored, "john.smith")
			assert.NotContains(t, stored, "example.com")
			assert.Contains(t, stored, "[email]")
		})
	}
}

// splitProvider streams an email address split across two chunks; with
// extras, the chunks carry log probabilities and members set to null, as
// some providers' do.
type splitProvider struct {
	fakeProvider
	extras bool
}

func (p *splitProvider) StreamChat(_ context.Context, _ pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	for _, part := range []string{"Write to john.smith", "@example.com today."} {
		choice := map[string]any{"index": 0, "delta": map[string]any{"content": part}}
		if p.extras {
			choice["delta"] = map[string]any{"content": part, "function_call": nil, "audio": nil}
			choice["logprobs"] = map[string]any{"content": []any{map[string]any{"token": part, "logprob": -0.1}}}
		}
		b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk", "choices": []any{choice}})
		if err := send(pluginapi.ChatChunk{Data: b}); err != nil {
			return err
		}
	}
	return nil
}

func TestABlockedCachedAnswerSavesNothing(t *testing.T) {
	// The answer asks to refund 900; the rule holds refunds above 500.
	answer := `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"refund","arguments":"{\"amount\":900}"}}]}}]}`
	ts := policyServer(t, &fixedAnswer{body: answer})
	ts.cache.Store(tenant.DefaultID, cache.ExactResponse, mustKey(t, triage), []byte(answer), cache.Meta{RunID: "run_x", CostUSD: 0.5}, 0)
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	run := runOf(t, ts, res)
	assert.Equal(t, "blocked", run["route"])
	assert.Equal(t, 0.0, run["savedUsd"], "an answer that was not served saved nothing")
	assert.Equal(t, false, explanation(run)["cache"].(map[string]any)["served"])
	stats := ts.call(t, "GET", "/api/v1/cache/stats", bootstrap, "").json["stats"].([]any)
	assert.InDelta(t, 0, stats[0].(map[string]any)["hits"], 0, "nor does it count as a hit")
}

func mustKey(t *testing.T, body string) string {
	t.Helper()
	k, err := cache.ExactKey(tenant.DefaultID, "", "", []byte(body))
	require.NoError(t, err)
	return k
}

// chunkedProvider streams fixed chunks.
type chunkedProvider struct {
	fakeProvider
	chunks []string
}

func (p *chunkedProvider) StreamChat(_ context.Context, _ pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	for _, c := range p.chunks {
		if err := send(pluginapi.ChatChunk{Data: []byte(c)}); err != nil {
			return err
		}
	}
	return send(pluginapi.ChatChunk{UsageOnly: true, Usage: &pluginapi.Usage{PromptTokens: 5, CompletionTokens: 7, TotalTokens: 12},
		Data: []byte(`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`)})
}

// A streamed answer is cached only as what it was: a refusal stays a
// refusal, and what cannot be put back whole (log probabilities) is not
// cached at all.
func TestAStreamedAnswerIsCachedWhole(t *testing.T) {
	const head = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","system_fingerprint":"fp_1",`
	refusal := []string{
		head + `"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""},"logprobs":null,"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"refusal":"I can't help "},"logprobs":null,"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"refusal":"with that."},"logprobs":null,"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
	}
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"something disallowed"}]}`
	streamed := strings.Replace(body, `{"model"`, `{"stream":true,"model"`, 1)

	ts := newServerWith(t, bootstrap, nil, &chunkedProvider{chunks: refusal})
	ts.stream(t, bootstrap, streamed)
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
	require.Equal(t, "exact_cache", res.header.Get("x-svc-route"), res.body)
	var c struct {
		SystemFingerprint string `json:"system_fingerprint"`
		Choices           []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.body), &c))
	require.Len(t, c.Choices, 1)
	assert.Nil(t, c.Choices[0].Message.Content, "a refusal has no content")
	require.NotNil(t, c.Choices[0].Message.Refusal, res.body)
	assert.Equal(t, "I can't help with that.", *c.Choices[0].Message.Refusal)
	assert.Equal(t, "fp_1", c.SystemFingerprint)

	withNullMembers := []string{
		head + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","function_call":null,"tool_calls":null,"audio":null},"logprobs":null,"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"content":"Hi","annotations":[]},"logprobs":null,"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
	}
	ts = newServerWith(t, bootstrap, nil, &chunkedProvider{chunks: withNullMembers})
	ts.stream(t, bootstrap, streamed)
	res = ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
	assert.Equal(t, "exact_cache", res.header.Get("x-svc-route"), "members set to nothing leave nothing out")

	withLogprobs := []string{
		head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi","logprob":-0.1,"bytes":[72,105],"top_logprobs":[]}]},"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
	}
	ts = newServerWith(t, bootstrap, nil, &chunkedProvider{chunks: withLogprobs})
	ts.stream(t, bootstrap, streamed)
	res = ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
	assert.Equal(t, "live", res.header.Get("x-svc-route"), "an answer with logprobs is not cached without them")
}
