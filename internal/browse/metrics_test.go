package browse_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/fetch"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
	"github.com/svc-gateway/svc/internal/store/storetest"
)

func TestFetchesAreCountedBySource(t *testing.T) {
	pages := map[string]string{
		"/app":    `<!doctype html><title>App</title><div id="root"></div><script src="/bundle.js"></script>`,
		"/static": `<!doctype html><title>Docs</title><main><h1>Docs</h1><p>Plenty to read.</p><a href="/a">A</a><a href="/b">B</a><a href="/c">C</a><form><input name=q><button>Go</button></form></main>`,
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, pages[r.URL.Path])
	}))
	defer site.Close()
	m := metrics.New(metrics.Options{})
	svc := browse.NewService(browse.ServiceOptions{
		Fetcher: fetch.New(fetch.Options{}), OpenFetcher: fetch.New(fetch.Options{AllowPrivate: true}), External: &fakeCompiler{},
		Cache: cache.New(cache.Options{MaxBytes: 1 << 20}), Store: storetest.Open(t), Metrics: m,
	})
	ctx := context.Background()
	for _, path := range []string{"/app", "/static", "/static"} {
		_, err := svc.Fetch(ctx, openCaller, site.URL+path, false)
		require.NoError(t, err)
	}
	_, err := svc.Fetch(ctx, openCaller, "ftp://example.com/", false)
	require.Error(t, err, "a fetch refused is no fetch served")
	assert.Equal(t, map[string]float64{browse.SourceExternal: 1, browse.SourceBuiltin: 1, browse.SourceCache: 1},
		metricstest.Samples(t, m, "svc_web_fetches_total"))
}
