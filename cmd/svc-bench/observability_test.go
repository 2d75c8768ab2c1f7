package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/svc-gateway/svc/internal/testbin"
)

// The phase runs the real svc in its three configurations, in turns: each
// gets its warm-up and every round's calls, says what it served at GET
// /metrics (with metrics off, a 404), and is stopped at the end; whatever
// svc exported reached the receiver as OTLP.
func TestObservabilityPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs svc three times")
	}
	up, err := startUpstream()
	require.NoError(t, err)
	defer up.close()
	o := options{svc: testbin.SVC(t), plugins: testbin.PluginDir(t), conns: 2, obsRequests: 60, obsRounds: 3}
	r, err := measureObservability(o, up)
	require.NoError(t, err)
	require.Len(t, r.configs, 3)
	assert.Equal(t, 20, r.perRound)
	assert.Equal(t, 100, r.warm)
	for _, c := range r.configs {
		assert.Len(t, c.rounds, 3, c.name)
		assert.Equal(t, 160, c.calls, c.name)
		assert.Nil(t, c.svc, "%s not stopped", c.name)
		assert.Positive(t, c.rss, c.name)
	}
	assert.True(t, r.configs[0].served, r.configs[0].note)
	assert.Zero(t, r.spans.refused, "exports the receiver could not read")
	// The floor's two span processes took their turns like the svcs, and
	// only the one that makes spans sent any: eight a call, each call a
	// trace.
	require.Len(t, r.floor, 2)
	for _, f := range r.floor {
		assert.Len(t, f.rounds, 3, f.name)
		assert.Equal(t, 160, f.calls, f.name)
	}
	assert.Equal(t, otlpCounts{exports: r.floorSpans.exports, spans: 8 * 160, traces: 160}, r.floorSpans)
	var out strings.Builder
	r.print(&out)
	assert.Contains(t, out.String(), "tracing adds")
	assert.Contains(t, out.String(), "the spans cost")
	assert.Contains(t, out.String(), "floor's spans received 1280")
}

// A span process makes as many calls' spans as each line asks, at its
// pace, answers each line once done, and exports them all when its input
// ends; one that only keeps the pace exports nothing.
func TestSpanProcess(t *testing.T) {
	for _, makes := range []bool{true, false} {
		r, err := startReceiver()
		require.NoError(t, err)
		var out strings.Builder
		start := time.Now()
		require.NoError(t, serveSpans(r.url, 200, makes, strings.NewReader("3\n0\n10\n"), &out))
		assert.GreaterOrEqual(t, time.Since(start), 45*time.Millisecond, "13 calls at 200 a second are paced over 60 ms")
		assert.Equal(t, "3\n0\n10\n", out.String())
		want := otlpCounts{}
		if makes {
			want = otlpCounts{exports: r.counts().exports, spans: 8 * 13, traces: 13}
			assert.Positive(t, want.exports)
		}
		assert.Equal(t, want, r.counts(), "spans made: %v", makes)
		r.close()
	}
	assert.ErrorContains(t, serveSpans("http://127.0.0.1:1", 0, true, strings.NewReader("many\n"), io.Discard), `not a count of calls: "many"`)
}

// export is an OTLP export of spans, each named by its trace's first byte.
func export(t *testing.T, traces ...byte) []byte {
	var spans []*tracepb.Span
	for i, tr := range traces {
		spans = append(spans, &tracepb.Span{TraceId: bytes.Repeat([]byte{tr}, 16), SpanId: bytes.Repeat([]byte{byte(i + 1)}, 8), Name: "chat"})
	}
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans[:len(spans)/2]}, {Spans: spans[len(spans)/2:]}}},
	}})
	require.NoError(t, err)
	return b
}

