package pluginapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"syscall"
	"time"
)

// UpstreamTransport is NewUpstreamClient's RoundTripper. It writes an
// HTTP/1.1 request and reads its answer on the caller's goroutine, over a
// pool of keep-alive connections to each upstream. net/http's Transport
// hands every request to two goroutines of its connection, one that writes
// it and one that reads the answer and hands it back, and on an idle
// machine each hand-off wakes another thread: at 100 calls a second that
// was some 70 µs of every call's median. net/http still does the work that
// matters: the request is written by http.Request.Write and the answer read
// by http.ReadResponse.
//
// A request through a proxy (HTTP_PROXY and the like) goes to net/http's
// Transport instead, as does any scheme but http and https.
//
// Set the fields before the first request and do not change them after.
type UpstreamTransport struct {
	// Fallback carries what the transport does not: proxied requests, and
	// any scheme but http and https. Its Proxy decides what is proxied.
	Fallback *http.Transport
	Dialer   *net.Dialer
	// TLSClientConfig is the base of each TLS connection's configuration
	// (nil: the system's roots); ServerName is filled in per host.
	TLSClientConfig *tls.Config
	// MaxIdleConnsPerHost bounds the idle connections kept for each
	// upstream (0 keeps none), and IdleConnTimeout how long one is kept
	// (0: as long as the upstream keeps it).
	MaxIdleConnsPerHost int
	IdleConnTimeout     time.Duration
	// TLSHandshakeTimeout bounds a TLS handshake, and
	// ResponseHeaderTimeout the wait for an answer's headers once the
	// request is written (0: unbounded).
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration
	// MaxResponseHeaderBytes bounds an answer's headers (0: 1 MiB), as
	// net/http's Transport bounds them: an upstream cannot make svc hold
	// more.
	MaxResponseHeaderBytes int64

	mu   sync.Mutex
	idle map[upstream][]*upstreamConn // the most recently used last
	// sweep closes the connections idle past IdleConnTimeout; it is
	// armed while any connection is idle.
	sweep *time.Timer
}

// upstreamConn is one keep-alive connection to an upstream.
type upstreamConn struct {
	conn   net.Conn      // what requests are written to: raw, or TLS over raw
	raw    syscall.Conn  // the TCP connection, peeked at before a reuse
	br     *bufio.Reader // reads through the connection's Read
	bw     *bufio.Writer
	to     upstream
	idleAt time.Time
	// headerRoom is what an answer's headers may still take of the
	// connection; negative, the reads are not bounded (a body's are, by
	// its reader).
	headerRoom int64

	// mu orders the call's own deadlines after a cancellation that ended
	// them: a read deadline set after the context's end would undo it.
	mu        sync.Mutex
	cancelled bool
}

// aLongTimeAgo is a deadline that has passed: it ends a blocked read or
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

func (t *UpstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("http: nil Request.URL")
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return t.Fallback.RoundTrip(req)
	}
	if t.Fallback.Proxy != nil {
		proxy, err := t.Fallback.Proxy(req)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		if proxy != nil {
			return t.Fallback.RoundTrip(req)
		}
	}
	to := upstreamOf(req.URL)
	for {
		// A call already ended is not sent: a kept connection takes a
		// request at once, before the watch on the context could stop it.
		if err := req.Context().Err(); err != nil {
			closeBody(req)
			return nil, err
		}
		pc, reused, err := t.conn(req.Context(), to)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, written, answered, err := t.exchange(pc, req)
		if err == nil {
			return resp, nil
		}
		// A kept connection the upstream closed as it was taken: the
		// request is sent again on a new one when nothing of it can have
		// been acted on, as net/http's Transport would. An upstream that
		// began an answer, or was waited on too long, did not close it.
		if !reused || req.Context().Err() != nil || answered || (written && !replayable(req)) {
			return nil, err
		}
		if req, err = rewound(req); err != nil {
			return nil, err
		}
	}
}

