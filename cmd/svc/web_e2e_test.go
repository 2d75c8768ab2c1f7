package main_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/chromium"
)

// TestWebFetchRendersScriptDrawnPagesExternally runs svc with the external
// compiler and a browser: /health says so, a page that only scripts draw
// comes back compiled from what the browser drew, and a plain page stays
// with the built-in compiler.
func TestWebFetchRendersScriptDrawnPagesExternally(t *testing.T) {
	if _, err := chromium.Find(); err != nil {
		msg := "EXTERNAL COMPILER TEST NOT RUN: " + err.Error() + ". Install Chromium (Debian: apt-get install chromium)."
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/app" {
			fmt.Fprint(w, `<!doctype html><title>App</title><div id="root"></div>
<script>document.getElementById('root').innerHTML = '<main><h1>Catalogue</h1><a href="/boots">Trail boots</a><a href="/tents">Tents</a></main>'</script>`)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Plain</title><main><h1>Plain page</h1><p>Nothing to draw.</p><a href="/a">A</a><a href="/b">B</a><a href="/c">C</a></main>`)
	}))
	defer site.Close()
	p := start(t, "SVC_API_KEY="+bootstrap, "SVC_WEB_ALLOW_PRIVATE="+strings.TrimPrefix(site.URL, "http://"))

	status, health := p.call(t, "GET", "/health", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, true, health["external"])

	status, res := p.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":"`+site.URL+`/app"}`)
	require.Equal(t, http.StatusOK, status, res)
	assert.Equal(t, "external", res["source"])
	assert.Contains(t, res["context"], "Trail boots", "the SOM holds what the script drew")

	status, res = p.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":"`+site.URL+`/plain"}`)
	require.Equal(t, http.StatusOK, status, res)
	assert.Equal(t, "builtin", res["source"])
}
