package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/pkg/netguard"
)

// GuardProxy is the only way out of the browser: Chromium is started with
// it as its proxy for every scheme, including loopback, so each request the
// page makes (documents, scripts, images, XHR, WebSockets) is dialed here
// through the address guard, on the address actually dialed. A refused
// destination answers 403 and is remembered for the compile's report.
type GuardProxy struct {
	Guard *netguard.Guard
	Log   hclog.Logger
	// HeaderTimeout is how long a page may take to send its headers
	// (0: headerTimeout).
	HeaderTimeout time.Duration

	transport *http.Transport
	once      sync.Once

	mu      sync.Mutex
	blocked []string
}

// dial connects to addr through the guard, which judges the address
// actually dialed (after DNS), honouring the operator's host:port
// exceptions.
func (p *GuardProxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	// A numeric host is dialed as the address it is, and one that ends in
	// a number without being an address is refused: neither goes to DNS.
	if ip, ok, err := netguard.HostAddr(host); err != nil {
		return nil, err
	} else if ok {
		addr = net.JoinHostPort(ip.String(), port)
	}
	d := &net.Dialer{Timeout: 10 * time.Second, Control: p.Guard.ControlFor(host)}
	return d.DialContext(ctx, network, addr)
}

// headerTimeout is how long the proxy waits for a page's headers.
const headerTimeout = 20 * time.Second

func (p *GuardProxy) client() *http.Transport {
	p.once.Do(func() {
		p.transport = &http.Transport{
			Proxy:                 nil, // never from the environment: the guard must see the target
			DialContext:           p.dial,
			ForceAttemptHTTP2:     false,
			MaxIdleConns:          32,
			IdleConnTimeout:       30 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: cmp.Or(p.HeaderTimeout, headerTimeout),
		}
	})
	return p.transport
}

// Blocked returns and forgets the destinations refused so far.
func (p *GuardProxy) Blocked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.blocked
	p.blocked = nil
	return out
}

func (p *GuardProxy) refuse(w http.ResponseWriter, target string, err error) {
	p.mu.Lock()
	if len(p.blocked) < 100 {
		p.blocked = append(p.blocked, target)
	}
	p.mu.Unlock()
	p.Log.Debug("browser request refused", "target", target, "error", err)
	status := http.StatusBadGateway
	if errors.Is(err, netguard.ErrBlocked) || errors.Is(err, netguard.ErrInvalidURL) {
		status = http.StatusForbidden
	}
	http.Error(w, "refused by svc: "+err.Error(), status)
}

// ServeHTTP forwards one proxied request: CONNECT tunnels (https, wss) and
// absolute-form http requests. Redirects are the browser's to follow, so
// each hop comes back here and is checked again.
func (p *GuardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		p.refuse(w, r.URL.String(), netguard.ErrInvalidURL)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	res, err := p.client().RoundTrip(out)
	if err != nil {
		p.refuse(w, r.URL.Host, err)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

func (p *GuardProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if !strings.Contains(target, ":") {
		target += ":443"
	}
	upstream, err := p.dial(r.Context(), "tcp", target)
	if err != nil {
		p.refuse(w, target, err)
		return
	}
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		http.Error(w, "tunnelling unsupported", http.StatusInternalServerError)
		return
	}
	defer client.Close()
	defer upstream.Close()
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(upstream, buf) // what the browser sent after CONNECT, then the rest
		upstream.Close()
	}()
	_, _ = io.Copy(client, upstream)
}
