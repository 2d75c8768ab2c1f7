package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// scrape is one read of GET /metrics: the text and its families, parsed
// by Prometheus' own parser.
type scrape struct {
	text     string
	families map[string]*dto.MetricFamily
}

// scrapeMetrics reads GET /metrics as the bootstrap token.
func (ts *testServer) scrapeMetrics(t *testing.T) scrape {
	t.Helper()
	res := ts.call(t, "GET", "/metrics", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	return parseMetrics(t, res.body)
}

func parseMetrics(t *testing.T, text string) scrape {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, "the metrics do not parse")
	return scrape{text: text, families: fams}
}

// scrapeAfter scrapes until the gateway requests counted reach n: a
// request is counted once its answer ended, which its client may see
// before.
func (ts *testServer) scrapeAfter(t *testing.T, n float64) scrape {
	t.Helper()
	var s scrape
	require.Eventually(t, func() bool {
		s = ts.scrapeMetrics(t)
		return s.sum("svc_gateway_requests_total") >= n
	}, 10*time.Second, 5*time.Millisecond)
	require.InDelta(t, n, s.sum("svc_gateway_requests_total"), 0, "one count per gateway request")
	return s
}

// value is the series of name with exactly labels: a counter's value, a
// histogram's count; 0 when there is no such series.
func (s scrape) value(name string, labels map[string]string) float64 {
	f := s.families[name]
	if f == nil {
		return 0
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				match = false
				break
			}
		}
		if match {
			return sampleValue(m)
		}
	}
	return 0
}

// sum adds every series of name.
func (s scrape) sum(name string) float64 {
	total := 0.0
	if f := s.families[name]; f != nil {
		for _, m := range f.GetMetric() {
			total += sampleValue(m)
		}
	}
	return total
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

// labelsOf lists the label names of name's series.
func (s scrape) labelsOf(name string) map[string]bool {
	out := map[string]bool{}
	if f := s.families[name]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				out[l.GetName()] = true
			}
		}
	}
	return out
}

// promtoolCheck runs promtool check metrics on the scraped text.
func promtoolCheck(t *testing.T, text string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("SKIPPED: promtool is not on PATH, so the metrics were not checked by it (apt-get install prometheus; .ci/run installs it)")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "promtool check metrics:\n%s", out.String())
}

// switchProvider is the mock provider, failing while failing is set.
type switchProvider struct {
	pluginapi.Provider
	failing atomic.Bool
}

var errProviderDown = &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "overloaded"}

func (p *switchProvider) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if p.failing.Load() {
		return pluginapi.ChatResponse{}, errProviderDown
	}
	return p.Provider.Chat(ctx, req)
}

func (p *switchProvider) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	if p.failing.Load() {
		return errProviderDown
	}
	return p.Provider.StreamChat(ctx, req, send)
}

// expected is what one gateway call must move in the metrics.
type expected struct {
	endpoint, route, statusClass, app string
	streamed                          bool
	// lookups and hits of the exact cache tier.
	lookups, hits float64
	artifactType  string
	// ghost: the call has ghost savings.
	ghost bool
}

