package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/chromium"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// browser returns the Chromium to test with, or skips loudly (fails under
// CI, which installs it).
func browser(t *testing.T) string {
	t.Helper()
	path, err := chromium.Find()
	if err != nil {
		msg := fmt.Sprintf("EXTERNAL COMPILER TESTS NOT RUN: %v. Install Chromium (Debian: apt-get install chromium).", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// hits counts the requests a server receives.
func hits(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		fmt.Fprint(w, "internal secret")
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// rig starts a guard proxy that opens only the page server, and a renderer
// behind it.
func rig(t *testing.T, page http.Handler) (*Renderer, *GuardProxy, *httptest.Server) {
	return rigWith(t, page, 0)
}

// rigWith is rig with the proxy's wait for a page's headers.
func rigWith(t *testing.T, page http.Handler, headerTimeout time.Duration) (*Renderer, *GuardProxy, *httptest.Server) {
	pageServer := httptest.NewServer(page)
	t.Cleanup(pageServer.Close)
	allow, err := netguard.ParseAllowlist(strings.TrimPrefix(pageServer.URL, "http://"))
	require.NoError(t, err)
	proxy := &GuardProxy{Guard: &netguard.Guard{Allow: allow}, Log: hclog.NewNullLogger(), HeaderTimeout: headerTimeout}
	proxyServer := httptest.NewServer(proxy)
	t.Cleanup(proxyServer.Close)
	r := &Renderer{Browser: browser(t), ProxyAddr: strings.TrimPrefix(proxyServer.URL, "http://"),
		Timeout: 20 * time.Second, Settle: 300 * time.Millisecond}
	t.Cleanup(r.Close)
	return r, proxy, pageServer
}

func TestRenderRunsScriptsAndEveryRequestPassesTheGuard(t *testing.T) {
	secret, secretHits := hits(t)
	r, proxy, pages := rig(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>App</title><div id="app"></div>
<script>
document.getElementById('app').innerHTML = '<h1>Drawn by a script</h1><button>Buy now</button>';
fetch('%[1]s/xhr').catch(() => {});
new Image().src = '%[1]s/pixel.gif';
</script>`, secret.URL)
	}))

	got, err := r.Render(context.Background(), pages.URL+"/")
	require.NoError(t, err)
	assert.Contains(t, got.HTML, "<h1>Drawn by a script</h1>", "scripts ran before the document was read")
	assert.Equal(t, pages.URL+"/", got.URL)
	// Both of the page's requests to the internal address came to the
	// proxy (none went around it) and were refused there.
	refused := 0
	require.Eventually(t, func() bool {
		refused += count(proxy.Blocked(), hostOf(secret))
		return refused >= 2
	}, 30*time.Second, 20*time.Millisecond, "the proxy refused the XHR and the image")
	assert.Zero(t, secretHits.Load(), "the page's requests to an internal address never arrived")
}

func TestRenderRefusesAnInternalPage(t *testing.T) {
	secret, secretHits := hits(t)
	r, proxy, _ := rig(t, http.NotFoundHandler())
	got, err := r.Render(context.Background(), secret.URL+"/")
	require.NoError(t, err, "the browser shows the proxy's refusal as the page")
	assert.Contains(t, got.HTML, "refused by svc")
	assert.NotContains(t, got.HTML, "internal secret")
	assert.Zero(t, secretHits.Load())
	// The browser's own background requests are refused too, so the
	// internal page must be among the refusals by name.
	assert.Positive(t, count(proxy.Blocked(), hostOf(secret)))
}

func TestRenderGivesUpAfterItsTimeout(t *testing.T) {
	var dropped sync.Once
	gone := make(chan struct{})
	release := make(chan struct{})
	// The proxy waits an hour for the page's headers: the request can end
	// only because the browser dropped it.
	r, _, pages := rigWith(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/slow" {
			return
		}
		select {
		case <-req.Context().Done():
			dropped.Do(func() { close(gone) })
		case <-release:
		}
	}), time.Hour)
	t.Cleanup(func() { close(release) }) // before the page server closes
	r.Timeout = time.Second
	// The caller's deadline only backs the renderer's own up: it answers
	// otherwise, and the error would not be the renderer's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := r.Render(ctx, pages.URL+"/slow")
	require.ErrorContains(t, err, "took longer than 1s")
	select {
	case <-gone:
	case <-time.After(2 * time.Minute):
		t.Fatal("the browser kept loading the page after the render gave up")
	}
}

func TestRendersShareNoCookies(t *testing.T) {
	var checkCookies atomic.Value
	r, _, pages := rig(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if req.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "tenant-a-secret", Path: "/"})
		}
		if req.URL.Path == "/check" {
			checkCookies.Store(req.Header.Values("Cookie"))
		}
		fmt.Fprint(w, `<!doctype html><title>Check</title><p id="c"></p><script>document.getElementById('c').textContent = 'cookies:' + document.cookie</script>`)
	}))
	got, err := r.Render(context.Background(), pages.URL+"/set")
	require.NoError(t, err)
	require.Contains(t, got.HTML, "cookies:session=tenant-a-secret", "a render keeps the cookies its page sets")
	got, err = r.Render(context.Background(), pages.URL+"/check")
	require.NoError(t, err)
	assert.Contains(t, got.HTML, "cookies:")
	assert.NotContains(t, got.HTML, "tenant-a-secret", "one render's cookies never reach another's")
	sent, ok := checkCookies.Load().([]string)
	require.True(t, ok, "the second render requested its page")
	assert.Empty(t, sent, "the second render's request carried no cookie")
}

// hostOf is the host:port of a test server, as the proxy records it.
func hostOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// count is how many times s appears in list.
func count(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
