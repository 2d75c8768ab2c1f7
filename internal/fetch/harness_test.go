package fetch

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// publicIP is where the test's stub DNS puts public names. Nothing is ever
// sent there: testNet routes every approved public address to a loopback
// listener.
const publicIP = "93.184.215.14"

// testNet is the only way out of a test Fetcher. It records every address
// the guard approved and connects only to loopback: a public address is
// routed to the "internet" listener, a loopback address (reachable only when
// the test opened it) is dialed as is, and anything else is refused, so that
// a guard bug can never send a packet off this machine.
type testNet struct {
	internet string // host:port of the listener standing in for the internet

	mu    sync.Mutex
	dials []string
}

func (n *testNet) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	n.mu.Lock()
	n.dials = append(n.dials, address)
	n.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fmt.Errorf("test network: %q is not ip:port", address)
	}
	target := n.internet
	switch ip := ap.Addr().WithZone("").Unmap(); {
	case ip.IsLoopback():
		target = address
	case netguard.Classify(ip) != nil:
		return nil, fmt.Errorf("test network: refusing to dial non-public %s", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

// recorded returns the addresses dialed so far and forgets them.
func (n *testNet) recorded() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.dials
	n.dials = nil
	return out
}

// stubResolver answers from a function and counts lookups; it never sends a
// DNS query.
type stubResolver struct {
	mu    sync.Mutex
	calls []string
	fn    func(n int, host string) ([]netip.Addr, error) // n counts lookups of host, from 1
}

func (r *stubResolver) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.calls = append(r.calls, host)
	n := 0
	for _, c := range r.calls {
		if c == host {
			n++
		}
	}
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.fn(n, host)
}

func (r *stubResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c == host {
			n++
		}
	}
	return n
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// corpusResolver is the stub DNS of SECURITY.md 2.4. Unknown names answer
// with a private address, so an unexpected name can never pass. rebind.test
// answers publicly on odd lookups and with loopback on even ones, when
// rebindFirst is false; true starts with loopback.
func corpusResolver(rebindFirst bool) *stubResolver {
	return &stubResolver{fn: func(n int, host string) ([]netip.Addr, error) {
		switch {
		case host == "public.test", host == "redirector.test", host == "www.example.test":
			return addrs(publicIP), nil
		case host == "localtest.me", host == "spoofed.burpcollaborator.net",
			host == "127.0.0.1.nip.io", strings.HasSuffix(host, ".127.0.0.1.nip.io"),
			host == "cname-to-localhost.test", host == "localhost", host == "intranet.test":
			return addrs("127.0.0.1"), nil
		case host == "10.0.0.1.nip.io", host == "private-a.test":
			return addrs("10.0.0.1"), nil
		case host == "private-aaaa.test":
			return addrs("::1"), nil
		case host == "169.254.169.254.nip.io", host == "instance-data", host == "metadata",
			host == "metadata.google.internal":
			return addrs("169.254.169.254"), nil
		case host == "mixed-a.test":
			return addrs(publicIP, "127.0.0.1"), nil
		case host == "mapped-public.test":
			return addrs("::ffff:" + publicIP), nil
		case host == "nxdomain.test":
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		case host == "rebind.test":
			if (n%2 == 1) != rebindFirst {
				return addrs(publicIP), nil
			}
			return addrs("127.0.0.1"), nil
		}
		return addrs("10.255.0.1"), nil
	}}
}

// internet serves the pages the tests fetch from "public" hosts:
//
//	/                   a small HTML page
//	/r?code=N&to=URL    a redirect with status N to URL
//	/loop               a redirect to itself
//	/hops?n=N           N redirects, then a page
//	/big?n=N&chunked=1  an HTML page of N bytes
//	/type?ct=T          a page with Content-Type T (none when T is empty)
//	/status?code=N      an HTML page with status N
//	/echo               the method, content type, body and headers, as HTML
//	/cookie/set, /cookie/get
//	/stall-headers, /stall-body   answers that never complete
func internet(t *testing.T) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><html><body>"+body+"</body></html>")
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { page(w, "ok "+r.Host) })
	mux.HandleFunc("/r", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(code)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/hops", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if n <= 0 {
			page(w, "arrived")
			return
		}
		http.Redirect(w, r, "/hops?n="+strconv.Itoa(n-1), http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		io.WriteString(w, strings.Repeat("a", n))
	})
	mux.HandleFunc("/type", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no sniffing by the server
		if ct := r.URL.Query().Get("ct"); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		io.WriteString(w, r.URL.Query().Get("body"))
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(code)
		io.WriteString(w, "<p>status page</p>")
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		page(w, fmt.Sprintf("method=%s\nctype=%s\nbody=%s\nua=%s\naccept=%s\nreferer=%s\nquery=%s",
			r.Method, r.Header.Get("Content-Type"), body, r.UserAgent(), r.Header.Get("Accept"),
			r.Referer(), r.URL.RawQuery))
	})
	mux.HandleFunc("/cookie/set", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: r.URL.Query().Get("v"), Path: "/"})
		page(w, "set")
	})
	mux.HandleFunc("/cookie/get", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("sid")
		if err != nil {
			page(w, "sid=")
			return
		}
		page(w, "sid="+c.Value)
	})
	mux.HandleFunc("/stall-headers", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/stall-body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<p>start")
		w.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv
}

// testFetcher returns a Fetcher whose only way out is a testNet routing
// public addresses to an internet server, and whose DNS is corpusResolver.
func testFetcher(t *testing.T, opts Options) (*Fetcher, *testNet, *httptest.Server) {
	t.Helper()
	srv := internet(t)
	tn := &testNet{internet: srv.Listener.Addr().String()}
	if opts.Resolver == nil {
		opts.Resolver = corpusResolver(false)
	}
	opts.Dial = tn.Dial
	return New(opts), tn, srv
}

// requireKind asserts err is an *errs.Error of kind k with code.
func requireKind(t *testing.T, err error, k errs.Kind, code string) *errs.Error {
	t.Helper()
	require.Error(t, err)
	e := errs.As(err)
	require.NotNil(t, e, "not an *errs.Error: %v", err)
	require.Equal(t, k.String(), e.Kind.String(), "%v", err)
	if code != "" {
		require.Equal(t, code, e.Code, "%v", err)
	}
	return e
}

// withTimeout gives a test context a bound so that a hang fails the test.
func withTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func withCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, cancel
}
