package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/net/http/httpguts"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/tracing"
)

// reqInfo collects what the request log line reports; handlers deeper in
// the stack fill it in.
type reqInfo struct {
	status int
	bytes  int64
	tenant string
	code   string
	// message is the public text of the error answered with.
	message string
	span    trace.SpanContext // the request's span, or the caller's when svc traces nothing
	// call is the gateway request's record; nil for any other request.
	call *gatewayCall
}

// identified notes the caller.
func (ri *reqInfo) identified(id *auth.Identity) {
	ri.tenant = id.TenantID
	if ri.call != nil {
		ri.call.id = id
	}
}

// errorClass is the answer's error code, or its status when no error
// named one.
func (ri *reqInfo) errorClass() string {
	if ri.code != "" {
		return ri.code
	}
	return strconv.Itoa(ri.status)
}

type infoKey struct{}

// info returns the request's log record, or a throwaway one outside the
// middleware (tests calling handlers directly).
func info(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// recordingWriter notes the status and size of the answer.
type recordingWriter struct {
	http.ResponseWriter
	info        *reqInfo
	wroteHeader bool
}

func (w *recordingWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		if w.info.status == 0 {
			w.info.status = status
		}
		if w.info.call != nil {
			w.info.call.answering(w.Header())
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.info.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through, for streamed answers.
func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if !w.wroteHeader {
			w.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}

// sendNow sends an answer whose length the handler declared, so that the
// client has it before the metrics, span and log line that follow:
// net/http would hold a small answer in its buffer until the middleware
// returns. An answer of unknown length is left to net/http, which sizes
// it or chunks it when the handler returns.
func sendNow(w *recordingWriter) {
	if w.wroteHeader && w.Header().Get("Content-Length") != "" {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// logRequests writes one structured line per request.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{}
		rw := &recordingWriter{ResponseWriter: w, info: ri}
		ctx, span := s.startSpan(r)
		ctx = context.WithValue(ctx, infoKey{}, ri)
		if endpoint := gatewayEndpoint(r); endpoint != "" || strings.HasPrefix(r.URL.Path, "/v1/") {
			// Every answer under /v1/ carries svc's overhead; only the
			// gateway's endpoints are counted and traced as calls.
			ri.call, ctx = newGatewayCall(ctx, endpoint, start)
			if op := callOperation(endpoint); op != "" {
				ctx, ri.call.span = tracing.StartCall(ctx, op)
			}
		}
		r = r.WithContext(ctx)
		next.ServeHTTP(rw, r)
		end := time.Now()
		sendNow(rw)
		if ri.status == 0 {
			ri.status = http.StatusOK
		}
		if ri.call != nil {
			ri.call.span.End(ri.status, ri.errorClass(), ri.message)
			s.observe(ri.call, ri.status, end)
		}
		s.endSpan(span, r, ri.status)
		level := hclog.Info
		if r.URL.Path == "/health" || r.URL.Path == "/metrics" {
			level = hclog.Debug // probes and scrapes, every few seconds
		}
		if s.log.GetLevel() > level {
			return
		}
		args := []any{
			"method", r.Method, "path", logPath(r), "status", ri.status,
			"duration_ms", float64(end.Sub(start).Microseconds()) / 1000, "bytes", ri.bytes,
		}
		if ri.call != nil && ri.call.outcome.RunID != "" {
			args = append(args, "run_id", ri.call.outcome.RunID)
		}
		if ri.tenant != "" {
			args = append(args, "tenant", ri.tenant)
		}
		if ri.code != "" {
			args = append(args, "code", ri.code)
		}
		if ri.span.IsValid() {
			args = append(args, "trace_id", ri.span.TraceID().String(), "span_id", ri.span.SpanID().String())
		}
		s.log.Log(level, "request", args...)
	})
}

// logPath is the path to log: the route pattern instead of the raw path when
// the path carries a secret (one-time tokens travel in some URLs). The query
// string is never logged: the account pages (/accept-invite?token=…) carry
// their one-time tokens there.
func logPath(r *http.Request) string {
	if strings.Contains(r.Pattern, "{token}") {
		_, pattern, _ := strings.Cut(r.Pattern, " ")
		return pattern
	}
	return r.URL.Path
}

// recoverPanics turns a panic into a 500 and a log line with the stack,
// instead of a dropped connection.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // net/http compares the sentinel the same way
				panic(v)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", hclog.Stacktrace())
			s.writeError(w, r, errs.E(errs.Internal, "internal", "internal error"))
		}()
		next.ServeHTTP(w, r)
	})
}

