package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// The cost of an embeddings call, through the whole HTTP handler and the
// real mock plugin: live (a new input each call: parse, cache miss,
// provider over gRPC, price, run recorded), a cache hit, and the plugin
// called directly for scale (live minus direct is what svc adds).
func BenchmarkEmbeddings(b *testing.B) {
	const tmpl = `{"model":"text-embedding-3-small","input":["How do I get a refund for order N?","Where is my parcel?"]}`
	b.Run("live", func(b *testing.B) {
		h := newServer(b, bootstrap, nil).Config.Handler
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			serveEmbedding(b, h, strings.Replace(tmpl, "order N", "order "+strconv.Itoa(i), 1), "live")
		}
	})
	b.Run("cache-hit", func(b *testing.B) {
		h := newServer(b, bootstrap, nil).Config.Handler
		serveEmbedding(b, h, tmpl, "live")
		b.ReportAllocs()
		for b.Loop() {
			serveEmbedding(b, h, tmpl, "exact_cache")
		}
	})
	b.Run("plugin-direct", func(b *testing.B) {
		e := mockProvider(b).(pluginapi.Embedder)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			body := strings.Replace(tmpl, "order N", "order "+strconv.Itoa(i), 1)
			if _, err := e.Embed(context.Background(), pluginapi.EmbedRequest{Body: []byte(body), Model: "text-embedding-3-small"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func serveEmbedding(b *testing.B, h interface {
	ServeHTTP(w http.ResponseWriter, r *http.Request)
}, body, route string) {
	req := httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bootstrap)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if got := w.Header().Get("x-svc-route"); got != route {
		b.Fatalf("route %q, want %q: %s", got, route, w.Body.String())
	}
}
