package pluginapi

import (
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
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: UpstreamResponseHeaderTimeout,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
