package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

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
	return s.Spans.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method)))
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
	if route := routeOf(r.Pattern); route != "" {
		span.SetName(r.Method + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route))
	}
	span.SetAttributes(semconv.URLPath(logPath(r)), semconv.HTTPResponseStatusCode(status))
	if status >= 500 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// routeOf is the path of a mux pattern ("POST /v1/models" → "/v1/models").
func routeOf(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}
