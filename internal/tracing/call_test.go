package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/tracing"
)

// The call span a request starts is taken once, by the first taker that
// finds it its context's own span; one never taken is ended by End with
// the answer's error, one taken is left to its taker.
func TestCallSpanIsTakenOnceOrEndedByTheRequest(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, root := tp.Tracer("test").Start(context.Background(), "request")

	callCtx, call := tracing.StartCall(ctx, "chat")
	require.NotNil(t, call)
	_, auth := tracing.Start(callCtx, "authenticate", trace.SpanKindInternal)
	auth.End()
	stepCtx, step := tracing.Start(callCtx, "step", trace.SpanKindInternal)
	assert.Nil(t, tracing.TakeCall(stepCtx), "under another span: not the caller's to take")
	step.End()
	ts, err := trace.ParseTraceState("vendor=abc")
	require.NoError(t, err)
	other := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceState: ts})
	assert.Nil(t, tracing.TakeCall(trace.ContextWithSpanContext(callCtx, other)), "under another span context: not taken")
	span := tracing.TakeCall(callCtx)
	require.NotNil(t, span)
	assert.Nil(t, tracing.TakeCall(callCtx), "taken once")
	span.SetName("chat gpt-4o-mini")
	call.End(500, "ignored", "") // the taker ends it
	assert.True(t, span.IsRecording(), "not ended by the request")
	span.End()

	_, refused := tracing.StartCall(ctx, "embeddings")
	refused.End(401, "invalid_api_key", "the key sk-abcdefghijklmnopqrstuvwxyz0123 of ops@example.com is not valid")
	_, gone := tracing.StartCall(ctx, "gone")
	gone.End(499, "499", "")
	var nilCall *tracing.Call
	nilCall.End(400, "x", "") // a request svc does not trace
	root.End()

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	require.Contains(t, spans, "chat gpt-4o-mini")
	require.Contains(t, spans, "embeddings")
	taken := spans["chat gpt-4o-mini"]
	assert.Equal(t, root.SpanContext().SpanID(), taken.Parent().SpanID())
	assert.Equal(t, taken.SpanContext().SpanID(), spans["authenticate"].Parent().SpanID())
	assert.Equal(t, codes.Unset, taken.Status().Code)
	left := spans["embeddings"]
	assert.Equal(t, codes.Error, left.Status().Code)
	// The public message, masked whatever the tenant's setting: it is not
	// read before the gateway takes the call.
	assert.Contains(t, left.Status().Description, "is not valid")
	assert.NotContains(t, left.Status().Description, "sk-abcdefghijklmnopqrstuvwxyz0123")
	assert.NotContains(t, left.Status().Description, "ops@example.com")
	attrs := map[string]string{}
	for _, kv := range left.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	assert.Equal(t, "invalid_api_key", attrs["error.type"])
	assert.Equal(t, "embeddings", attrs["gen_ai.operation.name"])

	require.Contains(t, spans, "gone")
	assert.Equal(t, codes.Unset, spans["gone"].Status().Code, "a client that went away is no failure of svc's")
	cancelled := ""
	for _, kv := range spans["gone"].Attributes() {
		if kv.Key == "error.type" {
			cancelled = kv.Value.AsString()
		}
	}
	assert.Equal(t, "cancelled", cancelled)
}

// Under a span that does not record there is no call span to start.
func TestNoCallSpanWithoutTracing(t *testing.T) {
	ctx, call := tracing.StartCall(context.Background(), "chat")
	assert.Nil(t, call)
	assert.Nil(t, tracing.TakeCall(ctx))
}
