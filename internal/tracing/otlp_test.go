package tracing

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// captured is an otlptrace.Client that keeps what the SDK's exporter
// converted the spans to: the structs its stock clients marshal.
type captured struct{ got []*tracepb.ResourceSpans }

func (*captured) Start(context.Context) error { return nil }
func (*captured) Stop(context.Context) error  { return nil }
func (c *captured) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	c.got = rs
	return nil
}

// stock is the export request the SDK's OTLP exporter makes of spans.
func stock(t testing.TB, spans []sdktrace.ReadOnlySpan) *coltracepb.ExportTraceServiceRequest {
	c := &captured{}
	exp, err := otlptrace.New(context.Background(), c)
	require.NoError(t, err)
	require.NoError(t, exp.ExportSpans(context.Background(), spans))
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: c.got}
}

// ours is the export request svc's encoder makes of spans, decoded.
func ours(t testing.TB, spans []sdktrace.ReadOnlySpan) *coltracepb.ExportTraceServiceRequest {
	var e encoder
	b := e.appendRequest(nil, spans)
	var got coltracepb.ExportTraceServiceRequest
	require.NoError(t, proto.Unmarshal(b, &got))
	return &got
}

// sameRequest fails t unless two requests are equal, but for the order of
// their resources (the stock exporter's is a map's).
func sameRequest(t testing.TB, want, got *coltracepb.ExportTraceServiceRequest) {
	t.Helper()
	for _, r := range []*coltracepb.ExportTraceServiceRequest{want, got} {
		slices.SortFunc(r.ResourceSpans, func(a, b *tracepb.ResourceSpans) int {
			x, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a.GetResource())
			y, _ := proto.MarshalOptions{Deterministic: true}.Marshal(b.GetResource())
			return bytes.Compare(x, y)
		})
	}
	if !proto.Equal(want, got) {
		t.Fatalf("the encoder's request differs from the stock exporter's:\nwant %v\ngot  %v", want, got)
	}
}

var (
	tid, _ = trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ = trace.SpanIDFromHex("00f067aa0ba902b7")
	pid, _ = trace.SpanIDFromHex("b7ad6b7169203331")
)

// everything is a set of spans that uses every field the encoder writes:
// two resources (one without attributes), three scopes, remote and local
// parents, every attribute type, events, links, statuses and dropped
// counts.
func everything(t testing.TB) []sdktrace.ReadOnlySpan {
	state, err := trace.ParseTraceState("vendor=abc,other=1")
	require.NoError(t, err)
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.40.0",
		attribute.String("service.name", "svc"), attribute.String("service.version", "1.2.3"))
	other := resource.NewSchemaless(attribute.String("service.name", "other"))
	scope := instrumentation.Scope{Name: Name, Version: "v1", SchemaURL: "https://example.com/s",
		Attributes: attribute.NewSet(attribute.Bool("x", true))}
	start := time.Unix(1_700_000_000, 123_456_789)
	long := string(bytes.Repeat([]byte("é"), 200)) // a length of two varint bytes
	attrs := []attribute.KeyValue{
		attribute.String("s", "text"), attribute.String("empty", ""), attribute.String("long", long),
		attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("zero", 0), attribute.Int64("neg", -42), attribute.Int64("max", math.MaxInt64),
		attribute.Float64("pi", 3.14159), attribute.Float64("nzero", math.Copysign(0, -1)),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, -2, 3}),
		attribute.Float64Slice("fs", []float64{0.5, -1}), attribute.StringSlice("ss", []string{"stop", "", "length"}),
		attribute.StringSlice("none", nil),
		{Key: "bytes", Value: attribute.ByteSliceValue([]byte{0, 1, 2})},
		{Key: "slice", Value: attribute.SliceValue(attribute.StringValue("a"), attribute.IntValue(1))},
		{Key: "map", Value: attribute.MapValue(attribute.String("k", "v"), attribute.Int("n", 2))},
		{Key: "unset"},
	}
	local := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled})
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled, Remote: true})
	stubs := tracetest.SpanStubs{
		{
			Name: "POST /v1/chat/completions", SpanKind: trace.SpanKindServer, Parent: remote,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: state}),
			StartTime:   start, EndTime: start.Add(3 * time.Millisecond), Attributes: attrs,
			Events: []sdktrace.Event{
				{Name: "exception", Time: start.Add(time.Millisecond), Attributes: []attribute.KeyValue{attribute.String("m", "x")}, DroppedAttributeCount: 2},
				{Name: "bare", Time: start},
			},
			Links: []sdktrace.Link{
				{SpanContext: local, Attributes: []attribute.KeyValue{attribute.Int("n", 1)}, DroppedAttributeCount: 1},
				{SpanContext: remote},
			},
			Status:            sdktrace.Status{Code: codes.Error, Description: "providers failed"},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5, ChildSpanCount: 2,
			Resource: res, InstrumentationScope: scope,
		},
		{
			Name: "authenticate", SpanKind: trace.SpanKindInternal, Parent: local,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid}),
			StartTime:   start, EndTime: start.Add(time.Microsecond), Status: sdktrace.Status{Code: codes.Ok},
			Resource: res, InstrumentationScope: scope,
		},
		{Name: "other scope", SpanKind: trace.SpanKindClient, Resource: res, InstrumentationScope: instrumentation.Scope{Name: "else"}},
		{Name: "no scope", SpanKind: trace.SpanKindProducer, Resource: res},
		{Name: "another resource", SpanKind: trace.SpanKindConsumer, Resource: other, InstrumentationScope: scope},
		{Name: "unspecified", Resource: res, InstrumentationScope: scope, StartTime: time.Unix(-5, 0)},
		{Name: "no resource", SpanKind: trace.SpanKind(9)},
	}
	return stubs.Snapshots()
}

