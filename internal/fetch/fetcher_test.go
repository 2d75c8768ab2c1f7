package fetch

import (
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/netguard"
)

func TestFetchPublicPage(t *testing.T) {
	t.Parallel()
	f, tn, _ := testFetcher(t, Options{})
	res, err := f.Get(withTimeout(t), "http://public.test/echo", nil)
	require.NoError(t, err)
	assert.Equal(t, 200, res.Status)
	assert.Equal(t, "text/html; charset=utf-8", res.ContentType)
	assert.Equal(t, "http://public.test/echo", res.URL.String())
	assert.Positive(t, res.Duration)
	body := string(res.Body)
	assert.Contains(t, body, "method=GET")
	assert.Contains(t, body, "ua=Mozilla/5.0 (compatible; svc/")
	assert.Contains(t, body, "accept=text/html,application/xhtml+xml")
	assert.Equal(t, []string{publicIP + ":80"}, tn.recorded())
}

func TestFetchPost(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{})
	res, err := f.Do(withTimeout(t), &Request{
		Method: "POST", URL: "http://public.test/echo", Body: []byte("a=1&b=2"),
		ContentType: "application/x-www-form-urlencoded", Referer: "http://public.test/form",
	}, nil)
	require.NoError(t, err)
	body := string(res.Body)
	assert.Contains(t, body, "method=POST")
	assert.Contains(t, body, "ctype=application/x-www-form-urlencoded")
	assert.Contains(t, body, "body=a=1&b=2")
	assert.Contains(t, body, "referer=http://public.test/form")
}

// A POST redirected with 307 keeps its body, and the hop is checked like the
// first request.
func TestFetchPostRedirect(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{})
	res, err := f.Do(withTimeout(t), &Request{
		Method: "POST", URL: "http://public.test/r?code=307&to=/echo", Body: []byte("x=1"),
		ContentType: "application/x-www-form-urlencoded",
	}, nil)
	require.NoError(t, err)
	assert.Contains(t, string(res.Body), "method=POST")
	assert.Contains(t, string(res.Body), "body=x=1")

	_, err = f.Do(withTimeout(t), &Request{
		Method: "POST", URL: "http://public.test/r?code=307&to=http://10.1.2.3/", Body: []byte("x=1"),
	}, nil)
	requireKind(t, err, errs.Forbidden, "private_address")
}

// DNS rebinding: the name answers publicly when the URL is checked and with
// loopback when the dialer resolves it. The dial-time check refuses it and
// nothing is dialed.
func TestRebinding(t *testing.T) {
	t.Parallel()
	resolver := corpusResolver(false)
	f, tn, _ := testFetcher(t, Options{Resolver: resolver})
	_, err := f.Get(withTimeout(t), "http://rebind.test/", nil)
	e := requireKind(t, err, errs.Forbidden, "private_address")
	assert.Equal(t, `destination refused: host "rebind.test" is a loopback address`, e.Public)
	assert.ErrorIs(t, err, netguard.ErrBlocked)
	assert.Equal(t, 2, resolver.lookups("rebind.test"), "checked once, resolved again at dial time")
	assert.Empty(t, tn.recorded())
}

// A name with one public and one private answer is refused even though the
// public answer comes first; a public answer written IPv4-mapped is dialed
// as plain IPv4.
func TestMixedAnswers(t *testing.T) {
	t.Parallel()
	f, tn, _ := testFetcher(t, Options{})
	f.precheck = false
	_, err := f.Get(withTimeout(t), "http://mixed-a.test/", nil)
	requireKind(t, err, errs.Forbidden, "private_address")
	assert.Empty(t, tn.recorded())

	_, err = f.Get(withTimeout(t), "http://mapped-public.test/", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{publicIP + ":80"}, tn.recorded())
}

func TestRedirectToPrivate(t *testing.T) {
	t.Parallel()
	f, tn, _ := testFetcher(t, Options{})
	for _, to := range []string{"http://127.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://private-a.test/", "http://[::1]/", "http://0x7f.1/"} {
		_, err := f.Get(withTimeout(t), "http://public.test/r?code=302&to="+to, nil)
		e := requireKind(t, err, errs.Forbidden, "private_address")
		assert.Contains(t, e.Public, "destination refused: host ", to)
		for _, d := range tn.recorded() { // connections are reused, so maybe none
			assert.Equal(t, publicIP+":80", d, "only the public hop is dialed")
		}
	}
}

