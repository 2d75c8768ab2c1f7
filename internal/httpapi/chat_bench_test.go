package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-gateway/svc/internal/coldbench"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// instantAnswer answers every chat at once with the same body, so that a
// benchmark through it measures svc's own work alone.
type instantAnswer struct{}

var instantBody = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Benchmarks measure what matters."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":20,"completion_tokens":6,"total_tokens":26}}`)

func (instantAnswer) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	return pluginapi.ChatResponse{Body: instantBody, Usage: pluginapi.Usage{PromptTokens: 20, CompletionTokens: 6, TotalTokens: 26}}, nil
}

func (instantAnswer) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}

func (instantAnswer) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

// BenchmarkChatCompletion is a chat completion through svc's whole HTTP
// handler (authentication, rate limit, parse, policies, exact cache miss,
// the provider in process, the run journaled and stored, the log line),
// each call a request none before it asked, as svc-bench sends them: what
// svc adds to a call, without the network.
func BenchmarkChatCompletion(b *testing.B) {
	benchmarkChat(b, newServerWith(b, bootstrap, nil, instantAnswer{}).handler)
}

// BenchmarkChatCompletionAfterIdle is BenchmarkChatCompletion with the
// CPU left idle for 10 ms before each call, as a call at 100 requests a
// second finds it: with its caches gone cold, the same work costs several
// times what it costs back to back.
func BenchmarkChatCompletionAfterIdle(b *testing.B) {
	h := newServerWith(b, bootstrap, nil, instantAnswer{}).handler
	i := 0
	coldbench.Run(b, 10*time.Millisecond, func() {
		serveChat(b, h, i)
		i++
	})
}

// benchmarkChat sends h a new chat completion each iteration.
func benchmarkChat(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		serveChat(b, h, i)
	}
}

// serveChat sends h the i-th of a series of chat completions, each one
// none before it asked.
func serveChat(b *testing.B, h http.Handler, i int) {
	const tmpl = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},` +
		`{"role":"user","content":"Write one sentence about benchmarks (N)."}]}`
	req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(strings.Replace(tmpl, "(N)", "("+strconv.Itoa(i)+")", 1)))
	req.Header.Set("Authorization", "Bearer "+bootstrap)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
}

// BenchmarkChatCompletionTraced is BenchmarkChatCompletion with traces
// exported over OTLP/HTTP to a collector that takes them and keeps
// nothing: what tracing adds to a call's work, the export's share too.
func BenchmarkChatCompletionTraced(b *testing.B) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	b.Cleanup(collector.Close)
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	benchmarkChat(b, newServerWith(b, bootstrap, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}, instantAnswer{}).handler)
}