// checkCall asserts that the scrapes before and after one gateway call
// differ by that call, whose answer is res, and nothing else of the
// gateway's.
func (ts *testServer) checkCall(t *testing.T, before, after scrape, res response, want expected) {
	t.Helper()
	runID := res.header.Get("x-svc-run-id")
	require.NotEmpty(t, runID, res.body)
	run := ts.run(t, bootstrap, runID)["run"].(map[string]any)
	require.Equal(t, want.route, run["route"])
	provider, modelName, mode := run["provider"].(string), run["model"].(string), run["mode"].(string)
	delta := func(name string, labels map[string]string) float64 {
		return after.value(name, labels) - before.value(name, labels)
	}
	sumDelta := func(name string) float64 { return after.sum(name) - before.sum(name) }

	assert.InDelta(t, 1, delta("svc_gateway_requests_total", map[string]string{"endpoint": want.endpoint, "route": want.route, "provider": provider,
		"model": modelName, "status_class": want.statusClass, "mode": mode, "app": want.app}), 0, "requests_total")
	assert.InDelta(t, 1, sumDelta("svc_gateway_requests_total"), 0)
	series := map[string]string{"endpoint": want.endpoint, "route": want.route, "provider": provider, "model": modelName}
	assert.InDelta(t, 1, delta("svc_gateway_request_duration_seconds", series), 0, "request_duration")
	assert.InDelta(t, 1, delta("svc_gateway_overhead_seconds", map[string]string{"endpoint": want.endpoint, "route": want.route}), 0, "overhead")
	if want.streamed {
		assert.InDelta(t, 1, delta("svc_gateway_time_to_first_byte_seconds", series), 0, "time to first byte")
	} else {
		assert.InDelta(t, 0, sumDelta("svc_gateway_time_to_first_byte_seconds"), 0, "no first byte of an answer not streamed")
	}

	in, out := run["promptTokens"].(float64), run["completionTokens"].(float64)
	if want.route == "exact_cache" || want.route == "artifact" {
		in, out = 0, 0 // no provider answered
	}
	assert.InDelta(t, in, delta("svc_gateway_tokens_total", map[string]string{"type": "input", "provider": provider, "model": modelName}), 0, "input tokens")
	assert.InDelta(t, out, delta("svc_gateway_tokens_total", map[string]string{"type": "output", "provider": provider, "model": modelName}), 0, "output tokens")
	assert.InDelta(t, in+out, sumDelta("svc_gateway_tokens_total"), 0)
	cost := run["costUsd"].(float64)
	assert.InDelta(t, cost, delta("svc_gateway_cost_usd_total", map[string]string{"route": want.route, "provider": provider, "model": modelName}), 1e-12, "cost")
	assert.InDelta(t, cost, sumDelta("svc_gateway_cost_usd_total"), 1e-12)
	saved := run["savedUsd"].(float64)
	assert.InDelta(t, saved, sumDelta("svc_gateway_savings_usd_total"), 1e-12, "savings")
	if saved > 0 {
		assert.InDelta(t, saved, delta("svc_gateway_savings_usd_total", map[string]string{"route": want.route}), 1e-12)
	}
	ghost := run["ghostSavedUsd"].(float64)
	assert.Equal(t, want.ghost, ghost > 0, "ghost savings %v", ghost)
	assert.InDelta(t, ghost, sumDelta("svc_gateway_ghost_savings_usd_total"), 1e-12, "ghost savings")

	assert.InDelta(t, want.lookups, delta("svc_cache_lookups_total", map[string]string{"tier": "exact_response"}), 0, "exact cache lookups")
	assert.InDelta(t, want.hits, delta("svc_cache_hits_total", map[string]string{"tier": "exact_response"}), 0, "exact cache hits")
	if want.artifactType != "" {
		assert.InDelta(t, 1, delta("svc_artifact_serves_total", map[string]string{"type": want.artifactType}), 0, "artifact serves")
	}
	assert.InDelta(t, btof(want.artifactType != ""), sumDelta("svc_artifact_serves_total"), 0)
}

