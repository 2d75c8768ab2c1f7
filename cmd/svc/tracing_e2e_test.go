package main_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP trace receiver: over HTTP (POST /v1/traces, a
// protobuf body, gzipped or not) and over gRPC (the TraceService).
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []*span
	requests int
}

// span is a received span with its resource's service name and
// attributes.
type span struct {
	*tracepb.Span
	service  string
	resource map[string]any
}

func (s *span) traceID() string  { return hex.EncodeToString(s.TraceId) }
func (s *span) spanID() string   { return hex.EncodeToString(s.SpanId) }
func (s *span) parentID() string { return hex.EncodeToString(s.ParentSpanId) }

// attr is the span's attribute key as a Go value ("" when missing).
func (s *span) attr(key string) any {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return value(kv.Value)
		}
	}
	return nil
}

func value(v *commonpb.AnyValue) any {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	default:
		return fmt.Sprint(v)
	}
}

func (c *collector) add(req *coltracepb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	for _, rs := range req.ResourceSpans {
		service, resource := "", map[string]any{}
		for _, kv := range rs.GetResource().GetAttributes() {
			resource[kv.Key] = value(kv.Value)
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				c.spans = append(c.spans, &span{Span: sp, service: service, resource: resource})
			}
		}
	}
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.add(&req)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// newHTTPCollector serves a collector over OTLP/HTTP.
func newHTTPCollector(t *testing.T) (*collector, string) {
	c := &collector{}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// newGRPCCollector serves a collector over OTLP/gRPC.
func newGRPCCollector(t *testing.T) (*collector, string) {
	c := &collector{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return c, "http://" + lis.Addr().String()
}

func (c *collector) snapshot() ([]*span, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*span(nil), c.spans...), c.requests
}

// trace waits until the spans of traceID include every name in names, and
// returns them.
func (c *collector) trace(t *testing.T, traceID string, names ...string) []*span {
	t.Helper()
	var got []*span
	require.Eventually(t, func() bool {
		all, _ := c.snapshot()
		got = got[:0]
		seen := map[string]bool{}
		for _, s := range all {
			if s.traceID() == traceID {
				got = append(got, s)
				seen[s.Name] = true
			}
		}
		for _, n := range names {
			if !seen[n] {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "spans %v of trace %s", names, traceID)
	return got
}

// one returns the only span named name whose kind is kind.
func one(t *testing.T, spans []*span, name string, kind tracepb.Span_SpanKind) *span {
	t.Helper()
	var found *span
	for _, s := range spans {
		if s.Name == name && s.Kind == kind {
			require.Nil(t, found, "one span %q of kind %s", name, kind)
			found = s
		}
	}
	require.NotNil(t, found, "a span %q of kind %s", name, kind)
	return found
}

// traceUpstream is an OpenAI-compatible upstream that keeps the trace
// context headers of each call.
type traceUpstream struct {
	*httptest.Server
	mu           sync.Mutex
	traceparents []string
	tracestates  []string
}

func newTraceUpstream(t *testing.T) *traceUpstream {
	u := &traceUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.traceparents = append(u.traceparents, r.Header.Get("Traceparent"))
		u.tracestates = append(u.tracestates, r.Header.Get("Tracestate"))
		u.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-7","object":"chat.completion","created":1,"model":"up-model-2025","choices":[{"index":0,"message":{"role":"assistant","content":"Reply to bob@example.org"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *traceUpstream) last() (string, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.traceparents[len(u.traceparents)-1], u.tracestates[len(u.tracestates)-1]
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	secretWords = "alice@example.com"
	tracedChat  = `{"model":"gpt-4o-mini","max_tokens":64,"temperature":0.5,"messages":[{"role":"user","content":"Write to ` + secretWords + ` about the plan"}]}`
)

// tracedCall posts tracedChat with the caller's traceparent, and returns
// the run id.
func tracedCall(t *testing.T, p *proc) string {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", strings.NewReader(tracedChat))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	req.Header.Set("tracestate", "vendor=abc")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	return res.Header.Get("x-svc-run-id")
}

// sendTraced sends a request under the caller's span in trace, and
// returns its answer's status.
func sendTraced(t *testing.T, p *proc, method, path, body, trace string) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("traceparent", "00-"+trace+"-"+callerSpan+"-01")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// requestLog waits for the request log line of path.
func requestLog(t *testing.T, p *proc, path string) map[string]any {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-p.logs:
			require.True(t, ok, "svc exited")
			if line["@message"] == "request" && line["path"] == path {
				return line
			}
		case <-deadline:
			t.Fatalf("no request log line of %s", path)
		}
	}
}

// A gateway call's trace, exported over OTLP/HTTP: the server span is the
// caller's child, the call's span follows the GenAI conventions and names
// the run, each step has its span under it, the upstream is passed the
// attempt's span as its parent, and the run and the log line name the
// trace. Prompts and answers stay out of it.
func TestTracesOfAGatewayCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		new     func(t *testing.T) (*collector, string)
		env     []string
		service string
	}{
		{"http", newHTTPCollector, []string{"OTEL_SERVICE_NAME=svc-e2e"}, "svc-e2e"},
		{"grpc", newGRPCCollector, []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_INSECURE=true"}, "svc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col, endpoint := tc.new(t)
			up := newTraceUpstream(t)
			// A chat rule that lets the call through: policies are in
			// force, so the call has a policy.evaluate span.
			policies := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(policies, "rules.yaml"), []byte(denyBigModel), 0o600))
			p := start(t, append([]string{"PROVIDER_API_KEY=sk-test-0000", "PROVIDER_BASE_URL=" + up.URL + "/v1",
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_BSP_SCHEDULE_DELAY=100", "SVC_POLICY_DIR=" + policies,
				"SVC_MAX_BODY_BYTES=65536"}, tc.env...)...)

			runID := tracedCall(t, p)
			require.NotEmpty(t, runID)
			spans := col.trace(t, callerTrace, "POST /v1/chat/completions", "authenticate", "chat gpt-4o-mini",
				"policy.evaluate", "cache.lookup", "artifact.lookup", "ledger.record")

			server := one(t, spans, "POST /v1/chat/completions", tracepb.Span_SPAN_KIND_SERVER)
			assert.Equal(t, callerSpan, server.parentID(), "the caller's span is the server span's parent")
			assert.Equal(t, tc.service, server.service)
			assert.Equal(t, "go", server.resource["telemetry.sdk.language"])
			assert.Equal(t, "opentelemetry", server.resource["telemetry.sdk.name"])
			assert.NotEmpty(t, server.resource["telemetry.sdk.version"])
			assert.Equal(t, "POST", server.attr("http.request.method"))
			assert.Equal(t, "/v1/chat/completions", server.attr("http.route"))
			assert.Equal(t, "/v1/chat/completions", server.attr("url.path"))
			assert.EqualValues(t, 200, server.attr("http.response.status_code"))
			assert.Equal(t, "http", server.attr("url.scheme"))
			assert.Equal(t, "127.0.0.1", server.attr("server.address"))
			assert.NotZero(t, server.attr("server.port"))
			assert.Equal(t, "1.1", server.attr("network.protocol.version"))
			assert.Equal(t, "127.0.0.1", server.attr("client.address"))

			call := one(t, spans, "chat gpt-4o-mini", tracepb.Span_SPAN_KIND_INTERNAL)
			assert.Equal(t, server.spanID(), call.parentID())
			auth := one(t, spans, "authenticate", tracepb.Span_SPAN_KIND_INTERNAL)
			assert.Equal(t, call.spanID(), auth.parentID(), "authentication is a step of the call")
			assert.Equal(t, "chat", call.attr("gen_ai.operation.name"))
			assert.Equal(t, "gpt-4o-mini", call.attr("gen_ai.request.model"))
			assert.Equal(t, "up-model-2025", call.attr("gen_ai.response.model"))
			assert.Equal(t, "chatcmpl-7", call.attr("gen_ai.response.id"))
			assert.EqualValues(t, 12, call.attr("gen_ai.usage.input_tokens"))
			assert.EqualValues(t, 3, call.attr("gen_ai.usage.output_tokens"))
			assert.EqualValues(t, 64, call.attr("gen_ai.request.max_tokens"))
			assert.InDelta(t, 0.5, call.attr("gen_ai.request.temperature"), 0)
			assert.Equal(t, runID, call.attr("svc.run.id"))
			assert.Equal(t, "live", call.attr("svc.route"))
			assert.Equal(t, "openai", call.attr("svc.provider"))
			assert.NotEmpty(t, call.attr("svc.tenant.id"))

			for _, name := range []string{"policy.evaluate", "cache.lookup", "artifact.lookup", "ledger.record"} {
				assert.Equal(t, call.spanID(), one(t, spans, name, tracepb.Span_SPAN_KIND_INTERNAL).parentID(), name)
			}
			attempt := one(t, spans, "chat gpt-4o-mini", tracepb.Span_SPAN_KIND_CLIENT)
			assert.Equal(t, call.spanID(), attempt.parentID())
			assert.Equal(t, "openai", attempt.attr("svc.provider"))
			assert.Equal(t, "openai", attempt.attr("gen_ai.provider.name"))
			assert.Equal(t, "ok", attempt.attr("svc.outcome"))

			tp, ts := up.last()
			assert.Equal(t, "00-"+callerTrace+"-"+attempt.spanID()+"-01", tp, "the upstream's parent is the attempt")
			assert.Equal(t, "vendor=abc", ts)

			_, detail := p.call(t, "GET", "/api/v1/runs/"+runID, "", "")
			assert.Equal(t, callerTrace, detail["run"].(map[string]any)["traceId"])
			_, list := p.call(t, "GET", "/api/v1/runs?limit=5", "", "")
			assert.Equal(t, callerTrace, list["runs"].([]any)[0].(map[string]any)["traceId"])

			line := requestLog(t, p, "/v1/chat/completions")
			assert.Equal(t, callerTrace, line["trace_id"])
			assert.Equal(t, server.spanID(), line["span_id"])

			// A call refused before the gateway read its model still has
			// its call span, named by the operation, with its error.
			const badTrace = "5bf92f3577b34da6a3ce929d0e0e4737"
			require.Equal(t, http.StatusBadRequest, sendTraced(t, p, "POST", "/v1/chat/completions", `{"model":`, badTrace))
			refused := col.trace(t, badTrace, "POST /v1/chat/completions", "chat", "authenticate")
			refusedCall := one(t, refused, "chat", tracepb.Span_SPAN_KIND_INTERNAL)
			assert.Equal(t, one(t, refused, "POST /v1/chat/completions", tracepb.Span_SPAN_KIND_SERVER).spanID(), refusedCall.parentID())
			assert.Equal(t, refusedCall.spanID(), one(t, refused, "authenticate", tracepb.Span_SPAN_KIND_INTERNAL).parentID())
			assert.Equal(t, "chat", refusedCall.attr("gen_ai.operation.name"))
			assert.Equal(t, "invalid_request_error", refusedCall.attr("error.type"), "the code the answer and its log line name")
			assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, refusedCall.Status.GetCode())
			assert.NotEmpty(t, refusedCall.Status.GetMessage(), "the answer's public message")

			// A body refused by its length before the mux still names the
			// route it was sent to.
			const largeTrace = "5bf92f3577b34da6a3ce929d0e0e4739"
			require.Equal(t, http.StatusRequestEntityTooLarge,
				sendTraced(t, p, "POST", "/v1/chat/completions", strings.Repeat("x", 70000), largeTrace))
			large := col.trace(t, largeTrace, "POST /v1/chat/completions", "chat")
			assert.Equal(t, "/v1/chat/completions", one(t, large, "POST /v1/chat/completions", tracepb.Span_SPAN_KIND_SERVER).attr("http.route"))
			largeCall := one(t, large, "chat", tracepb.Span_SPAN_KIND_INTERNAL)
			assert.Equal(t, "body_too_large", largeCall.attr("error.type"))
			assert.Contains(t, largeCall.Status.GetMessage(), "larger than 65536 bytes")

			// The model list is a gateway answer but no call: its server
			// span has no call span under it.
			const modelsTrace = "6bf92f3577b34da6a3ce929d0e0e4738"
			require.Equal(t, http.StatusOK, sendTraced(t, p, "GET", "/v1/models", "", modelsTrace))
			for _, s := range col.trace(t, modelsTrace, "GET /v1/models", "authenticate") {
				assert.NotEqual(t, "chat", s.attr("gen_ai.operation.name"), "span %s", s.Name)
				assert.False(t, strings.HasPrefix(s.Name, "chat") || strings.HasPrefix(s.Name, "embeddings"), "span %s", s.Name)
			}

			// The management API is traced too: a trace of its own.
			var mgmt *span
			require.Eventually(t, func() bool {
				all, _ := col.snapshot()
				for _, s := range all {
					if s.Name == "GET /api/v1/runs/{id}" {
						mgmt = s
						return true
					}
				}
				return false
			}, 20*time.Second, 20*time.Millisecond)
			assert.Equal(t, "/api/v1/runs/{id}", mgmt.attr("http.route"))
			assert.NotEqual(t, callerTrace, mgmt.traceID())

			// A learning pass a request starts has its span, under the
			// request's, as one a job starts has under the job's.
			p.call(t, "POST", "/api/v1/learning/tick", "", "")
			var tick, pass *span
			require.Eventually(t, func() bool {
				all, _ := col.snapshot()
				for _, s := range all {
					switch s.Name {
					case "POST /api/v1/learning/tick":
						tick = s
					case "learning.pass":
						pass = s
					}
				}
				return tick != nil && pass != nil
			}, 20*time.Second, 20*time.Millisecond)
			assert.Equal(t, tick.spanID(), pass.parentID())
			assert.Equal(t, "tick", pass.attr("svc.learning.trigger"))
			assert.NotNil(t, pass.attr("svc.learning.runs_scanned"))

			// A path that carries a one-time token is recorded as its route.
			p.call(t, "GET", "/api/v1/invites/one-time-token-0123456789", "", "")
			var invite *span
			require.Eventually(t, func() bool {
				all, _ := col.snapshot()
				for _, s := range all {
					if s.Name == "GET /api/v1/invites/{token}" {
						invite = s
						return true
					}
				}
				return false
			}, 20*time.Second, 20*time.Millisecond)
			assert.Equal(t, "/api/v1/invites/{token}", invite.attr("url.path"))

			all, _ := col.snapshot()
			for _, s := range all {
				for _, kv := range s.Attributes {
					assert.NotContains(t, fmt.Sprint(value(kv.Value)), "example", "span %s, attribute %s: no prompt or answer without content capture", s.Name, kv.Key)
					assert.NotContains(t, fmt.Sprint(value(kv.Value)), "one-time-token", "span %s, attribute %s", s.Name, kv.Key)
				}
			}
		})
	}
}

