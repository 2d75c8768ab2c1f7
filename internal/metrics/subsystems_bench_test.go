package metrics_test

import (
	"testing"
	"time"

	"github.com/svc-gateway/svc/internal/metrics"
)

// What the subsystems' counting costs on a request's path: a counter kept
// beside its limiter, a provider attempt, a policy verdict (three labels,
// one of them bounded).
func BenchmarkRateLimiterInc(b *testing.B) {
	c := metrics.New(metrics.Options{}).RateLimiter("api")
	b.ReportAllocs()
	for b.Loop() {
		c.Inc()
	}
}

func BenchmarkProviderAttempt(b *testing.B) {
	p := metrics.New(metrics.Options{}).Provider("openai", "ok", "error")
	b.ReportAllocs()
	for b.Loop() {
		p.Attempt("ok", 120*time.Millisecond, false)
	}
}

func BenchmarkPolicyVerdict(b *testing.B) {
	m := metrics.New(metrics.Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.PolicyVerdict("chat", "deny", "no-secrets")
	}
}