// The encoder's request decodes to what the SDK's own OTLP exporter
// sends, field for field, whatever the spans hold.
func TestEncoderMatchesTheStockExporter(t *testing.T) {
	spans := everything(t)
	sameRequest(t, stock(t, spans), ours(t, spans))
	for i := range spans {
		sameRequest(t, stock(t, spans[i:i+1]), ours(t, spans[i:i+1]))
	}
	sameRequest(t, stock(t, nil), ours(t, nil))
}

// Spans the SDK recorded, as svc makes them, encode as the stock exporter
// sends them, and the encoder's scratch serves export after export.
func TestEncoderOnRecordedSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"))))
	ctx, root := tp.Tracer(Name).Start(context.Background(), "POST /v1/chat/completions", trace.WithSpanKind(trace.SpanKindServer))
	for range 3 {
		_, child := Start(ctx, "chat gpt-4o-mini", trace.SpanKindClient)
		child.SetAttributes(attribute.String("gen_ai.request.model", "gpt-4o-mini"), attribute.Int("gen_ai.usage.input_tokens", 12))
		Fail(child, "503", "unavailable")
		child.End()
	}
	root.End()
	spans := rec.Ended()
	var e encoder
	var b []byte
	for range 2 {
		b = e.appendRequest(b[:0], spans)
		var got coltracepb.ExportTraceServiceRequest
		require.NoError(t, proto.Unmarshal(b, &got))
		sameRequest(t, stock(t, spans), &got)
	}
}

// The encoder's request is valid protobuf and matches the stock exporter's
// for any names, attributes, times, kinds and statuses.
func FuzzEncoder(f *testing.F) {
	f.Add("chat gpt-4o-mini", "svc.run.id", "run_1", int64(42), 0.5, true, []byte{1}, uint8(1), uint8(2), "desc", int64(1_700_000_000_000_000_000), uint16(3))
	f.Add("", "", "", int64(-1), math.Inf(1), false, []byte(nil), uint8(7), uint8(9), "", int64(-1), uint16(0))
	f.Fuzz(func(t *testing.T, name, key, value string, n int64, x float64, b bool, raw []byte, kind, code uint8, desc string, ns int64, dropped uint16) {
		if math.IsNaN(x) {
			x = 0 // NaN is never equal to itself, even decoded
		}
		spans := fuzzSpans(name, key, value, n, x, b, raw, kind, code, desc, ns, dropped)
		// The stock exporter cannot send a string that is not UTF-8 (its
		// batch fails); svc's sends it mended.
		v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		valid := fuzzSpans(v(name), v(key), v(value), n, x, b, raw, kind, code, v(desc), ns, dropped)
		sameRequest(t, stock(t, valid), ours(t, spans))
	})
}

// fuzzSpans are two spans of the fuzzer's values.
func fuzzSpans(name, key, value string, n int64, x float64, b bool, raw []byte, kind, code uint8, desc string, ns int64, dropped uint16) []sdktrace.ReadOnlySpan {
	attrs := []attribute.KeyValue{attribute.String(key, value), attribute.Int64(key+"n", n), attribute.Float64(key+"x", x),
		attribute.Bool(key+"b", b), attribute.StringSlice(key+"s", []string{value, name}),
		{Key: attribute.Key(key + "r"), Value: attribute.ByteSliceValue(raw)}}
	stub := tracetest.SpanStub{
		Name: name, SpanKind: trace.SpanKind(kind % 8), Attributes: attrs,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(kind)}),
		Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, Remote: b}),
		StartTime:   time.Unix(0, ns), EndTime: time.Unix(0, ns).Add(time.Duration(dropped)),
		Events:            []sdktrace.Event{{Name: desc, Time: time.Unix(0, ns), Attributes: attrs[:1]}},
		Status:            sdktrace.Status{Code: codes.Code(code % 4), Description: desc},
		DroppedAttributes: int(dropped), DroppedEvents: int(dropped) * 7, DroppedLinks: -int(dropped),
		Resource:             resource.NewSchemaless(attribute.String(key, value)),
		InstrumentationScope: instrumentation.Scope{Name: name, Version: value},
	}
	return tracetest.SpanStubs{stub, stub}.Snapshots()
}

// BenchmarkEncoder is what encoding a batch of svc's spans costs, against
// the stock exporter's conversion and marshalling of the same batch.
func BenchmarkEncoder(b *testing.B) {
	spans := batch(b, 512)
	b.Run("svc", func(b *testing.B) {
		var e encoder
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = e.appendRequest(buf[:0], spans)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/span")
	})
	b.Run("stock", func(b *testing.B) {
		c := &captured{}
		exp, err := otlptrace.New(context.Background(), c)
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			_ = exp.ExportSpans(context.Background(), spans)
			_, _ = proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: c.got})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/span")
	})
}

// batch is n spans like a live call's: a server span and its children,
// eight a call, with their attributes.
func batch(t testing.TB, n int) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"), attribute.String("service.version", "dev"))))
	for len(rec.Ended()) < n {
		CallSpans(tp.Tracer(Name))
	}
	// What the batch processor is given are the spans' snapshots.
	return tracetest.SpanStubsFromReadOnlySpans(rec.Ended()[:n]).Snapshots()
}
