package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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
	pageServer := httptest.NewServer(page)
	t.Cleanup(pageServer.Close)
	allow, err := netguard.ParseAllowlist(strings.TrimPrefix(pageServer.URL, "http://"))
	require.NoError(t, err)
	proxy := &GuardProxy{Guard: &netguard.Guard{Allow: allow}, Log: hclog.NewNullLogger()}
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
	time.Sleep(200 * time.Millisecond)
	assert.Zero(t, secretHits.Load(), "the page's requests to an internal address never arrived")
	assert.Contains(t, strings.Join(proxy.Blocked(), " "), strings.TrimPrefix(secret.URL, "http://"))
}

func TestRenderRefusesAnInternalPage(t *testing.T) {
	secret, secretHits := hits(t)
	r, proxy, _ := rig(t, http.NotFoundHandler())
	got, err := r.Render(context.Background(), secret.URL+"/")
	if err == nil {
		assert.NotContains(t, got.HTML, "internal secret")
	}
	assert.Zero(t, secretHits.Load())
	assert.NotEmpty(t, proxy.Blocked())
}

func TestRenderGivesUpAfterItsTimeout(t *testing.T) {
	r, _, pages := rig(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	r.Timeout = time.Second
	start := time.Now()
	_, err := r.Render(context.Background(), pages.URL+"/slow")
	require.Error(t, err)
	assert.Less(t, time.Since(start), 8*time.Second)
}

func TestRendersShareNoCookies(t *testing.T) {
	r, _, pages := rig(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if req.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "tenant-a-secret", Path: "/"})
			fmt.Fprint(w, `<!doctype html><title>Signed in</title><p>ok</p>`)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Check</title><p id="c"></p><script>document.getElementById('c').textContent = 'cookies:' + document.cookie</script>`)
	}))
	_, err := r.Render(context.Background(), pages.URL+"/set")
	require.NoError(t, err)
	got, err := r.Render(context.Background(), pages.URL+"/check")
	require.NoError(t, err)
	assert.Contains(t, got.HTML, "cookies:")
	assert.NotContains(t, got.HTML, "tenant-a-secret", "one render's cookies never reach another's")
}
