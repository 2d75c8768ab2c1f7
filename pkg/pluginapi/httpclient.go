package pluginapi

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// UpstreamResponseHeaderTimeout bounds the wait for an upstream's response
// headers. A non-streamed answer's headers come once the whole answer is
// generated, which takes a reasoning model or a long answer minutes: this
// is the OpenAI and Anthropic SDKs' default timeout.
const UpstreamResponseHeaderTimeout = 10 * time.Minute

// NewUpstreamClient returns the HTTP client a provider calls its upstream
// with. It has no overall Timeout, which would cut long streams; the
// dialer, the TLS handshake and the wait for response headers are bounded
// instead, and the caller's context bounds the whole call. It follows no
// redirect: a provider API does not redirect, and following one would turn
// a POST into a GET and carry the request, and its key, elsewhere; the
// redirect is the upstream's answer instead.
func NewUpstreamClient() *http.Client {
	return &http.Client{
		Transport:     newUpstreamTransport(nil),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// newUpstreamTransport is NewUpstreamClient's transport, trusting
// tlsConfig's roots (nil: the system's), with net/http's Transport for
// proxied requests under the same bounds.
func newUpstreamTransport(tlsConfig *tls.Config) *UpstreamTransport {
	const (
		maxIdle          = 256
		idleTimeout      = 90 * time.Second
		handshakeTimeout = 10 * time.Second
	)
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &UpstreamTransport{
		Fallback: &http.Transport{
			Proxy:                  http.ProxyFromEnvironment,
			DialContext:            dialer.DialContext,
			TLSClientConfig:        tlsConfig,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           maxIdle,
			MaxIdleConnsPerHost:    maxIdle,
			IdleConnTimeout:        idleTimeout,
			TLSHandshakeTimeout:    handshakeTimeout,
			ResponseHeaderTimeout:  UpstreamResponseHeaderTimeout,
			MaxResponseHeaderBytes: defaultMaxResponseHeaderBytes,
			ExpectContinueTimeout:  time.Second,
		},
		Dialer: dialer, TLSClientConfig: tlsConfig,
		MaxIdleConnsPerHost: maxIdle, IdleConnTimeout: idleTimeout,
		TLSHandshakeTimeout: handshakeTimeout, ResponseHeaderTimeout: UpstreamResponseHeaderTimeout,
		MaxResponseHeaderBytes: defaultMaxResponseHeaderBytes,
	}
}

// Call names one call to an upstream: svc's run id and the W3C trace
// context of svc's attempt. The zero Call names nothing (a model list).
type Call struct{ RequestID, TraceParent, TraceState string }

// Call is the call req names upstream.
func (req ChatRequest) Call() Call { return Call{req.RequestID, req.TraceParent, req.TraceState} }

// Call is the call req names upstream.
func (req EmbedRequest) Call() Call { return Call{req.RequestID, req.TraceParent, req.TraceState} }

// SetHeaders puts the call on an upstream request: X-Request-Id, and the
// traceparent and tracestate headers, so that the upstream's spans join
// the call's trace; each only when known.
func (c Call) SetHeaders(h http.Header) {
	if c.RequestID != "" {
		h["X-Request-Id"] = []string{c.RequestID}
	}
	if c.TraceParent != "" {
		h["Traceparent"] = []string{c.TraceParent}
		if c.TraceState != "" {
			h["Tracestate"] = []string{c.TraceState}
		}
	}
}
