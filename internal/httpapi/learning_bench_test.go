package httpapi_test

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkArtifactServed is an optimize call answered by a promoted
// classifier, through the whole HTTP handler (identify, limiter, parse,
// policies, exact cache lookup, shape fingerprint, artifact, recording
// the run). p50-µs is the median of the calls.
func BenchmarkArtifactServed(b *testing.B) {
	ts := newServer(b, bootstrap, nil)
	rng := rand.New(rand.NewPCG(9, 10))
	id := ts.learnTriage(b, rng)
	res := ts.call(b, "POST", "/api/v1/artifacts/"+id+"/promote", bootstrap, "")
	require.Equal(b, http.StatusOK, res.status, res.body)

	// Tickets the artifact answers (it abstains on a few), each different
	// so that the exact cache does not answer first.
	var bodies []string
	for i := 0; len(bodies) < 512; i++ {
		body := triageBody(rng, 100_000+i)
		if ts.call(b, "POST", "/v1/chat/completions", bootstrap, body, "X-Svc-App", "support-triage").header.Get("x-svc-route") == "artifact" {
			bodies = append(bodies, strings.Replace(body, `"temperature":0`, `"temperature":0,"user":"bench"`, 1))
		}
	}
	h := ts.Config.Handler
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// A fresh body each round: n differs, so the cache key differs.
		body := strings.Replace(bodies[i%len(bodies)], `"user":"bench"`, `"user":"bench`+strconv.Itoa(i)+`"`, 1)
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bootstrap)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Svc-App", "support-triage")
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, req)
		times = append(times, time.Since(start))
		if w.Header().Get("x-svc-route") != "artifact" {
			b.Fatalf("route %q: %s", w.Header().Get("x-svc-route"), w.Body.String())
		}
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds())/1000, "p99-µs")
}