func TestRedirectLimit(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{})
	res, err := f.Get(withTimeout(t), "http://public.test/hops?n=5", nil)
	require.NoError(t, err)
	assert.Equal(t, "http://public.test/hops?n=0", res.URL.String(), "the final URL after redirects")
	assert.Contains(t, string(res.Body), "arrived")

	_, err = f.Get(withTimeout(t), "http://public.test/hops?n=6", nil)
	e := requireKind(t, err, errs.Forbidden, "too_many_redirects")
	assert.Equal(t, `more than 5 redirects; the last went to host "public.test"`, e.Public)

	none, _, _ := testFetcher(t, Options{MaxRedirects: -1})
	_, err = none.Get(withTimeout(t), "http://public.test/hops?n=1", nil)
	requireKind(t, err, errs.Forbidden, "too_many_redirects")
}

func TestSizeLimit(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{MaxBytes: 1024})
	for _, chunked := range []string{"", "&chunked=1"} {
		res, err := f.Get(withTimeout(t), "http://public.test/big?n=1024"+chunked, nil)
		require.NoError(t, err)
		assert.Len(t, res.Body, 1024)

		_, err = f.Get(withTimeout(t), "http://public.test/big?n=1025"+chunked, nil)
		e := requireKind(t, err, errs.Upstream, "page_too_large")
		assert.Equal(t, `the page at host "public.test" is larger than 1024 bytes`, e.Public)
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{HeaderTimeout: 100 * time.Millisecond, Timeout: 400 * time.Millisecond})
	start := time.Now()
	_, err := f.Get(withTimeout(t), "http://public.test/stall-headers", nil)
	requireKind(t, err, errs.Upstream, "upstream_timeout")
	assert.Less(t, time.Since(start), 2*time.Second)

	start = time.Now()
	_, err = f.Get(withTimeout(t), "http://public.test/stall-body", nil)
	requireKind(t, err, errs.Upstream, "upstream_timeout")
	assert.Less(t, time.Since(start), 2*time.Second)
}

// A caller that gives up gets its own context error back, not a 502.
func TestCallerCancel(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{})
	ctx, cancel := withCancel(t)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := f.Get(ctx, "http://public.test/stall-headers", nil)
	require.ErrorIs(t, err, ctx.Err())
	assert.Nil(t, errs.As(err))
}

func TestSchemesRefused(t *testing.T) {
	t.Parallel()
	f, tn, _ := testFetcher(t, Options{AllowPrivate: true})
	for _, u := range []string{"file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO", "ftp://public.test/",
		"dict://127.0.0.1:6379/INFO", "javascript:alert(1)", "data:text/html,hi", "ws://public.test/", "mailto:a@b.test"} {
		_, err := f.Get(withTimeout(t), u, nil)
		e := requireKind(t, err, errs.Forbidden, "scheme_not_allowed")
		assert.Contains(t, e.Public, "only http and https", u)
	}
	_, err := f.Get(withTimeout(t), "http://user:pw@public.test/", nil)
	requireKind(t, err, errs.Forbidden, "credentials_not_allowed")
	_, err = f.Get(withTimeout(t), "http://[]/", nil)
	requireKind(t, err, errs.Invalid, "invalid_url")
	_, err = f.Get(withTimeout(t), "http://public.test:99999/", nil)
	requireKind(t, err, errs.Invalid, "invalid_url")
	assert.Empty(t, tn.recorded())
}

// HTTP_PROXY in the environment must not be used: with a proxy the dial
// goes to the proxy and the guard never sees the destination.
func TestProxyFromEnvironmentIgnored(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>from the proxy</p>"))
	}))
	t.Cleanup(proxy.Close)
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	// The proxy is on loopback, which this Fetcher's guard opens, so that a
	// proxied request would succeed and be seen, not be refused.
	f, tn, _ := testFetcher(t, Options{AllowPrivate: true})
	res, err := f.Get(withTimeout(t), "http://public.test/", nil)
	require.NoError(t, err)
	assert.Contains(t, string(res.Body), "ok public.test")
	assert.Equal(t, int32(0), proxied.Load(), "a request went to the proxy")
	assert.Equal(t, []string{publicIP + ":80"}, tn.recorded())
	assert.Nil(t, f.transport.Proxy)
}

// Open dev mode reaches loopback with the real dialer; the default does not.
func TestAllowPrivate(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := loopbackPage(t, &hits)
	_, err := New(Options{}).Get(withTimeout(t), srv.URL, nil)
	requireKind(t, err, errs.Forbidden, "private_address")
	assert.Equal(t, int32(0), hits.Load())

	res, err := New(Options{AllowPrivate: true}).Get(withTimeout(t), srv.URL, nil)
	require.NoError(t, err)
	assert.Equal(t, 200, res.Status)
	assert.Equal(t, int32(1), hits.Load())
}

