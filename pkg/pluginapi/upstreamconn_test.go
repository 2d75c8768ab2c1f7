package pluginapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingServer is an upstream that counts the connections it accepted.
type countingServer struct {
	*httptest.Server
	conns atomic.Int32
}

func newCountingServer(t *testing.T, tls bool, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func testTransport(s *countingServer) *UpstreamTransport {
	var cfg *tls.Config
	if s.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(s.Certificate())
		cfg = &tls.Config{RootCAs: pool}
	}
	tr := newUpstreamTransport(cfg)
	tr.Fallback.Proxy = nil
	return tr
}

// send makes one request through tr and reads the whole answer.
func send(t *testing.T, tr http.RoundTripper, method, target, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, target, rd)
	require.NoError(t, err)
	res, err := tr.RoundTrip(req)
	require.NoError(t, err)
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	return res, string(got)
}

func echoBody(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(b))
}

func TestUpstreamTransportKeepsOneConnectionForSequentialCalls(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		s := newCountingServer(t, tlsOn, echoBody)
		tr := testTransport(s)
		for i := range 5 {
			res, got := send(t, tr, http.MethodPost, s.URL+"/chat", `{"n":1}`)
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, `POST /chat {"n":1}`, got, "call %d (TLS %v)", i, tlsOn)
		}
		assert.Equal(t, int32(1), s.conns.Load(), "TLS %v: sequential calls share a connection", tlsOn)
	}
}

func TestUpstreamTransportReadsChunkedAndEmptyAnswers(t *testing.T) {
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			for _, part := range []string{"data: a\n\n", "data: b\n\n"} {
				io.WriteString(w, part)
				w.(http.Flusher).Flush()
			}
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			io.WriteString(w, "after the hints")
		}
	})
	tr := testTransport(s)
	res, got := send(t, tr, http.MethodGet, s.URL+"/chunked", "")
	assert.Equal(t, "data: a\n\ndata: b\n\n", got)
	assert.Equal(t, []string{"chunked"}, res.TransferEncoding)
	res, got = send(t, tr, http.MethodGet, s.URL+"/empty", "")
	assert.Equal(t, http.StatusNoContent, res.StatusCode)
	assert.Empty(t, got)
	res, got = send(t, tr, http.MethodHead, s.URL+"/chunked", "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Empty(t, got)
	res, got = send(t, tr, http.MethodGet, s.URL+"/hints", "")
	assert.Equal(t, http.StatusOK, res.StatusCode, "an informational answer is skipped")
	assert.Equal(t, "after the hints", got)
	assert.Equal(t, int32(1), s.conns.Load(), "every answer was read whole: one connection serves them all")
}

func TestUpstreamTransportDropsAConnectionItCannotReuse(t *testing.T) {
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, strings.Repeat("x", 64<<10))
	})
	tr := testTransport(s)
	send(t, tr, http.MethodGet, s.URL+"/close", "")
	send(t, tr, http.MethodGet, s.URL+"/", "")
	assert.Equal(t, int32(2), s.conns.Load(), "an answer with Connection: close ends its connection")

	// A body closed before its end leaves the rest of it on the
	// connection: it is closed, not reused.
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/", nil)
	res, err := tr.RoundTrip(req)
	require.NoError(t, err)
	_, err = res.Body.Read(make([]byte, 10))
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	send(t, tr, http.MethodGet, s.URL+"/", "")
	assert.Equal(t, int32(3), s.conns.Load())
}

func TestUpstreamTransportKeepsAtMostItsIdleLimit(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 3)
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "ok")
	})
	tr := testTransport(s)
	tr.MaxIdleConnsPerHost = 1
	done := make(chan error, 3)
	for range 3 {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/", nil)
			res, err := tr.RoundTrip(req)
			if err == nil {
				_, err = io.ReadAll(res.Body)
				res.Body.Close()
			}
			done <- err
		}()
	}
	for range 3 {
		<-arrived
	}
	close(release)
	for range 3 {
		require.NoError(t, <-done)
	}
	tr.mu.Lock()
	kept := 0
	for _, list := range tr.idle {
		kept += len(list)
	}
	tr.mu.Unlock()
	assert.Equal(t, 1, kept)
	tr.CloseIdleConnections()
	assert.Empty(t, tr.idle)
}

func TestUpstreamTransportDropsConnectionsIdleTooLong(t *testing.T) {
	s := newCountingServer(t, false, echoBody)
	tr := testTransport(s)
	tr.IdleConnTimeout = time.Nanosecond
	send(t, tr, http.MethodGet, s.URL+"/", "")
	send(t, tr, http.MethodGet, s.URL+"/", "")
	assert.Equal(t, int32(2), s.conns.Load())
}