func btof(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// The metrics move by exactly what each call of a scripted set did: live,
// an exact cache hit, blocked by a policy, streamed, failed by the
// provider, answered by an artifact.
func TestMetricsFollowTheGatewaysCalls(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "chat.yaml"), []byte(`policies:
  - id: no-blocked-app
    target: chat
    when: request.app == "blocked-app"
    effect: deny
    reason: this app may not call
`), 0o600))
	provider := &switchProvider{Provider: mockProvider(t)}
	ts := newServerWith(t, bootstrap, map[string]string{"SVC_POLICY_DIR": dir, "SVC_RATE_LIMIT": "0"}, provider)
	rng := rand.New(rand.NewPCG(26, 1))
	artifactID := ts.learnTriage(t, rng)
	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/artifacts/"+artifactID+"/promote", bootstrap, "").status)
	artifactType := ts.call(t, "GET", "/api/v1/artifacts/"+artifactID, bootstrap, "").json["artifact"].(map[string]any)["type"].(string)

	before := ts.scrapeMetrics(t)
	count := before.sum("svc_gateway_requests_total")
	require.Positive(t, count, "the triage traffic was counted")
	step := func(name string, want expected, send func() response) {
		t.Helper()
		res := send()
		count++
		after := ts.scrapeAfter(t, count)
		t.Run(name, func(t *testing.T) { ts.checkCall(t, before, after, res, want) })
		before = after
	}
	live := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello to the metrics."}]}`

	step("live", expected{endpoint: "chat_completions", route: "live", statusClass: "2xx", app: "metrics-app", lookups: 1}, func() response {
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, live, "X-Svc-App", "metrics-app")
		require.Equal(t, http.StatusOK, res.status, res.body)
		return res
	})
	step("exact cache hit", expected{endpoint: "chat_completions", route: "exact_cache", statusClass: "2xx", app: "metrics-app", lookups: 1, hits: 1}, func() response {
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, live, "X-Svc-App", "metrics-app")
		require.Equal(t, "exact_cache", res.header.Get("x-svc-route"), res.body)
		return res
	})
	_, observer, err := ts.keys.Create(context.Background(), "default", auth.NewKey{Name: "observer", Mode: auth.Observe})
	require.NoError(t, err)
	step("observed cache hit: ghost savings", expected{endpoint: "chat_completions", route: "live", statusClass: "2xx", app: "metrics-app", lookups: 1, hits: 1, ghost: true}, func() response {
		res := ts.call(t, "POST", "/v1/chat/completions", observer, live, "X-Svc-App", "metrics-app")
		require.Equal(t, "live", res.header.Get("x-svc-route"), res.body)
		return res
	})
	// A refused call admits no new app label value: blocked-app counts as other.
	step("blocked", expected{endpoint: "chat_completions", route: "blocked", statusClass: "4xx", app: "other"}, func() response {
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, live, "X-Svc-App", "blocked-app")
		require.Equal(t, http.StatusForbidden, res.status, res.body)
		return res
	})
	step("streamed", expected{endpoint: "chat_completions", route: "live", statusClass: "2xx", app: "metrics-app", streamed: true, lookups: 1}, func() response {
		body := strings.Replace(live, "hello", "hello, streamed,", 1)
		body = strings.Replace(body, `{"model"`, `{"stream":true,"stream_options":{"include_usage":true},"model"`, 1)
		res, events := ts.stream(t, bootstrap, body, "X-Svc-App", "metrics-app")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "[DONE]", events[len(events)-1])
		return response{status: res.StatusCode, header: res.Header}
	})
	step("failed", expected{endpoint: "chat_completions", route: "live", statusClass: "5xx", app: "metrics-app", lookups: 1}, func() response {
		provider.failing.Store(true)
		defer provider.failing.Store(false)
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, strings.Replace(live, "hello", "hello, failing,", 1), "X-Svc-App", "metrics-app")
		require.Equal(t, http.StatusBadGateway, res.status, res.body)
		return res
	})
	step("artifact", expected{endpoint: "chat_completions", route: "artifact", statusClass: "2xx", app: "support-triage", lookups: 1, artifactType: artifactType}, func() response {
		for i := range 20 { // an abstention goes live: try a few tickets
			res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triageBody(rng, 5000+i), "X-Svc-App", "support-triage")
			require.Equal(t, http.StatusOK, res.status, res.body)
			if res.header.Get("x-svc-route") == "artifact" {
				return res
			}
			count++ // a live one, counted too
			before = ts.scrapeAfter(t, count)
		}
		t.Fatal("the promoted artifact answered none of 20 tickets")
		return response{}
	})

	promtoolCheck(t, before.text)
}

// slowProvider answers after delay, the provider's time.
type slowProvider struct {
	fakeProvider
	delay time.Duration
}

func (p *slowProvider) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	time.Sleep(p.delay) // the provider's own time, which svc's overhead leaves out
	return p.fakeProvider.Chat(ctx, req)
}

