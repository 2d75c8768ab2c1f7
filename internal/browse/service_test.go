package browse_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/fetch"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// fakeCompiler stands in for the external compiler plugin.
type fakeCompiler struct {
	calls int
	fail  bool
}

func (f *fakeCompiler) Compile(_ context.Context, p pluginapi.Page) ([]byte, error) {
	f.calls++
	if f.fail {
		return nil, errors.New("browser crashed")
	}
	return []byte(fmt.Sprintf(`{"meta":{"url":%q,"title":"Drawn","somBytes":40},"regions":[],"elements":[{"id":"e_drawn","kind":"link","region":"r_body","name":"Drawn link"}],"context":"drawn"}`, p.URL)), nil
}

func TestFetchHandsScriptDrawnPagesToTheExternalCompiler(t *testing.T) {
	pages := map[string]string{
		"/app":    `<!doctype html><title>App</title><div id="root"></div><script src="/bundle.js"></script>`,
		"/static": `<!doctype html><title>Docs</title><main><h1>Docs</h1><p>Plenty to read.</p><a href="/a">A</a><a href="/b">B</a><a href="/c">C</a><form><input name=q><button>Go</button></form></main><script>track()</script>`,
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, pages[r.URL.Path])
	}))
	defer site.Close()
	ext := &fakeCompiler{}
	svc := browse.NewService(browse.ServiceOptions{
		Fetcher: fetch.New(fetch.Options{}), OpenFetcher: fetch.New(fetch.Options{AllowPrivate: true}), External: ext,
		Cache: cache.New(cache.Options{MaxBytes: 1 << 20}), Store: storetest.Open(t),
	})
	ctx := context.Background()

	r, err := svc.Fetch(ctx, openCaller, site.URL+"/app", false)
	require.NoError(t, err)
	assert.Equal(t, browse.SourceExternal, r.Source)
	assert.Contains(t, string(r.SOM), "Drawn link")

	r, err = svc.Fetch(ctx, openCaller, site.URL+"/static", false)
	require.NoError(t, err)
	assert.Equal(t, browse.SourceBuiltin, r.Source, "a page that reads without scripts stays with the built-in compiler")
	assert.Equal(t, 1, ext.calls)

	ext.fail = true
	r, err = svc.Fetch(ctx, openCaller, site.URL+"/app", true)
	require.NoError(t, err, "a failing external compiler never fails the fetch")
	assert.Equal(t, browse.SourceBuiltin, r.Source)
}

func TestTokensSaved(t *testing.T) {
	assert.Equal(t, 250, browse.TokensSaved(1200, 200))
	assert.Equal(t, 0, browse.TokensSaved(100, 400), "never negative")
}

// openCaller is open dev mode's caller, who may fetch private addresses.
var openCaller = &auth.Identity{TenantID: "default", Via: auth.ViaOpen, Mode: auth.Optimize}