// The operator's allowlist opens exactly what it names: an ip:port, a CIDR,
// or a host:port, and nothing beside them.
func TestAllowlist(t *testing.T) {
	t.Parallel()
	var hitsA, hitsB atomic.Int32
	a, b := loopbackPage(t, &hitsA), loopbackPage(t, &hitsB)
	portA, portB := port(t, a), port(t, b)
	get := func(list, rawURL string) error {
		allow, err := netguard.ParseAllowlist(list)
		require.NoError(t, err)
		_, err = New(Options{Allow: allow, Resolver: corpusResolver(false)}).Get(withTimeout(t), rawURL, nil)
		return err
	}

	require.NoError(t, get("127.0.0.1:"+portA, a.URL))
	requireKind(t, get("127.0.0.1:"+portA, b.URL), errs.Forbidden, "private_address")
	requireKind(t, get("127.0.0.2:"+portA, a.URL), errs.Forbidden, "private_address")

	require.NoError(t, get("127.0.0.0/8", a.URL))
	require.NoError(t, get("127.0.0.0/8", b.URL))
	requireKind(t, get("127.0.0.0/8", "http://private-a.test:"+portA+"/"), errs.Forbidden, "private_address")
	requireKind(t, get("10.0.0.0/8", a.URL), errs.Forbidden, "private_address")

	// intranet.test resolves to 127.0.0.1 in the stub DNS.
	require.NoError(t, get("intranet.test:"+portA, "http://intranet.test:"+portA+"/"))
	requireKind(t, get("intranet.test:"+portA, "http://intranet.test:"+portB+"/"), errs.Forbidden, "private_address")
	requireKind(t, get("intranet.test:"+portA, "http://localtest.me:"+portA+"/"), errs.Forbidden, "private_address")
	requireKind(t, get("intranet.test:"+portA, a.URL), errs.Forbidden, "private_address")

	assert.Equal(t, int32(3), hitsA.Load())
	assert.Equal(t, int32(1), hitsB.Load())
}

func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{})
	cases := []struct{ url, code, public string }{
		{"http://nxdomain.test/", "dns_failure", `host "nxdomain.test" could not be resolved`},
		{"http://public.test/status?code=500", "upstream_status", `host "public.test" answered 500 Internal Server Error`},
		{"http://public.test/status?code=503", "upstream_status", ""},
		{"http://public.test/type?ct=application/json&body={}", "unsupported_content_type", `the page at host "public.test" is application/json, not HTML`},
		{"http://public.test/type?ct=image/png", "unsupported_content_type", ""},
		{"http://public.test/type?ct=text/plain&body=%3Chtml%3E", "unsupported_content_type", ""},
	}
	for _, c := range cases {
		_, err := f.Get(withTimeout(t), c.url, nil)
		e := requireKind(t, err, errs.Upstream, c.code)
		if c.public != "" {
			assert.Equal(t, c.public, e.Public, c.url)
		}
	}

	// A 404 page is still a page; a missing Content-Type is sniffed.
	res, err := f.Get(withTimeout(t), "http://public.test/status?code=404", nil)
	require.NoError(t, err)
	assert.Equal(t, 404, res.Status)
	res, err = f.Get(withTimeout(t), "http://public.test/type?body=%3C!doctype%20html%3E%3Cp%3Ehi", nil)
	require.NoError(t, err)
	assert.Equal(t, "text/html; charset=utf-8", res.ContentType)
	res, err = f.Get(withTimeout(t), "http://public.test/type?ct=application/xhtml%2Bxml&body=%3Chtml/%3E", nil)
	require.NoError(t, err)
	assert.Equal(t, 200, res.Status)
	assert.Equal(t, "application/xhtml+xml", res.ContentType, "the type as sent, not sniffed")
	assert.Equal(t, "<html/>", string(res.Body))

	// Connection refused, on a loopback port opened by the allowlist.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	allow, err := netguard.ParseAllowlist(addr)
	require.NoError(t, err)
	_, err = New(Options{Allow: allow}).Get(withTimeout(t), "http://"+addr+"/", nil)
	e := requireKind(t, err, errs.Upstream, "connection_refused")
	assert.Equal(t, `host "127.0.0.1" refused the connection`, e.Public)
}

// Each jar sees its own cookies; without a jar none are kept.
func TestCookieJars(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{})
	jar1, _ := cookiejar.New(nil)
	jar2, _ := cookiejar.New(nil)
	ctx := withTimeout(t)
	_, err := f.Get(ctx, "http://public.test/cookie/set?v=one", jar1)
	require.NoError(t, err)
	_, err = f.Get(ctx, "http://public.test/cookie/set?v=two", jar2)
	require.NoError(t, err)
	for jar, want := range map[http.CookieJar]string{jar1: "sid=one", jar2: "sid=two", nil: "sid=<"} {
		res, err := f.Get(ctx, "http://public.test/cookie/get", jar)
		require.NoError(t, err)
		assert.Contains(t, string(res.Body), want)
	}
}

func loopbackPage(t *testing.T, hits *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>internal</p>"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func port(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	return strings.TrimPrefix(ap.String(), ap.Addr().String()+":")
}
