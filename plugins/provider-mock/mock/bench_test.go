package mock

import (
	"context"
	"testing"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// A typical small gateway request: a system prompt and one user turn.
var benchBody = []byte(`{"model":"gpt-4o-mini","messages":[` +
	`{"role":"system","content":"You are a helpful assistant for an online shop. Answer briefly."},` +
	`{"role":"user","content":"Hi! Can you tell me how long delivery to Germany usually takes?"}],` +
	`"temperature":0.2,"max_tokens":256}`)

var benchTriageBody = []byte(`{"model":"gpt-4o-mini","messages":[` +
	`{"role":"system","content":"You are a support triage assistant. Classify the ticket into one of: billing, bug, feature_request, account, shipping. Reply with the label only."},` +
	`{"role":"user","content":"I was charged twice for my subscription this month and need a refund for the second payment."}]}`)

func benchChat(b *testing.B, body []byte) {
	m := &Mock{}
	ctx := context.Background()
	req := pluginapi.ChatRequest{Body: body, Model: "gpt-4o-mini"}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := m.Chat(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChat(b *testing.B)       { benchChat(b, benchBody) }
func BenchmarkChatTriage(b *testing.B) { benchChat(b, benchTriageBody) }

func BenchmarkStreamChat(b *testing.B) {
	m := &Mock{}
	ctx := context.Background()
	req := pluginapi.ChatRequest{Body: benchBody, Model: "gpt-4o-mini", IncludeUsage: true}
	send := func(pluginapi.ChatChunk) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := m.StreamChat(ctx, req, send); err != nil {
			b.Fatal(err)
		}
	}
}
