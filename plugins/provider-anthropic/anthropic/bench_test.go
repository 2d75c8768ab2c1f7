package anthropic

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

const benchBody = `{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"You are terse."},
  {"role":"user","content":"What's the weather in Paris?"},
  {"role":"assistant","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
  {"role":"tool","tool_call_id":"toolu_1","content":"18 C, clear"}],
  "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
  "temperature":0.2,"max_tokens":256}`

// BenchmarkTranslate is the request translation alone.
func BenchmarkTranslate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translate([]byte(benchBody), false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChat is one non-streamed call against a local fake upstream:
// translation both ways plus the HTTP round trip.
func BenchmarkChat(b *testing.B) {
	body := testdata(b, "message_tool_use.json")
	srv := newBenchServer(b, "application/json", body)
	p, err := newProvider(pluginapi.ProviderConfig{BaseURL: srv, APIKey: testKey}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := chatReq(benchBody)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Chat(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream is one streamed call of the documentation's tool-use
// stream (31 events, 30 chunks).
func BenchmarkStream(b *testing.B) {
	body := testdata(b, "stream_tool_use.sse")
	srv := newBenchServer(b, "text/event-stream", body)
	p, err := newProvider(pluginapi.ProviderConfig{BaseURL: srv, APIKey: testKey}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := streamReq(benchBody, true)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.StreamChat(context.Background(), req, func(pluginapi.ChatChunk) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func newBenchServer(b *testing.B, contentType string, body []byte) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}
