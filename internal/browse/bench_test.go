package browse_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/fetch"
	"github.com/svc-gateway/svc/internal/store/storetest"

	"github.com/svc-gateway/svc/internal/shareddata"
)

// largestPage returns the biggest page of ../shared/data/pages beside the
// module root, read in place.
func largestPage(b *testing.B) []byte {
	files, _ := filepath.Glob(filepath.Join(shareddata.Dir(b, "pages"), "*", "source.html"))
	var best []byte
	for _, f := range files {
		if raw, err := os.ReadFile(f); err == nil && len(raw) > len(best) {
			best = raw
		}
	}
	if best == nil {
		b.Skip("SKIP: no pages in ../shared/data/pages: the SOM cache benchmark did not run")
	}
	return best
}

// BenchmarkFetchFromSOMCache is a fetch of the corpus's largest page served
// from the som tier: lookup, the fetch's row in the store, and the answer's
// JSON. p50-µs is the median of the individual fetches.
func BenchmarkFetchFromSOMCache(b *testing.B) {
	page := largestPage(b)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	defer site.Close()
	svc := browse.NewService(browse.ServiceOptions{
		Fetcher: fetch.New(fetch.Options{}), OpenFetcher: fetch.New(fetch.Options{AllowPrivate: true}), Cache: cache.New(cache.Options{MaxBytes: 64 << 20}),
		CacheTTL: time.Hour, Store: storetest.Open(b),
	})
	ctx := context.Background()
	if _, err := svc.Fetch(ctx, openCaller, site.URL+"/", false); err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		r, err := svc.Fetch(ctx, openCaller, site.URL+"/", false)
		if err != nil || !r.Cached {
			b.Fatalf("not served from the cache: %v", err)
		}
		if _, err := r.JSON(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(len(page)), "html-bytes")
}
