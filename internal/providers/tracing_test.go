package providers

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// tracedChat makes a chat call under a recording span and returns the
// attempts' spans.
func tracedChat(t *testing.T, h *harness, ctx context.Context) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, root := tp.Tracer("test").Start(ctx, "call")
	defer func() {
		root.End()
	}()
	p, err := h.r.Plan("m")
	require.NoError(t, err)
	func() {
		defer func() { _ = recover() }()
		_, _ = h.r.Chat(ctx, p, pluginapi.ChatRequest{Body: []byte(`{"model":"m"}`), Model: "m"})
	}()
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindClient {
			out = append(out, s)
		}
	}
	return out
}

// An attempt's span tells its error with the provider keys hidden, as the
// status does.
func TestAttemptSpanHidesTheKeys(t *testing.T) {
	set := &Set{Providers: []*Provider{{Name: "a", Plugin: "openai"}},
		Retries: Retries{MaxAttempts: 1}, Secrets: []string{"sk-live-SECRET123"}}
	h := newHarness(t, set)
	h.script("a", status(401, "Incorrect API key provided: sk-live-SECRET123"))
	spans := tracedChat(t, h, context.Background())
	require.Len(t, spans, 1)
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	assert.NotContains(t, spans[0].Status().Description, "SECRET123")
	assert.Contains(t, spans[0].Status().Description, "[redacted]")
}

// A provider that panics still ends its attempt's span, as failed.
func TestAttemptSpanEndsWhenTheProviderPanics(t *testing.T) {
	h := newHarness(t, &Set{Providers: []*Provider{{Name: "a", Plugin: "openai"}}, Retries: Retries{MaxAttempts: 1}})
	h.r.Current().Providers[0].Impl = panicking{h.fakes["a"]}
	spans := tracedChat(t, h, context.Background())
	require.Len(t, spans, 1, "the attempt's span is ended")
	assert.Equal(t, codes.Error, spans[0].Status().Code)
}

// The answering attempt's span carries the usage its provider answered with.
func TestAttemptSpanCarriesTheUsage(t *testing.T) {
	h := newHarness(t, &Set{Providers: []*Provider{{Name: "a", Plugin: "openai"}}, Retries: Retries{MaxAttempts: 1}})
	spans := tracedChat(t, h, context.Background())
	require.Len(t, spans, 1)
	a := map[string]int64{}
	for _, kv := range spans[0].Attributes() {
		if strings.HasPrefix(string(kv.Key), "gen_ai.usage.") {
			a[string(kv.Key)] = kv.Value.AsInt64()
		}
	}
	assert.NotZero(t, a["gen_ai.usage.input_tokens"])
	assert.Contains(t, a, "gen_ai.usage.output_tokens")
}
