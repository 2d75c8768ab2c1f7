package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/tracing"
)

func TestClientKeyWalksEveryForwardedForLine(t *testing.T) {
	s := &Server{Deps: Deps{Config: &config.Config{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}}}}
	for _, c := range []struct {
		remote string
		lines  []string
		want   string
	}{
		{"127.0.0.1:1", nil, "127.0.0.1"},
		{"127.0.0.1:1", []string{"203.0.113.1"}, "203.0.113.1"},
		{"127.0.0.1:1", []string{"198.51.100.9, 203.0.113.1, 10.1.2.3"}, "203.0.113.1"},
		// The nearest hop is in the last line: an earlier line is further away.
		{"127.0.0.1:1", []string{"198.51.100.9", "203.0.113.1, 10.1.2.3"}, "203.0.113.1"},
		{"127.0.0.1:1", []string{"198.51.100.9, 203.0.113.1", "10.1.2.3", "127.0.0.1"}, "203.0.113.1"},
		{"127.0.0.1:1", []string{"198.51.100.9", "", " , ,10.1.2.3 "}, "198.51.100.9"},
		{"127.0.0.1:1", []string{"10.0.0.1", "127.0.0.1"}, "127.0.0.1"},
		{"127.0.0.1:1", []string{"198.51.100.9", "not-an-address, 10.1.2.3"}, "127.0.0.1"},
		{"127.0.0.1:1", []string{"2001:db8:1:2::7", " ::ffff:10.0.0.1"}, "2001:db8:1:2::/64"},
		{"192.0.2.5:1", []string{"203.0.113.1"}, "192.0.2.5"}, // not a trusted proxy
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		for _, l := range c.lines {
			r.Header.Add("X-Forwarded-For", l)
		}
		assert.Equal(t, c.want, s.clientKey(r), "%q", c.lines)
	}
}

// A server span names its peer and its client: behind a trusted proxy, the
// client it forwarded for and the scheme it was asked with; anyone else's
// forwarding headers are not believed.
func TestServerSpanNamesPeerAndClient(t *testing.T) {
	s := &Server{Deps: Deps{Config: &config.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}}
	attrsOf := func(r *http.Request) map[string]string {
		rec := tracetest.NewSpanRecorder()
		_, span := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t").Start(context.Background(), "x")
		attrs := tracing.NewAttrs()
		s.addConnection(attrs, r)
		attrs.SetOn(span)
		span.End()
		got := map[string]string{}
		for _, kv := range rec.Ended()[0].Attributes() {
			got[string(kv.Key)] = kv.Value.String()
		}
		return got
	}
	request := func(remote string) *http.Request {
		r := httptest.NewRequest("GET", "http://svc.example:4100/v1/models", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", "203.0.113.7")
		r.Header.Set("X-Forwarded-Proto", "https")
		r.Header.Set("User-Agent", "sdk/1.0")
		return r
	}
	assert.Equal(t, map[string]string{"url.scheme": "https", "server.address": "svc.example", "server.port": "4100",
		"network.protocol.version": "1.1", "network.peer.address": "10.1.2.3", "client.address": "203.0.113.7",
		"user_agent.original": "sdk/1.0"}, attrsOf(request("10.1.2.3:5555")))
	direct := attrsOf(request("192.0.2.5:5555"))
	assert.Equal(t, "http", direct["url.scheme"])
	assert.Equal(t, "192.0.2.5", direct["network.peer.address"])
	assert.Equal(t, "192.0.2.5", direct["client.address"])
}

// A server span is named by its route, and by its method alone when no
// route took the request: only an API fallback, or the console's files
// without the file, matched it.
func TestServerSpanNameIsItsRoute(t *testing.T) {
	s := &Server{Deps: Deps{Config: &config.Config{}}}
	nameOf := func(method, pattern string, status int) string {
		rec := tracetest.NewSpanRecorder()
		_, span := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t").Start(context.Background(), method)
		r := httptest.NewRequest(method, "http://svc.example/x", nil)
		r.Pattern = pattern
		s.endSpan(span, r, status)
		return rec.Ended()[0].Name()
	}
	assert.Equal(t, "POST /v1/chat/completions", nameOf("POST", "POST /v1/chat/completions", 200))
	assert.Equal(t, "HEAD /metrics", nameOf("HEAD", "GET /metrics", 200), "a GET pattern answers HEAD")
	assert.Equal(t, "GET /", nameOf("GET", "/", 200), "the console's files")
	assert.Equal(t, "POST", nameOf("POST", "/", 405), "no route: /metrics with another method")
	assert.Equal(t, "GET", nameOf("GET", "/", 404), "no such file")
	assert.Equal(t, "DELETE", nameOf("DELETE", "/v1/", 405))
	assert.Equal(t, "GET", nameOf("GET", "/api/", 404))
	assert.Equal(t, "OPTIONS", nameOf("OPTIONS", "", 204), "a preflight")
}
