package tracing_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/tracing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Off, svc makes no SDK and no exporter: its tracer records nothing.
func TestOffIsANoop(t *testing.T) {
	tr, err := tracing.New(context.Background(), tracing.Options{On: false})
	require.NoError(t, err)
	assert.False(t, tr.Enabled())
	_, span := tr.Tracer().Start(context.Background(), "x")
	assert.False(t, span.IsRecording())
	assert.NoError(t, tr.Shutdown(context.Background()))
}

// The protocol comes from OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL; one svc cannot export with stops the start.
func TestProtocol(t *testing.T) {
	for _, vars := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
	} {
		tr, err := tracing.New(context.Background(), tracing.Options{On: true, Getenv: env(vars)})
		require.NoError(t, err, "%v", vars)
		assert.True(t, tr.Enabled())
		require.NoError(t, tr.Shutdown(context.Background()))
	}
	_, err := tracing.New(context.Background(), tracing.Options{On: true, Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "http/json")
}

// The sampler is the SDK's, which OTEL_TRACES_SAMPLER sets.
func TestSamplerFromTheEnvironment(t *testing.T) {
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	tr, err := tracing.New(context.Background(), tracing.Options{On: true, Getenv: env(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	_, span := tr.Tracer().Start(context.Background(), "x")
	assert.False(t, span.IsRecording())
}

// Under no recording span, Start hands back the context as it is, and
// costs no allocation: the request path with tracing off.
func TestStartWithoutARecordingSpanAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	got, span := tracing.Start(ctx, "x", trace.SpanKindInternal)
	assert.Equal(t, ctx, got)
	assert.False(t, span.IsRecording())
	allocs := testing.AllocsPerRun(100, func() {
		_, span := tracing.Start(ctx, "x", trace.SpanKindInternal)
		span.End()
		_, _ = tracing.W3C(ctx)
		_ = tracing.TraceID(ctx)
	})
	assert.Zero(t, allocs)
}

// W3C writes a span context as the traceparent and tracestate headers.
func TestW3C(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=abc,other=1")
	require.NoError(t, err)
	for flags, want := range map[trace.TraceFlags]string{
		trace.FlagsSampled: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		0:                  "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
	} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, TraceState: ts, Remote: true})
		tp, state := tracing.W3C(trace.ContextWithRemoteSpanContext(context.Background(), sc))
		assert.Equal(t, want, tp)
		assert.Equal(t, "vendor=abc,other=1", state)
	}
	tp, state := tracing.W3C(context.Background())
	assert.Empty(t, tp)
	assert.Empty(t, state)
}

// w3cOf is what svc passes upstream for a caller's headers.
func w3cOf(traceparent, tracestate string) (string, string) {
	h := http.Header{}
	h.Set("traceparent", traceparent)
	if tracestate != "" {
		h.Set("tracestate", tracestate)
	}
	return tracing.W3C(tracing.Propagator.Extract(context.Background(), propagation.HeaderCarrier(h)))
}

// A caller's trace context goes upstream only when valid, and its
// tracestate at most 512 bytes, whole members dropped from the end.
func TestW3CFromTheCaller(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	got, state := w3cOf("00-not-a-trace-01", "a=1")
	assert.Empty(t, got, "an invalid traceparent is dropped")
	assert.Empty(t, state)

	got, state = w3cOf(tp, "a=1,b=2")
	assert.Equal(t, tp, got)
	assert.Equal(t, "a=1,b=2", state)

	got, state = w3cOf(tp, "not a list member")
	assert.Equal(t, tp, got, "an invalid tracestate is dropped, the traceparent kept")
	assert.Empty(t, state)

	var members []string
	for i := range 32 {
		members = append(members, fmt.Sprintf("k%02d=%s", i, strings.Repeat("v", 26))) // 30 bytes each
	}
	got, state = w3cOf(tp, strings.Join(members, ","))
	assert.Equal(t, tp, got)
	assert.LessOrEqual(t, len(state), 512)
	assert.Equal(t, strings.Join(members[:16], ","), state, "whole members, the first kept")
}

// Start makes a child span with the provider of its parent, in svc's
// scope, and of the kind asked, whichever provider it used last: the
// tracer it keeps is its last provider's only.
func TestStartUsesTheParentsProvider(t *testing.T) {
	recA, recB := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	a := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recA))
	b := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recB))
	for i, p := range []*sdktrace.TracerProvider{a, b, a, a, b} {
		ctx, root := p.Tracer("test").Start(context.Background(), "root")
		_, child := tracing.Start(ctx, "child", trace.SpanKind(i%5+1))
		child.End()
		root.End()
	}
	for rec, kinds := range map[*tracetest.SpanRecorder][]trace.SpanKind{
		recA: {trace.SpanKindInternal, trace.SpanKindClient, trace.SpanKindProducer},
		recB: {trace.SpanKindServer, trace.SpanKindConsumer},
	} {
		var got []trace.SpanKind
		for _, s := range rec.Ended() {
			if s.Name() == "child" {
				assert.Equal(t, tracing.Name, s.InstrumentationScope().Name)
				got = append(got, s.SpanKind())
			}
		}
		assert.Equal(t, kinds, got)
	}
}

// A trace that starts at svc has an id that begins with its start's
// milliseconds, so that the runs of later traces sort later in the index
// that finds runs by trace; a caller's trace keeps its id.
func TestRootSpansHaveOrderedTraceIDs(t *testing.T) {
	tr, err := tracing.New(context.Background(), tracing.Options{On: true, Getenv: env(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	before := time.Now().UnixMilli()
	_, span := tr.Tracer().Start(context.Background(), "root")
	after := time.Now().UnixMilli()
	tid := span.SpanContext().TraceID()
	ms := int64(binary.BigEndian.Uint64(tid[:8]) >> 16)
	assert.True(t, before <= ms && ms <= after, "%s starts with %d, not in [%d, %d]", tid, ms, before, after)

	caller, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: caller, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, Remote: true})
	_, child := tr.Tracer().Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "child")
	assert.Equal(t, caller, child.SpanContext().TraceID())
}

// Attributes gathered in an Attrs are set on the span in one call, and a
// list given back starts the next span empty.
func TestAttrs(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	for i := range 3 {
		_, span := tp.Tracer("test").Start(context.Background(), "x")
		attrs := tracing.NewAttrs()
		attrs.Add(attribute.Int("i", i), attribute.String("s", "v"))
		attrs.Add(attribute.Bool("b", true))
		attrs.SetOn(span)
		span.End()
	}
	require.Len(t, rec.Ended(), 3)
	for i, s := range rec.Ended() {
		assert.Equal(t, []attribute.KeyValue{attribute.Int("i", i), attribute.String("s", "v"), attribute.Bool("b", true)}, s.Attributes())
	}
}
