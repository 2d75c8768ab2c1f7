package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
)

// The app hands its metrics to every component and gives the scrape-time
// gauges their sources.
func TestMetricsAreWired(t *testing.T) {
	a, err := app.New(context.Background(), app.Options{Config: configFor(t, nil), DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	require.NotNil(t, a.Metrics, "metrics are on by default")

	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, a.Recorder.Sync(context.Background()))

	m := a.Metrics
	provider := a.Providers.Current().Providers[0].Name
	assert.Equal(t, map[string]float64{"ok," + provider: 1}, metricstest.Nonzero(t, m, "svc_provider_attempts_total"))
	assert.Equal(t, map[string]float64{provider + ",closed": 1, provider + ",open": 0, provider + ",half_open": 0},
		metricstest.Samples(t, m, "svc_provider_breaker_state"))
	assert.Equal(t, map[string]float64{"queued": 0, "running": 0}, metricstest.Samples(t, m, "svc_job_queue_depth"))
	assert.Equal(t, map[string]float64{"": 0}, metricstest.Samples(t, m, "svc_approvals_pending"))
	assert.Equal(t, map[string]float64{"": 0}, metricstest.Samples(t, m, "svc_ledger_journal_backlog_runs"))
	assert.Equal(t, 1.0, metricstest.Samples(t, m, "svc_ledger_batch_runs")[""], "the run was stored in one batch")
}

func TestMetricsOff(t *testing.T) {
	a, err := app.New(context.Background(), app.Options{Config: configFor(t, map[string]string{"SVC_METRICS": "false"}), DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	assert.Nil(t, a.Metrics)
}