func (p *slowProvider) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	time.Sleep(p.delay)
	return p.fakeProvider.StreamChat(ctx, req, send)
}

func (p *slowProvider) Models(ctx context.Context) ([]pluginapi.Model, error) {
	time.Sleep(p.delay)
	return p.fakeProvider.Models(ctx)
}

// overheadMS reads x-svc-overhead-ms: a number of milliseconds, at most
// three decimals.
func overheadMS(t *testing.T, h http.Header) float64 {
	t.Helper()
	v := h.Get("x-svc-overhead-ms")
	require.NotEmpty(t, v, "x-svc-overhead-ms is missing")
	if _, frac, ok := strings.Cut(v, "."); ok {
		assert.LessOrEqual(t, len(frac), 3, "at most three decimals: %s", v)
	}
	ms, err := strconv.ParseFloat(v, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, ms, 0.0)
	return ms
}

// svc's overhead leaves the provider's time out: on a provider that takes
// 150 ms, the overhead is at most the call's time minus those 150 ms.
func TestOverheadLeavesTheProvidersTimeOut(t *testing.T) {
	const delay = 150 * time.Millisecond
	ts := newServerWith(t, bootstrap, nil, &slowProvider{fakeProvider: fakeProvider{chunks: 2}, delay: delay})
	for i, stream := range []bool{false, true} {
		body := fmt.Sprintf(`{"model":"gpt-4o-mini","stream":%t,"messages":[{"role":"user","content":"slow %d"}]}`, stream, i)
		start := time.Now()
		var h http.Header
		if stream {
			res, _ := ts.stream(t, bootstrap, body)
			h = res.Header
		} else {
			res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
			require.Equal(t, http.StatusOK, res.status, res.body)
			h = res.header
		}
		elapsed := float64(time.Since(start).Microseconds()) / 1000
		overhead := overheadMS(t, h)
		assert.LessOrEqual(t, overhead, elapsed-float64(delay.Milliseconds()), "stream %t: the overhead %v ms leaves the provider's %v out of %v ms", stream, overhead, delay, elapsed)
	}

	start := time.Now()
	res := ts.call(t, "GET", "/v1/models", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	elapsed := float64(time.Since(start).Microseconds()) / 1000
	overhead := overheadMS(t, res.header)
	assert.LessOrEqual(t, overhead, elapsed-float64(delay.Milliseconds()), "models: the overhead %v ms leaves the provider's %v out of %v ms", overhead, delay, elapsed)
}

// Every answer under /v1/ carries the overhead, errors before any run and
// the mux's own refusals included; no other route's does.
func TestOverheadOnEveryGatewayAnswer(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_MAX_BODY_BYTES": "2048"})
	big := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`
	cases := []struct {
		name, method, path, token, body string
		status                          int
	}{
		{"chat", "POST", "/v1/chat/completions", bootstrap, triage, 200},
		{"chat, bad body", "POST", "/v1/chat/completions", bootstrap, `{"model":`, 400},
		{"chat, no credential", "POST", "/v1/chat/completions", "", triage, 401},
		{"chat, body too large", "POST", "/v1/chat/completions", bootstrap, big, 413},
		{"responses", "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":"hello"}`, 200},
		{"responses, bad body", "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini"}`, 400},
		{"embeddings", "POST", "/v1/embeddings", bootstrap, `{"model":"text-embedding-3-small","input":"hello"}`, 200},
		{"embeddings, no credential", "POST", "/v1/embeddings", "wrong", `{"model":"text-embedding-3-small","input":"hello"}`, 401},
		{"models", "GET", "/v1/models", bootstrap, "", 200},
		{"models, no credential", "GET", "/v1/models", "", "", 401},
		{"a stored response", "GET", "/v1/responses/resp_none", bootstrap, "", 404},
		{"chat, wrong method", "GET", "/v1/chat/completions", bootstrap, "", 405},
		{"no such gateway route", "POST", "/v1/completions", bootstrap, triage, 404},
	}
	for _, tc := range cases {
		res := ts.call(t, tc.method, tc.path, tc.token, tc.body)
		require.Equal(t, tc.status, res.status, "%s: %s", tc.name, res.body)
		overheadMS(t, res.header)
	}
	res, events := ts.stream(t, bootstrap, strings.Replace(triage, `{"model"`, `{"stream":true,"model"`, 1))
	require.Equal(t, "[DONE]", events[len(events)-1])
	overheadMS(t, res.Header)
	// The ten calls of the gateway's endpoints and the stream are counted;
	// the other answers under /v1/ are none of its calls.
	ts.scrapeAfter(t, 11)

	for _, path := range []string{"/api/v1/settings", "/health", "/api/v1/nothing"} {
		assert.Empty(t, ts.call(t, "GET", path, bootstrap, "").header.Get("x-svc-overhead-ms"), path)
	}
}

func TestMetricsEndpointNeedsTheOperatorsAdmin(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	none := ts.call(t, "GET", "/metrics", "", "")
	assert.Equal(t, http.StatusUnauthorized, none.status, none.body)

	_, member, err := ts.keys.Create(context.Background(), "default", auth.NewKey{Name: "reader", Mode: auth.Optimize})
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, ts.call(t, "GET", "/metrics", member, "").status, "a member who is no admin")

	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirAdmin, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize, Admin: true})
	require.NoError(t, err)
	theirs := ts.call(t, "GET", "/metrics", theirAdmin, "")
	assert.Equal(t, http.StatusForbidden, theirs.status, "the metrics cover every org: another org's admin may not read them")
	assert.Equal(t, "admin_required", theirs.errorCode())

	_, ours, err := ts.keys.Create(context.Background(), "default", auth.NewKey{Name: "ops", Mode: auth.Optimize, Admin: true})
	require.NoError(t, err)
	res := ts.call(t, "GET", "/metrics", ours, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	s := parseMetrics(t, res.body)
	for _, name := range []string{"svc_build_info", "go_goroutines", "process_cpu_seconds_total"} {
		assert.Contains(t, s.families, name)
	}
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/metrics", bootstrap, "").status)
}

func TestMetricsOff(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_METRICS": "off"})
	res := ts.call(t, "GET", "/metrics", bootstrap, "")
	assert.Equal(t, http.StatusNotFound, res.status, res.body)
	res = ts.call(t, "GET", "/metrics", "", "")
	assert.Equal(t, http.StatusNotFound, res.status, "no credential: no route to ask one for: %s", res.body)
	chat := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusOK, chat.status, chat.body)
	overheadMS(t, chat.header) // the header is no metric: it stays
}

// Free-form app names beyond SVC_METRICS_LABEL_LIMIT count as "other", and
// the tenant label is there only with SVC_METRICS_TENANT_LABEL.
func TestGatewayLabelsAreBounded(t *testing.T) {
	for _, tenantLabel := range []bool{false, true} {
		ts := newServerWith(t, bootstrap, map[string]string{"SVC_METRICS_LABEL_LIMIT": "2", "SVC_METRICS_TENANT_LABEL": strconv.FormatBool(tenantLabel)}, &fakeProvider{})
		for i := range 5 {
			res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage, "X-Svc-App", fmt.Sprint("app-", i))
			require.Equal(t, http.StatusOK, res.status, res.body)
		}
		s := ts.scrapeAfter(t, 5)
		apps := map[string]float64{}
		for _, m := range s.families["svc_gateway_requests_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "app" {
					apps[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
		assert.Equal(t, map[string]float64{"app-0": 1, "app-1": 1, "other": 3}, apps)
		for _, name := range []string{"svc_gateway_requests_total", "svc_gateway_tokens_total", "svc_gateway_cost_usd_total"} {
			assert.Equal(t, tenantLabel, s.labelsOf(name)["tenant"], "%s: tenant label %t", name, tenantLabel)
		}
		if tenantLabel {
			assert.InDelta(t, 5, s.value("svc_gateway_tokens_total", map[string]string{"type": "input", "provider": "mock", "model": "gpt-4o-mini", "tenant": "default"})/1000, 0, s.text)
		}
	}
}