// With content capture on, the call's span carries the prompt and the
// answer, masked once the tenant turns redaction on.
func TestTracedContentIsMaskedWithRedaction(t *testing.T) {
	col, endpoint := newHTTPCollector(t)
	up := newTraceUpstream(t)
	p := start(t, "PROVIDER_API_KEY=sk-test-0000", "PROVIDER_BASE_URL="+up.URL+"/v1",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")

	callSpan := func(runID string) *span {
		t.Helper()
		var found *span
		require.Eventually(t, func() bool {
			all, _ := col.snapshot()
			for _, s := range all {
				if s.attr("svc.run.id") == runID && s.Kind == tracepb.Span_SPAN_KIND_INTERNAL && strings.HasPrefix(s.Name, "chat ") {
					found = s
					return true
				}
			}
			return false
		}, 20*time.Second, 20*time.Millisecond)
		return found
	}

	plain := callSpan(tracedCall(t, p))
	in, _ := plain.attr("gen_ai.input.messages").(string)
	out, _ := plain.attr("gen_ai.output.messages").(string)
	assert.JSONEq(t, `[{"role":"user","parts":[{"type":"text","content":"Write to `+secretWords+` about the plan"}]}]`, in)
	assert.JSONEq(t, `[{"role":"assistant","parts":[{"type":"text","content":"Reply to bob@example.org"}]}]`, out)

	status, _ := p.call(t, "PUT", "/api/v1/settings", "", `{"key":"redaction","value":true}`)
	require.Equal(t, http.StatusOK, status)
	masked := callSpan(tracedCall(t, p))
	in, _ = masked.attr("gen_ai.input.messages").(string)
	out, _ = masked.attr("gen_ai.output.messages").(string)
	assert.Contains(t, in, "about the plan")
	assert.NotContains(t, in, secretWords)
	assert.Contains(t, out, "Reply to")
	assert.NotContains(t, out, "bob@example.org")
}

// With tracing off, svc exports nothing, yet passes the caller's trace
// context on to the upstream unchanged, and the run names its trace.
func TestTraceContextPassesThroughWithTracingOff(t *testing.T) {
	col, endpoint := newHTTPCollector(t)
	up := newTraceUpstream(t)
	p := start(t, "PROVIDER_API_KEY=sk-test-0000", "PROVIDER_BASE_URL="+up.URL+"/v1",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_SDK_DISABLED=true", "OTEL_BSP_SCHEDULE_DELAY=100")

	runID := tracedCall(t, p)
	tp, ts := up.last()
	assert.Equal(t, "00-"+callerTrace+"-"+callerSpan+"-01", tp)
	assert.Equal(t, "vendor=abc", ts)
	_, detail := p.call(t, "GET", "/api/v1/runs/"+runID, "", "")
	assert.Equal(t, callerTrace, detail["run"].(map[string]any)["traceId"])
	line := requestLog(t, p, "/v1/chat/completions")
	assert.Equal(t, callerTrace, line["trace_id"])

	// A call without a traceparent sends none, and its run names no trace.
	status, runID, body := p.chat(t, "", chatBody)
	require.Equal(t, http.StatusOK, status, body)
	tp, _ = up.last()
	assert.Empty(t, tp)
	_, detail = p.call(t, "GET", "/api/v1/runs/"+runID, "", "")
	assert.NotContains(t, detail["run"], "traceId")

	// svc flushes its spans as it stops: none were made.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.waitExit(t))
	_, requests := col.snapshot()
	assert.Zero(t, requests, "no export with tracing off")
}

// headersCall posts tracedChat with the given trace context headers (none
// when empty).
func headersCall(t *testing.T, p *proc, traceparent, tracestate string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", strings.NewReader(tracedChat))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	if tracestate != "" {
		req.Header.Set("tracestate", tracestate)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
}

// A caller's trace context goes upstream only when valid, its tracestate
// at most 512 bytes; with tracing on, an invalid traceparent starts a
// trace of svc's own.
func TestHostileTraceContext(t *testing.T) {
	valid := "00-" + callerTrace + "-" + callerSpan + "-01"
	var members []string
	for i := range 32 {
		members = append(members, fmt.Sprintf("k%02d=%s", i, strings.Repeat("v", 26)))
	}
	huge := strings.Join(members, ",")

	up := newTraceUpstream(t)
	off := start(t, "PROVIDER_API_KEY=sk-test-0000", "PROVIDER_BASE_URL="+up.URL+"/v1")
	headersCall(t, off, "00-zzzz-01", "a=1")
	tp, ts := up.last()
	assert.Empty(t, tp, "an invalid traceparent is dropped")
	assert.Empty(t, ts)
	headersCall(t, off, valid, "not a list member")
	tp, ts = up.last()
	assert.Equal(t, valid, tp, "an invalid tracestate is dropped, the traceparent kept")
	assert.Empty(t, ts)
	headersCall(t, off, valid, huge)
	tp, ts = up.last()
	assert.Equal(t, valid, tp)
	assert.Equal(t, strings.Join(members[:16], ","), ts, "cut to 512 bytes, whole members")

	_, endpoint := newHTTPCollector(t)
	on := start(t, "PROVIDER_API_KEY=sk-test-0000", "PROVIDER_BASE_URL="+up.URL+"/v1",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_BSP_SCHEDULE_DELAY=100")
	headersCall(t, on, "00-zzzz-01", "")
	tp, _ = up.last()
	require.Len(t, tp, 55, "a trace of svc's own")
	assert.NotContains(t, tp, callerTrace)
}