// exchange writes req on pc and reads its answer's headers. written tells
// whether the request may have reached the upstream whole, and answered
// whether the upstream began an answer or the wait for one timed out: a
// failure then is not a connection closed before the request was read.
func (t *UpstreamTransport) exchange(pc *upstreamConn, req *http.Request) (resp *http.Response, written, answered bool, err error) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, pc.cancel)
	fail := func(err error) (*http.Response, bool, bool, error) {
		stop()
		pc.conn.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, written, answered, err
	}
	if err := req.Write(pc.bw); err != nil {
		return fail(err)
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(err)
	}
	written = true
	if t.ResponseHeaderTimeout > 0 {
		pc.setReadDeadline(time.Now().Add(t.ResponseHeaderTimeout))
	}
	pc.headerRoom = t.MaxResponseHeaderBytes
	if pc.headerRoom <= 0 {
		pc.headerRoom = defaultMaxResponseHeaderBytes
	}
	if _, err := pc.br.Peek(1); err != nil {
		var ne net.Error
		answered = errors.As(err, &ne) && ne.Timeout()
		return fail(err)
	}
	answered = true
	for {
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil {
			return fail(err)
		}
		// An informational answer (100 Continue, 103 Early Hints) comes
		// before the real one; 101 is the end of HTTP, which no provider
		// asks for.
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	pc.headerRoom = -1
	if t.ResponseHeaderTimeout > 0 {
		pc.setReadDeadline(time.Time{})
	}
	// After 101 the connection speaks something else: it is not kept.
	keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody || req.Method == http.MethodHead {
		resp.Body = http.NoBody
		t.release(pc, stop, keep)
		return resp, true, true, nil
	}
	resp.Body = &upstreamBody{body: resp.Body, ctx: ctx, t: t, pc: pc, stop: stop, keep: keep}
	return resp, true, true, nil
}

// conn is an idle connection to the upstream that is still open, or a new
// one.
func (t *UpstreamTransport) conn(ctx context.Context, to upstream) (pc *upstreamConn, reused bool, err error) {
	now := time.Now()
	for {
		t.mu.Lock()
		list := t.idle[to]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		pc = list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[to] = list[:len(list)-1]
		t.mu.Unlock()
		if (t.IdleConnTimeout <= 0 || now.Sub(pc.idleAt) < t.IdleConnTimeout) && pc.alive() {
			return pc, true, nil
		}
		pc.conn.Close()
	}
	pc, err = t.dial(ctx, to)
	return pc, false, err
}

// dial opens a connection to the upstream, with TLS for https.
func (t *UpstreamTransport) dial(ctx context.Context, to upstream) (*upstreamConn, error) {
	raw, err := t.Dialer.DialContext(ctx, "tcp", to.addr)
	if err != nil {
		return nil, err
	}
	sc, ok := raw.(syscall.Conn)
	if !ok {
		raw.Close()
		return nil, errors.New("upstream connection is not a socket")
	}
	conn := raw
	if to.scheme == "https" {
		cfg := &tls.Config{}
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(to.addr)
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(raw, cfg)
		hctx, cancel := ctx, context.CancelFunc(func() {})
		if t.TLSHandshakeTimeout > 0 {
			hctx, cancel = context.WithTimeout(ctx, t.TLSHandshakeTimeout)
		}
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			raw.Close()
			return nil, err
		}
		conn = tc
	}
	pc := &upstreamConn{conn: conn, raw: sc, to: to, bw: bufio.NewWriterSize(conn, 4<<10), headerRoom: -1}
	pc.br = bufio.NewReaderSize(pc, 4<<10)
	return pc, nil
}

// defaultMaxResponseHeaderBytes bounds an answer's headers when the
// transport does not say, and NewUpstreamClient's: a provider's are a few
// KB.
const defaultMaxResponseHeaderBytes = 1 << 20

// ErrHeadersTooLarge ends a call whose answer's headers go past the
// transport's bound: the upstream's fault, not a network's.
var ErrHeadersTooLarge = errors.New("the upstream's answer headers are too large")

// Read reads from the connection, no more than headerRoom while an
// answer's headers are read.
func (pc *upstreamConn) Read(p []byte) (int, error) {
	if pc.headerRoom < 0 {
		return pc.conn.Read(p)
	}
	if pc.headerRoom == 0 {
		return 0, ErrHeadersTooLarge
	}
	if int64(len(p)) > pc.headerRoom {
		p = p[:pc.headerRoom]
	}
	n, err := pc.conn.Read(p)
	pc.headerRoom -= int64(n)
	return n, err
}