func postExport(t *testing.T, url string, body []byte, gzipped bool) *http.Response {
	req, err := http.NewRequest("POST", url+"/v1/traces", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	if gzipped {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		_, _ = w.Write(body)
		require.NoError(t, w.Close())
		req.Body = io.NopCloser(&z)
		req.ContentLength = int64(z.Len())
		req.Header.Set("Content-Encoding", "gzip")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return res
}

// The receiver answers an export as a collector does and counts its
// spans and their traces, compressed or not; what is no export is refused
// and counted apart.
func TestReceiverCountsSpans(t *testing.T) {
	r, err := startReceiver()
	require.NoError(t, err)
	defer r.close()
	assert.Equal(t, "no spans received: tracing not active in this svc", r.counts().report(10))

	res := postExport(t, r.url, export(t, 1, 1, 2), false)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "application/x-protobuf", res.Header.Get("Content-Type"))
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, proto.Unmarshal(b, &coltracepb.ExportTraceServiceResponse{}))

	res = postExport(t, r.url, export(t, 2, 3, 3, 3), true)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	res.Body.Close()

	res = postExport(t, r.url, []byte("not protobuf \xff\xff"), false)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	res.Body.Close()
	res, err = http.Get(r.url + "/v1/traces")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)

	got := r.counts()
	assert.Equal(t, otlpCounts{exports: 2, spans: 7, traces: 3, refused: 1}, got)
	assert.Equal(t, "spans received 7 in 2 exports: 3.50 a call, 3 traces for 2 calls; 1 bodies refused (not an OTLP export)", got.report(2))
}

// The receiver reads what the OTel SDK's own OTLP/HTTP exporter sends when
// the variables the phase gives svc configure it, compressed or not.
func TestReceiverReadsTheSDKsExports(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			r, err := startReceiver()
			require.NoError(t, err)
			defer r.close()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.url)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
			t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", compression)
			ctx := context.Background()
			exp, err := otlptracehttp.New(ctx)
			require.NoError(t, err)
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
			tracer := tp.Tracer("svc-bench-test")
			for range 2 {
				ctx, call := tracer.Start(ctx, "chat gpt-4o-mini")
				_, attempt := tracer.Start(ctx, "provider attempt")
				attempt.End()
				call.End()
			}
			require.NoError(t, tp.Shutdown(ctx)) // flushes
			got := r.counts()
			assert.Equal(t, 4, got.spans)
			assert.Equal(t, 2, got.traces)
			assert.Positive(t, got.exports)
			assert.Zero(t, got.refused)
		})
	}
}

const scrape = `# HELP svc_gateway_requests_total Gateway calls answered.
# TYPE svc_gateway_requests_total counter
svc_gateway_requests_total{endpoint="chat_completions",status_class="2xx"} 120
svc_gateway_requests_total{endpoint="chat_completions",status_class="5xx"} 3
# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 12
`

func TestGatewayRequests(t *testing.T) {
	n, err := gatewayRequests(strings.NewReader(scrape))
	require.NoError(t, err)
	assert.Equal(t, 123.0, n)
	_, err = gatewayRequests(strings.NewReader("# TYPE go_goroutines gauge\ngo_goroutines 12\n"))
	assert.ErrorContains(t, err, "no svc_gateway_requests_total among 1 families")
	_, err = gatewayRequests(strings.NewReader("<html>console</html>"))
	assert.ErrorContains(t, err, "not Prometheus' text format")
}

// With metrics on, the metrics listener must count calls; with metrics
// off, the main listener's GET /metrics must be a 404.
func TestMetricsNote(t *testing.T) {
	var answer atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		body := answer.Load().(string)
		if body == "" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	answer.Store(scrape)
	note, served := metricsNote(&obsConfig{metricsAddr: addr, calls: 130})
	assert.True(t, served)
	assert.Equal(t, "svc_gateway_requests_total 123 of 130 calls", note)
	_, served = metricsNote(&obsConfig{svc: &svcProcess{url: srv.URL}})
	assert.False(t, served, "metrics off, yet served")

	answer.Store("")
	note, served = metricsNote(&obsConfig{metricsAddr: addr})
	assert.False(t, served)
	assert.Equal(t, "GET /metrics 404: metrics not active in this svc", note)
	note, served = metricsNote(&obsConfig{svc: &svcProcess{url: srv.URL}})
	assert.True(t, served)
	assert.Equal(t, "GET /metrics 404, as metrics off should", note)

	srv.Close()
	_, served = metricsNote(&obsConfig{metricsAddr: addr})
	assert.False(t, served)
}

