package main_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/pkg/chromium"
)

// TestPluginsEndWhenSvcIsKilled kills svc with SIGKILL, which gives it no
// chance to stop its plugins: they must end on their own within seconds,
// not live on under init holding their sockets, one more after each crash.
func TestPluginsEndWhenSvcIsKilled(t *testing.T) {
	p := start(t)
	plugins := testbin.Children(p.cmd.Process.Pid)
	require.NotEmpty(t, plugins, "the provider plugin runs from the start")
	killAndWaitForOrphans(t, p, plugins)
}

// TestBrowserEndsWhenSvcIsKilled does the same with the external page
// compiler running a browser: no process of the browser outlives svc, and
// the browser profile left behind is removed by the next page compiler.
func TestBrowserEndsWhenSvcIsKilled(t *testing.T) {
	if _, err := chromium.Find(); err != nil {
		msg := "BROWSER TEST NOT RUN: " + err.Error() + ". Install Chromium (Debian: apt-get install chromium)."
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>App</title><div id="root"></div>
<script>document.getElementById('root').innerHTML = '<main><h1>Drawn</h1><a href="/a">A</a></main>'</script>`)
	}))
	defer site.Close()
	tmp := t.TempDir() // where the plugins keep their sockets and the browser its profile
	env := []string{"SVC_API_KEY=" + bootstrap, "SVC_WEB_ALLOW_PRIVATE=" + strings.TrimPrefix(site.URL, "http://"), "TMPDIR=" + tmp}
	render := func(p *proc) {
		t.Helper()
		status, res := p.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":"`+site.URL+`/app"}`)
		require.Equal(t, http.StatusOK, status, res)
		require.Equal(t, "external", res["source"], "the browser rendered the page")
	}
	p := start(t, env...)
	render(p)
	profiles, err := filepath.Glob(filepath.Join(tmp, "svc-som-external-*"))
	require.NoError(t, err)
	require.Len(t, profiles, 1, "the browser's profile")

	below := testbin.Descendants(p.cmd.Process.Pid)
	require.Greater(t, len(below), 2, "the plugins, the browser and its helpers run: %v", below)
	killAndWaitForOrphans(t, p, below)
	require.DirExists(t, profiles[0], "killed, the page compiler could not remove its profile")

	render(start(t, env...))
	assert.Eventually(t, func() bool { _, err := os.Stat(profiles[0]); return os.IsNotExist(err) },
		30*time.Second, 10*time.Millisecond, "the next page compiler removes the profile left behind")
}

// killAndWaitForOrphans kills svc with SIGKILL and waits, a few seconds at
// most, until every process of pids has ended (a zombie counts: an orphan's
// new parent need not reap it).
func killAndWaitForOrphans(t *testing.T, p *proc, pids []int) {
	t.Helper()
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	alive := func() []int {
		var out []int
		for _, pid := range pids {
			if !testbin.Ended(pid) {
				out = append(out, pid)
			}
		}
		return out
	}
	killed := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	_ = p.waitExit(t)
	if assert.Eventually(t, func() bool { return len(alive()) == 0 }, 30*time.Second, 10*time.Millisecond,
		"processes outlived svc") {
		t.Logf("%d processes ended %s after svc was killed", len(pids), time.Since(killed).Round(time.Millisecond))
	} else {
		t.Logf("still running: %v", alive())
	}
}
