package fetch

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
)

// Each refused destination counts once, by its class, whether the URL, a
// redirect or the dial was refused; other failures do not count.
func TestRefusalsAreCountedByClass(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	f, _, _ := testFetcher(t, Options{Metrics: m})
	for _, u := range []string{
		"http://127.0.0.1/",
		"http://public.test/r?code=302&to=http://169.254.169.254/latest/meta-data/",
		"http://private-a.test/",
		"http://10.0.0.7/",
		"http://localhost/", // refused by name, before any lookup
	} {
		_, err := f.Get(withTimeout(t), u, nil)
		requireKind(t, err, errs.Forbidden, "private_address")
	}
	_, err := f.Get(withTimeout(t), "http://nxdomain.test/", nil)
	requireKind(t, err, errs.Upstream, "dns_failure")
	_, err = f.Get(withTimeout(t), "ftp://public.test/", nil)
	requireKind(t, err, errs.Forbidden, "scheme_not_allowed")
	assert.Equal(t, map[string]float64{"loopback": 1, "link_local": 1, "private": 2, "name": 1},
		metricstest.Nonzero(t, m, "svc_web_fetch_refusals_total"))
}