// The configurations differ in their metrics and tracing variables alone,
// and only the last exports traces, to the receiver, over OTLP/HTTP.
func TestObsConfigs(t *testing.T) {
	c := obsConfigs("http://127.0.0.1:4318", "127.0.0.1:1", "127.0.0.1:2")
	require.Len(t, c, 3)
	assert.Equal(t, []string{"SVC_METRICS=off"}, c[0].env)
	assert.Equal(t, []string{"SVC_METRICS=on", "SVC_METRICS_ADDR=127.0.0.1:1"}, c[1].env)
	assert.Equal(t, []string{"SVC_METRICS=on", "SVC_METRICS_ADDR=127.0.0.1:2",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}, c[2].env)
	assert.Equal(t, []string{"", "127.0.0.1:1", "127.0.0.1:2"}, []string{c[0].metricsAddr, c[1].metricsAddr, c[2].metricsAddr})
}

// closedLoopN makes exactly n calls, and fails past 1% of them failing.
func TestClosedLoopN(t *testing.T) {
	var calls atomic.Int64
	fail := atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		if fail.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	s, err := closedLoopN(client(4), srv.URL+"/v1/chat/completions", 4, 101)
	require.NoError(t, err)
	assert.Equal(t, 101, s.ok)
	assert.Equal(t, int64(101), calls.Load())

	fail.Store(true)
	_, err = closedLoopN(client(4), srv.URL+"/v1/chat/completions", 4, 50)
	assert.ErrorContains(t, err, "50 of 50 calls failed")
}

// With a rate, a round's calls are sent at that rate, not as fast as a
// closed loop goes: 40 calls at 200 a second take about 200 ms.
func TestObsRoundAtAFixedRate(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
	}))
	defer srv.Close()
	r := &obsResult{rate: 200}
	start := time.Now()
	s, err := r.calls(client(4), srv.URL+"/v1/chat/completions", 4, 40)
	require.NoError(t, err)
	assert.Equal(t, 40, s.ok)
	assert.Equal(t, int64(40), calls.Load())
	assert.GreaterOrEqual(t, time.Since(start), 190*time.Millisecond, "the last call is due 195 ms after the first")
	assert.Len(t, s.lat, 40, "an open loop times each call")
}

func TestVerdict(t *testing.T) {
	assert.Equal(t, "target < 20 µs: met", verdict(19.9, 5, metricsTarget, true))
	assert.Equal(t, "target < 20 µs: MISSED", verdict(20, 5, metricsTarget, true))
	assert.Equal(t, "target < 20 µs: met, but the rounds spread wider than the target (more calls, or a quieter machine)",
		verdict(3, 20, metricsTarget, true))
	assert.Equal(t, "target < 50 µs: not measured (not active in this svc)", verdict(0, 0, tracingTarget, false))
}

