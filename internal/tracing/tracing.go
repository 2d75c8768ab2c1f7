// Package tracing sets up svc's OpenTelemetry traces and holds the helpers
// every traced package uses. Setup reads the standard OTEL_* variables;
// spans are recorded by the OpenTelemetry SDK, batched by a processor of
// svc's (batch.go) and exported over OTLP/HTTP by an exporter of svc's
// that encodes them straight to protobuf (export.go, otlp.go), or over
// gRPC by the SDK's. With tracing off nothing of the SDK runs, and a span
// is started only under a span that records, so the request path pays one
// context lookup.
package tracing

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/svc-gateway/svc/internal/conffile"
	"github.com/svc-gateway/svc/internal/errs"
)

// Name is the instrumentation scope of every span svc makes.
const Name = "github.com/svc-gateway/svc"

// Attributes svc adds beside the semantic conventions' (the contract's
// names).
const (
	RunID    = attribute.Key("svc.run.id")
	TenantID = attribute.Key("svc.tenant.id")
	Route    = attribute.Key("svc.route")
	Provider = attribute.Key("svc.provider")
	Outcome  = attribute.Key("svc.outcome")
)

// Propagator reads and writes the W3C trace context and baggage headers.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(
	propagation.TraceContext{}, propagation.Baggage{})

// Options configure New.
type Options struct {
	// On says that traces are exported (config.Tracing); off, the tracer
	// is a no-op and no exporter is made.
	On bool
	// Version is the build's, the resource's service.version.
	Version string
	// Getenv reads the variables; nil is os.Getenv.
	Getenv func(string) string
	// Logger receives the exporter's failures (a collector that cannot be
	// reached); nil discards them.
	Logger hclog.Logger
}

// Tracing is svc's tracer and what stops it.
type Tracing struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
	sdk      *sdktrace.TracerProvider // nil when off
}

// New builds the tracer provider: an OTLP exporter over HTTP
// (http/protobuf, the default) or gRPC, as OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// or OTEL_EXPORTER_OTLP_PROTOCOL says, behind a batch span processor
// (OTEL_BSP_*); the resource names the service (OTEL_SERVICE_NAME, else
// "svc"), its version, the SDK (telemetry.sdk.*) and
// OTEL_RESOURCE_ATTRIBUTES; the sampler is the SDK's default, which
// OTEL_TRACES_SAMPLER overrides (parent-based always-on when unset).
func New(ctx context.Context, o Options) (*Tracing, error) {
	if !o.On {
		p := noop.NewTracerProvider()
		return &Tracing{provider: p, tracer: p.Tracer(Name)}, nil
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Logger != nil {
		// The SDK reports through one handler per process; svc has one
		// tracer provider.
		w := &warnings{log: o.Logger, every: warningInterval, now: time.Now, afterFunc: func(d time.Duration, f func()) func() bool {
			return time.AfterFunc(d, f).Stop
		}}
		otel.SetErrorHandler(otel.ErrorHandlerFunc(w.Handle))
	}
	exporter, err := newExporter(ctx, protocol(getenv), getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(), // telemetry.sdk.name, .language and .version
		resource.WithAttributes(semconv.ServiceName("svc"), semconv.ServiceVersion(o.Version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exporter.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	batches := newBatcher(exporter, readBatchOptions(getenv, otel.Handle), otel.Handle)
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(batches), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(orderedIDs{now: time.Now}))
	return &Tracing{provider: sdk, tracer: sdk.Tracer(Name), sdk: sdk}, nil
}

// readPEM reads a certificate or key file the OTEL_* variables name: a
// regular file of at most 1 MiB.
func readPEM(path string) ([]byte, error) { return conffile.Read(path, 1<<20) }

// protocol is the OTLP protocol the variables ask for, http/protobuf by
// default.
func protocol(getenv func(string) string) string {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return strings.ToLower(v)
		}
	}
	return "http/protobuf"
}

// newExporter makes the exporter of proto: over HTTP, svc's own (the
// stock one's conversion of each span was half of what a span cost); over
// gRPC, the SDK's.
func newExporter(ctx context.Context, proto string, getenv func(string) string) (sdktrace.SpanExporter, error) {
	switch proto {
	case "grpc":
		return otlptracegrpc.New(ctx)
	case "http/protobuf":
		return newHTTPExporter(readHTTPConfig(getenv, readPEM, otel.Handle)), nil
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not a protocol svc exports with (grpc, http/protobuf)", proto)
	}
}

// Tracer is the tracer of the spans that start a trace: an HTTP request,
// a job.
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// Enabled says whether spans are exported.
func (t *Tracing) Enabled() bool { return t.sdk != nil }

// Shutdown exports the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Start starts a child span of the span in ctx, with the tracer that made
// it, only when that span records: under no span, or one that is not
// sampled, ctx and its span come back as they are and nothing is
// allocated. The caller ends the span it gets (ending a span that does not
// record does nothing).
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return tracerOf(parent.TracerProvider()).Start(ctx, name, kindOption(kind)...)
}

// scoped is an SDK tracer provider and its tracer of svc's scope.
type scoped struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// lastTracer is the tracer Start used last, with its provider: svc has one
// provider, so asking it for the tracer (a lock and a map lookup in the
// SDK) is done once rather than for every span.
var lastTracer atomic.Pointer[scoped]

func tracerOf(p trace.TracerProvider) trace.Tracer {
	sdk, ok := p.(*sdktrace.TracerProvider)
	if !ok {
		return p.Tracer(Name)
	}
	if s := lastTracer.Load(); s != nil && s.provider == sdk {
		return s.tracer
	}
	s := &scoped{provider: sdk, tracer: sdk.Tracer(Name)}
	lastTracer.Store(s)
	return s.tracer
}

// kindOptions are the start options of each span kind, made once.
var kindOptions = func() [trace.SpanKindConsumer + 1][]trace.SpanStartOption {
	var o [trace.SpanKindConsumer + 1][]trace.SpanStartOption
	for k := range o {
		o[k] = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKind(k))}
	}
	return o
}()

func kindOption(k trace.SpanKind) []trace.SpanStartOption {
	if k < 0 || int(k) >= len(kindOptions) {
		return nil
	}
	return kindOptions[k]
}

// Recording says whether ctx's span records, that is, whether attributes
// set on it are kept: callers check it before building them.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// Fail marks span as failed: error.type is the failure's class (an error
// code, or a status), description its public text.
func Fail(span trace.Span, class, description string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(class))
	span.SetStatus(codes.Error, description)
}

// W3C is ctx's span context as the traceparent and tracestate header
// values, empty when ctx holds no valid one. With tracing off it is the
// caller's own traceparent, unchanged.
func W3C(ctx context.Context) (traceparent, tracestate string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:]), capState(sc.TraceState().String())
}

// maxState is the tracestate svc passes on at most, W3C's recommended
// limit: a caller's oversized header does not go upstream whole.
const maxState = 512

// capState cuts a tracestate longer than maxState, dropping whole members
// from the end (the oldest) until it fits.
func capState(s string) string {
	for len(s) > maxState {
		i := strings.LastIndexByte(s, ',')
		if i < 0 {
			return ""
		}
		s = s[:i]
	}
	return s
}

// TraceID is ctx's trace id in hex, empty when it holds no valid span
// context: a run names the trace it was part of, sampled or passed on.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Error marks span as failed with err: error.type is its machine code,
// the status its public text (never the private cause).
func Error(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	Fail(span, errs.Code(err), errs.Public(err))
}