// release ends a call on pc once its answer is read: stop ends the watch
// on its context, and a connection that may carry another call is kept.
func (t *UpstreamTransport) release(pc *upstreamConn, stop func() bool, keep bool) {
	if !stop() || !keep || pc.br.Buffered() > 0 {
		pc.conn.Close() // the context ended it, or it is not to be reused
		return
	}
	pc.idleAt = time.Now()
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[upstream][]*upstreamConn)
	}
	if len(t.idle[pc.to]) < t.MaxIdleConnsPerHost {
		t.idle[pc.to] = append(t.idle[pc.to], pc)
		pc = nil
		if t.sweep == nil && t.IdleConnTimeout > 0 {
			t.sweep = time.AfterFunc(t.IdleConnTimeout, t.closeExpired)
		}
	}
	t.mu.Unlock()
	if pc != nil {
		pc.conn.Close()
	}
}

// closeExpired closes the connections idle past IdleConnTimeout, so that
// after a burst of calls their sockets do not stay open until the next
// one; while some stay idle it runs again when the oldest expires.
func (t *UpstreamTransport) closeExpired() {
	now := time.Now()
	var expired []*upstreamConn
	t.mu.Lock()
	var next time.Time
	for key, list := range t.idle {
		// A list is in the order its connections were put back: the
		// expired ones come first.
		n := 0
		for n < len(list) && now.Sub(list[n].idleAt) >= t.IdleConnTimeout {
			n++
		}
		expired = append(expired, list[:n]...)
		list = slices.Delete(list, 0, n)
		if len(list) == 0 {
			delete(t.idle, key)
			continue
		}
		t.idle[key] = list
		if oldest := list[0].idleAt; next.IsZero() || oldest.Before(next) {
			next = oldest
		}
	}
	if next.IsZero() {
		t.sweep = nil
	} else {
		t.sweep.Reset(next.Add(t.IdleConnTimeout).Sub(now))
	}
	t.mu.Unlock()
	for _, pc := range expired {
		pc.conn.Close()
	}
}

// CloseIdleConnections closes the connections no call uses, as
// http.Client.CloseIdleConnections asks.
func (t *UpstreamTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, pc := range list {
			pc.conn.Close()
		}
	}
	t.Fallback.CloseIdleConnections()
}

// cancel ends the call under way on pc: its context ended.
func (pc *upstreamConn) cancel() {
	pc.mu.Lock()
	pc.cancelled = true
	pc.conn.SetDeadline(aLongTimeAgo)
	pc.mu.Unlock()
}

// setReadDeadline sets pc's read deadline unless a cancellation ended it.
func (pc *upstreamConn) setReadDeadline(d time.Time) {
	pc.mu.Lock()
	if !pc.cancelled {
		pc.conn.SetReadDeadline(d)
	}
	pc.mu.Unlock()
}

// alive reports whether an idle connection is still open and quiet: the
// upstream may have closed it while it waited (its own idle timeout), and
// nothing may arrive on a connection no request is waiting on.
func (pc *upstreamConn) alive() bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	return quiet(pc.raw)
}

// upstreamBody is an answer's body read from an upstreamConn. The
// connection goes back to the pool once the body has been read to its end,
// and is closed if the body is closed before.
type upstreamBody struct {
	body io.ReadCloser
	ctx  context.Context
	t    *UpstreamTransport
	pc   *upstreamConn
	stop func() bool
	keep bool

	mu   sync.Mutex
	done bool // the connection was released or closed
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.finish(true)
	} else if err != nil && b.ctx.Err() != nil {
		// The past deadline that ended the read is the context's end,
		// and the error its own, as net/http's Transport says it.
		err = b.ctx.Err()
	}
	return n, err
}

func (b *upstreamBody) Close() error {
	b.finish(false)
	return nil
}

// finish releases the connection once, keeping it only after a whole
// body.
func (b *upstreamBody) finish(whole bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if !whole {
		b.stop()
		b.pc.conn.Close()
		return
	}
	b.t.release(b.pc, b.stop, b.keep)
}

// upstream is where a connection goes: a pool's key.
type upstream struct {
	scheme string // http or https
	addr   string // host:port
}

// upstreamOf is the upstream u names, its port the scheme's when u has
// none.
func upstreamOf(u *url.URL) upstream {
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	return upstream{scheme: u.Scheme, addr: addr}
}

// replayable reports whether req may be sent twice: net/http's rule, an
// idempotent method or an idempotency key.
func replayable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}

// errNotRewound is the error of a request that failed on a kept
// connection and cannot be sent again: its body cannot be read twice.
var errNotRewound = errors.New("upstream closed a kept connection and the request body cannot be sent again")

// rewound is req with its body again, for another try. The caller's
// request is left as it is: a RoundTripper does not change it.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errNotRewound
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	again := *req
	again.Body = body
	return &again, nil
}

// closeBody closes a request's body that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