func TestMedianAndDeltas(t *testing.T) {
	assert.Equal(t, 0.0, median(nil))
	assert.Equal(t, 3.0, median([]float64{9, 1, 3}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	assert.Equal(t, []float64{1, -2}, deltas([]float64{5, 4, 7}, []float64{4, 6}))
	assert.Equal(t, 0.0, spread(nil))
	assert.Equal(t, 1.5, spread([]float64{100, 1, 3, 5, 2, -50, 4})) // quartiles 1.5 and 4.5, the outliers aside
	assert.Equal(t, 3.75, spread([]float64{10, 20, 5}))
}

// The result reads each configuration's median, the median of the
// differences round by round against the targets, and what the receiver
// got; a feature not active is said so rather than judged.
func TestObsResultPrint(t *testing.T) {
	r := &obsResult{mode: modePlugin, conns: 10, rounds: 3, perRound: 1000, warm: 100,
		configs: []*obsConfig{
			{name: "off", rounds: []float64{300, 310, 290}, calls: 3100, served: true, note: "GET /metrics 404, as metrics off should"},
			{name: "metrics", rounds: []float64{310, 330, 295}, calls: 3100, served: true, note: "svc_gateway_requests_total 3100 of 3100 calls"},
			{name: "metrics+tracing", rounds: []float64{380, 390, 340}, calls: 3100, served: true, note: "svc_gateway_requests_total 3100 of 3100 calls"},
		},
		spans: otlpCounts{exports: 40, spans: 18600, traces: 3100},
	}
	var out strings.Builder
	r.print(&out)
	assert.Contains(t, out.String(), "3 rounds of 1000 calls to each configuration in turn, after 100 to warm up")
	assert.Contains(t, out.String(), "±10.0 µs a round")
	assert.Regexp(t, `metrics\s+310.0 µs a call`, out.String())
	words := strings.Join(strings.Fields(out.String()), " ")
	assert.Contains(t, words, "metrics add +10.0 µs a call ± 3.8 target < 20 µs: met (metrics − off, each round: 10 20 5)")
	assert.Contains(t, words, "tracing adds +60.0 µs a call ± 6.2 target < 50 µs: MISSED (metrics+tracing − metrics, each round: 70 60 45)")
	assert.Contains(t, out.String(), "spans received 18600 in 40 exports: 6.00 a call, 3100 traces for 3100 calls")

	r.configs[1].served, r.spans = false, otlpCounts{}
	out.Reset()
	r.print(&out)
	assert.Contains(t, out.String(), "target < 20 µs: not measured (not active in this svc)")
	assert.Contains(t, out.String(), "target < 50 µs: not measured (not active in this svc)")
	assert.Contains(t, out.String(), "no spans received: tracing not active in this svc")
}

func TestPhases(t *testing.T) {
	assert.NoError(t, options{phases: "latency, observability"}.checkPhases())
	assert.NoError(t, options{phases: ""}.checkPhases())
	assert.ErrorContains(t, options{phases: "latency,observabilty"}.checkPhases(), `no phase "observabilty"`)

	assert.True(t, options{phases: " observability"}.has("observability"))
	assert.False(t, options{phases: "observability"}.measuresTargets(), "the observability phase starts its own svcs")
	assert.True(t, options{phases: "observability", chaos: true}.measuresTargets())
	assert.True(t, options{phases: "closed,observability"}.measuresTargets())
	assert.True(t, options{phases: ""}.measuresTargets())
}

func TestReplicasPhaseStartsItsOwnSVCs(t *testing.T) {
	assert.NoError(t, options{phases: "closed,replicas"}.checkPhases())
	assert.False(t, options{phases: "replicas"}.measuresTargets(), "the replicas phase starts its own svcs")
	assert.False(t, options{phases: "observability,replicas"}.measuresTargets())
	assert.True(t, options{phases: "closed,replicas"}.measuresTargets())
}

// The load of the replicas phase is spread over every replica.
func TestClosedLoopOverSpreadsTheConnections(t *testing.T) {
	var hits [2]atomic.Int64
	var urls []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits[i].Add(1) }))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	st, err := closedLoopOver(urls, 4, 200*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, int64(st.ok), hits[0].Load()+hits[1].Load())
	assert.Positive(t, hits[0].Load())
	assert.Positive(t, hits[1].Load())
}

// The replicas phase sums the CPU time of each process name over the
// replicas.
func TestCPUByNameSumsTheReplicas(t *testing.T) {
	self := os.Getpid()
	procs := []namedPID{{"svc", self}, {"plugin", self}, {"svc", self}}
	got := cpuByName(procs, []time.Duration{0, 0, 0}, 1)
	assert.Regexp(t, `^svc \d+ µs \(2 processes\), plugin \d+ µs$`, got)
}