func TestUpstreamTransportEndsWithItsContext(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			io.WriteString(w, "first")
			w.(http.Flusher).Flush()
		} else {
			arrived <- struct{}{}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	// Released before the server closes (cleanups run last first): a
	// handler that never read its body does not see its client go.
	t.Cleanup(func() { close(release) })
	tr := testTransport(s)

	// Waiting for the answer's headers.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", strings.NewReader("x"))
	errc := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req)
		errc <- err
	}()
	<-arrived // the request was sent: the call waits for the headers
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)

	// Reading a body that has begun.
	ctx, cancel = context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/stream", nil)
	res, err := tr.RoundTrip(req)
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = io.ReadFull(res.Body, buf)
	require.NoError(t, err)
	cancel()
	_, err = res.Body.Read(buf)
	assert.ErrorIs(t, err, context.Canceled, "a read blocked on a cancelled call ends with the context's error")
	res.Body.Close()
	tr.mu.Lock()
	assert.Empty(t, tr.idle, "a cancelled call's connection is not kept")
	tr.mu.Unlock()
}

func TestUpstreamTransportBoundsTheWaitForHeaders(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	tr := testTransport(s)
	tr.ResponseHeaderTimeout = 50 * time.Millisecond
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/", nil)
	_, err := tr.RoundTrip(req)
	var ne net.Error
	require.True(t, errors.As(err, &ne), "got %v", err)
	assert.True(t, ne.Timeout())
}

func TestUpstreamTransportLeavesProxiedRequestsToNetHTTP(t *testing.T) {
	var proxied atomic.Value
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Store(r.URL.String()) // a proxy is sent the absolute URL
		io.WriteString(w, "via the proxy")
	}))
	t.Cleanup(proxy.Close)
	tr := newUpstreamTransport(nil)
	proxyURL, _ := url.Parse(proxy.URL)
	tr.Fallback.Proxy = http.ProxyURL(proxyURL)
	_, got := send(t, tr, http.MethodGet, "http://upstream.invalid/v1/models", "")
	assert.Equal(t, "via the proxy", got)
	assert.Equal(t, "http://upstream.invalid/v1/models", proxied.Load())
}

func TestUpstreamTransportReportsAnUnreachableUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	tr := newUpstreamTransport(nil)
	tr.Fallback.Proxy = nil
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader("x"))
	_, err = tr.RoundTrip(req)
	var oe *net.OpError
	require.True(t, errors.As(err, &oe), "got %v", err)
	assert.Equal(t, "dial", oe.Op)
}

// TestUpstreamTransportSendsAgainOnlyWhatMayGoTwice is the race the
// look before a reuse cannot see: the upstream closes a kept connection
// as the request reaches it. A GET goes again on a new connection; a POST
// may have been acted on, and fails, as it does through net/http.
func TestUpstreamTransportSendsAgainOnlyWhatMayGoTwice(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		var conns atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				n := conns.Add(1)
				go func() {
					defer c.Close()
					br := bufio.NewReader(c)
					for i := 0; ; i++ {
						req, err := http.ReadRequest(br)
						if err != nil {
							return
						}
						io.Copy(io.Discard, req.Body)
						if n == 1 && i == 1 {
							return // the second request on the first connection: closed unanswered
						}
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					}
				}()
			}
		}()
		tr := newUpstreamTransport(nil)
		tr.Fallback.Proxy = nil
		target := "http://" + ln.Addr().String() + "/"
		send(t, tr, method, target, "x")
		req, _ := http.NewRequest(method, target, strings.NewReader("x"))
		res, err := tr.RoundTrip(req)
		if method == http.MethodGet {
			require.NoError(t, err)
			got, _ := io.ReadAll(res.Body)
			res.Body.Close()
			assert.Equal(t, "ok", string(got))
			assert.Equal(t, int32(2), conns.Load())
		} else {
			require.Error(t, err, "a POST that reached the upstream is not sent twice")
		}
	}
}

// closeRecorder is a request body that tells whether it was closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