// securityHeaders sets the headers every answer carries: no sniffing, no
// caching of API answers, and for pages a strict content policy.
func (s *Server) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if isAPIPath(r.URL.Path) {
			setPrepared(h, apiHeaders)
		} else {
			setPrepared(h, pageHeaders)
		}
		next.ServeHTTP(w, r)
	})
}

// preparedHeader is a header's canonical name and its one value, made
// once: every answer shares the value's slice rather than allocating its
// own. The slice's capacity is its length, so that an Add to the header
// copies it rather than writing into the shared array.
type preparedHeader struct {
	name  string
	value []string
}

func prepared(name, value string) preparedHeader {
	return preparedHeader{http.CanonicalHeaderKey(name), []string{value}[:1:1]}
}

var (
	apiHeaders = []preparedHeader{
		prepared("X-Content-Type-Options", "nosniff"),
		prepared("Cache-Control", "no-store"),
	}
	pageHeaders = []preparedHeader{
		prepared("X-Content-Type-Options", "nosniff"),
		prepared("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"),
		prepared("Referrer-Policy", "no-referrer"),
		prepared("Cross-Origin-Opener-Policy", "same-origin"),
		prepared("X-Frame-Options", "DENY"),
	}
)

// setPrepared sets each of hs in h, as Header.Set would.
func setPrepared(h http.Header, hs []preparedHeader) {
	for _, p := range hs {
		h[p.name] = p.value
	}
}

func isAPIPath(p string) bool {
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/v1/") || p == "/health" || p == "/metrics"
}

// CORS: browser code on another origin may call the API with a bearer token
// and read svc's run headers. Credentials (cookies) are never allowed
// cross-origin, which a wildcard origin guarantees.
const (
	corsAllowHeaders  = "Authorization, Content-Type, X-Svc-App, X-Svc-Agent, X-Svc-Subject, Traceparent, Tracestate"
	corsExposeHeaders = "x-svc-run-id, x-svc-route, x-svc-overhead-ms, retry-after"
	corsAllowMethods  = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
	// corsMaxRequestHeaders bounds the names a /v1 preflight may ask for.
	corsMaxRequestHeaders = 64
)

func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAPIPath(r.URL.Path) || r.Header.Get("Origin") == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeadersFor(r))
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// corsAllowHeadersFor is the Access-Control-Allow-Headers of a preflight.
// On the /v1 gateway it is the headers the preflight asked for: the OpenAI
// SDKs send their own (x-stainless-*, openai-organization, openai-beta,
// idempotency-key, …) and more with each release, and none of them can
// carry a cookie, which is never allowed. A list that is not a list of
// header names, or too long, gets the fixed list, which the browser then
// holds the request against. Elsewhere it is the fixed list.
func corsAllowHeadersFor(r *http.Request) string {
	asked := r.Header.Values("Access-Control-Request-Headers")
	if !strings.HasPrefix(r.URL.Path, "/v1/") || len(asked) == 0 {
		return corsAllowHeaders
	}
	names := make([]string, 0, 16)
	for _, v := range asked {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if !httpguts.ValidHeaderFieldName(name) || len(names) == corsMaxRequestHeaders {
				return corsAllowHeaders
			}
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return corsAllowHeaders
	}
	return strings.Join(names, ", ")
}

// limitBody caps every request body; reading past the cap fails with a
// *http.MaxBytesError, which becomes 413.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.Config.MaxBodyBytes {
			// Refused before the mux: the route it would have matched
			// still names the request's span.
			_, r.Pattern = s.mux.Handler(r)
			s.writeError(w, r, errs.E(errs.TooLarge, "body_too_large", "request body is larger than %d bytes", s.Config.MaxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.Config.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

func methodNotAllowed(w http.ResponseWriter, allowed []string) error {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	return errs.E(errs.BadMethod, "method_not_allowed", "method not allowed; use %s", strings.Join(allowed, ", "))
}

func notFound(msg string) error { return errs.E(errs.NotFound, "not_found", "%s", msg) }
