package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/tracing"
)

// startSpan starts the request's server span, the child of the caller's
// traceparent when it sent one. With tracing off it only reads that
// traceparent, so that the provider is passed the caller's trace context
// unchanged; a request without one costs a header lookup.
func (s *Server) startSpan(r *http.Request) (context.Context, trace.Span) {
	ctx := r.Context()
	carrier := propagation.HeaderCarrier(r.Header)
	if s.Spans == nil {
		if r.Header.Get("Traceparent") == "" {
			return ctx, trace.SpanFromContext(ctx)
		}
		ctx = tracing.Propagator.Extract(ctx, carrier)
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx = tracing.Propagator.Extract(ctx, carrier)
	return s.Spans.Start(ctx, r.Method, serverOptions(r.Method)...)
}

// methodOptions are the server span's start options for the common
// methods, made once.
var methodOptions = func() map[string][]trace.SpanStartOption {
	m := map[string][]trace.SpanStartOption{}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		m[method] = newServerOptions(method)
	}
	return m
}()

func serverOptions(method string) []trace.SpanStartOption {
	if o, ok := methodOptions[method]; ok {
		return o
	}
	return newServerOptions(method)
}

func newServerOptions(method string) []trace.SpanStartOption {
	return []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method))}
}

// endSpan names the span by its route, once the mux has matched one
// ("POST /v1/chat/completions"), and ends it with the answer's status.
// Its url.path is the path as logged: never the query, and the route
// pattern where the path carries a one-time token.
func endSpan(span trace.Span, r *http.Request, status int) {
	if ri, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		ri.span = span.SpanContext()
	}
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	if method, route, ok := strings.Cut(r.Pattern, " "); ok && method == r.Method {
		span.SetName(r.Pattern) // the pattern is the name: nothing to build
		attrs = append(attrs, semconv.HTTPRoute(route))
	} else if route := routeOf(r.Pattern); route != "" {
		span.SetName(r.Method + " " + route)
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	attrs = append(attrs, semconv.URLPath(logPath(r)), semconv.HTTPResponseStatusCode(status))
	if status >= 500 {
		attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		span.SetStatus(codes.Error, "")
	}
	span.SetAttributes(attrs...)
	span.End()
}

// routeOf is the path of a mux pattern ("POST /v1/models" → "/v1/models").
func routeOf(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}