func TestUpstreamTransportSendsNothingForAnEndedCall(t *testing.T) {
	var posts atomic.Int32
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		echoBody(w, r)
	})
	tr := testTransport(s)
	send(t, tr, http.MethodGet, s.URL+"/", "") // a kept connection, ready at once
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		body := &closeRecorder{Reader: strings.NewReader("x")}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", body)
		_, err := tr.RoundTrip(req)
		assert.ErrorIs(t, err, context.Canceled)
		assert.True(t, body.closed.Load(), "the body of a request not sent is closed")
	}
	send(t, tr, http.MethodGet, s.URL+"/", "")
	assert.Zero(t, posts.Load(), "a call cancelled before it began reached the upstream")
}

// TestUpstreamTransportSendsAgainOnlyAfterAClose: an upstream that took
// the request and is slow or answers garbage did not close the kept
// connection; the request is not sent again, as with net/http.
func TestUpstreamTransportSendsAgainOnlyAfterAClose(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, "ok")
	})
	tr := testTransport(s)
	tr.ResponseHeaderTimeout = 50 * time.Millisecond
	send(t, tr, http.MethodGet, s.URL+"/", "")
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/slow", nil)
	_, err := tr.RoundTrip(req)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "got %v", err)
	assert.Equal(t, int32(1), s.conns.Load(), "a GET that timed out on a kept connection was sent again")
}

func TestUpstreamTransportClosesTheBodyOfARequestItRefuses(t *testing.T) {
	tr := newUpstreamTransport(nil)
	tr.Fallback.Proxy = func(*http.Request) (*url.URL, error) { return nil, errors.New("bad proxy") }
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest(http.MethodPost, "http://upstream.invalid/", body)
	_, err := tr.RoundTrip(req)
	require.Error(t, err)
	assert.True(t, body.closed.Load(), "a RoundTripper closes the body, even on an error")
}

func TestUpstreamTransportClosesConnectionsIdleTooLongWithoutAnotherCall(t *testing.T) {
	var closed atomic.Int32
	s := &countingServer{Server: httptest.NewUnstartedServer(http.HandlerFunc(echoBody))}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	tr := testTransport(s)
	tr.IdleConnTimeout = 20 * time.Millisecond
	send(t, tr, http.MethodGet, s.URL+"/", "")
	require.Eventually(t, func() bool { return closed.Load() == 1 }, 10*time.Second, 5*time.Millisecond,
		"an idle connection is closed once it expires, with no call to take it")
	tr.mu.Lock()
	assert.Empty(t, tr.idle)
	assert.Nil(t, tr.sweep, "nothing idle: the sweep is not armed")
	tr.mu.Unlock()
	send(t, tr, http.MethodGet, s.URL+"/", "")
	require.Eventually(t, func() bool { return closed.Load() == 2 }, 10*time.Second, 5*time.Millisecond,
		"the sweep is armed again by the next idle connection")
}

func TestUpstreamTransportDoesNotKeepASwitchedConnection(t *testing.T) {
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/switch" {
			w.Header().Set("Connection", "Upgrade")
			w.Header().Set("Upgrade", "other")
			w.WriteHeader(http.StatusSwitchingProtocols)
			return
		}
		io.WriteString(w, "ok")
	})
	tr := testTransport(s)
	res, _ := send(t, tr, http.MethodGet, s.URL+"/switch", "")
	assert.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
	_, got := send(t, tr, http.MethodGet, s.URL+"/", "")
	assert.Equal(t, "ok", got)
	assert.Equal(t, int32(2), s.conns.Load(), "a connection past 101 is not reused")
}

func TestUpstreamTransportBoundsTheHeaders(t *testing.T) {
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/huge" {
			for i := range 64 {
				w.Header().Set(fmt.Sprintf("X-Big-%d", i), strings.Repeat("h", 4<<10))
			}
		}
		io.WriteString(w, "ok")
	})
	tr := testTransport(s)
	tr.MaxResponseHeaderBytes = 64 << 10
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/huge", nil)
	_, err := tr.RoundTrip(req)
	require.ErrorIs(t, err, ErrHeadersTooLarge, "256 KiB of headers over a bound of 64")

	// Headers within the bound are read, and so is a body past it.
	s2 := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Some", strings.Repeat("h", 8<<10))
		io.WriteString(w, strings.Repeat("b", 256<<10))
	})
	tr = testTransport(s2)
	tr.MaxResponseHeaderBytes = 64 << 10
	res, body := send(t, tr, http.MethodGet, s2.URL+"/", "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Len(t, body, 256<<10)
	_, body = send(t, tr, http.MethodGet, s2.URL+"/", "")
	assert.Len(t, body, 256<<10, "and again on the kept connection")
	assert.Equal(t, int32(1), s2.conns.Load())
}
