package httpapi

import (
	"context"
	"net"
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
	if r.Header.Get("Traceparent") != "" || r.Header.Get("Baggage") != "" {
		// Without either there is nothing to read (the propagators would
		// look them up under names not in canonical form, a copy each).
		ctx = tracing.Propagator.Extract(ctx, carrier)
	}
	return s.Spans.Start(ctx, r.Method, serverOptions...)
}

// serverOptions start a server span; its attributes are set when it ends,
// all in one call (no sampler svc can be configured with reads them).
var serverOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// endSpan names the span by its route, once the mux has matched one
// ("POST /v1/chat/completions"), and ends it with the answer's status.
// Its url.path is the path as logged: never the query, and the route
// pattern where the path carries a one-time token.
func (s *Server) endSpan(span trace.Span, r *http.Request, status int) {
	if ri, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		ri.span = span.SpanContext()
	}
	if !span.IsRecording() {
		return
	}
	attrs := tracing.NewAttrs()
	attrs.Add(semconv.HTTPRequestMethodKey.String(r.Method))
	if method, route, ok := strings.Cut(r.Pattern, " "); ok && method == r.Method {
		span.SetName(r.Pattern) // the pattern is the name: nothing to build
		attrs.Add(semconv.HTTPRoute(route))
	} else if route := routeOf(r.Pattern); route != "" && !routeless(r.Pattern, status) {
		span.SetName(r.Method + " " + route)
		attrs.Add(semconv.HTTPRoute(route))
	}
	attrs.Add(semconv.URLPath(logPath(r)), semconv.HTTPResponseStatusCode(status))
	s.addConnection(attrs, r)
	if status >= 500 {
		attrs.Add(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		span.SetStatus(codes.Error, "")
	}
	attrs.SetOn(span)
	span.End()
}

// routeless says whether a request that only a catch-all pattern matched
// took no route, and keeps the span named by its method alone: the API's
// fallbacks always, the console's files when none answered.
func routeless(pattern string, status int) bool {
	switch pattern {
	case "/api/", "/v1/":
		return true
	case "/":
		return status == http.StatusNotFound || status == http.StatusMethodNotAllowed
	}
	return false
}

// routeOf is the path of a mux pattern ("POST /v1/models" → "/v1/models").
func routeOf(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

// addConnection adds what the HTTP conventions say of the request's
// connection: its scheme, the host and port the client asked for, the
// protocol's version, the peer's address, the client's (behind a trusted
// proxy, the one it forwarded for, and the scheme it was asked with) and
// the user agent.
func (s *Server) addConnection(attrs *tracing.Attrs, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if proto := r.Header.Get("X-Forwarded-Proto"); (proto == "https" || proto == "http") && s.fromTrustedProxy(r) {
		scheme = proto
	}
	attrs.Add(semconv.URLScheme(scheme))
	if host, port, err := net.SplitHostPort(r.Host); err == nil {
		attrs.Add(semconv.ServerAddress(host))
		if n, err := strconv.Atoi(port); err == nil {
			attrs.Add(semconv.ServerPort(n))
		}
	} else if r.Host != "" {
		attrs.Add(semconv.ServerAddress(r.Host))
	}
	if v := protocolVersion(r); v != "" {
		attrs.Add(semconv.NetworkProtocolVersion(v))
	}
	peer, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		peer = r.RemoteAddr
	}
	attrs.Add(semconv.NetworkPeerAddress(peer))
	client := s.clientAddress(r)
	if client == r.RemoteAddr { // not forwarded for another: the peer itself
		client = peer
	}
	attrs.Add(semconv.ClientAddress(client))
	if ua := r.UserAgent(); ua != "" {
		attrs.Add(semconv.UserAgentOriginal(ua))
	}
}

// protocolVersion is the request's HTTP version as the conventions write
// it ("1.1", "2"), without building the string for the usual ones.
func protocolVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 1 && r.ProtoMinor == 1:
		return "1.1"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor > 2: // "3": from 2 on, the major version alone
		return strconv.Itoa(r.ProtoMajor)
	case r.ProtoMajor == 1:
		return "1." + strconv.Itoa(r.ProtoMinor)
	}
	return ""
}
