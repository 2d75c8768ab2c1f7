package app

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/testbin"
)

func startWith(t *testing.T, env map[string]string) *App {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string {
		switch k {
		case "SVC_ADDR":
			return "127.0.0.1:0"
		case "SVC_PLUGIN_DIR":
			return testbin.PluginDir(t)
		case "SVC_API_KEY":
			return "bootstrap-token-0123456789"
		}
		return env[k]
	})
	require.NoError(t, err)
	a, err := New(context.Background(), Options{Config: cfg, DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	require.NoError(t, a.Start(context.Background()))
	return a
}

func get(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// SVC_METRICS_ADDR serves GET /metrics, and nothing else, without a
// credential, until Close; the main listener still asks for one.
func TestMetricsListener(t *testing.T) {
	a := startWith(t, map[string]string{"SVC_METRICS_ADDR": "127.0.0.1:0"})
	require.NotNil(t, a.metricsAddr)
	base := "http://" + a.metricsAddr.String()
	status, body := get(t, "GET", base+"/metrics")
	require.Equal(t, http.StatusOK, status, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	assert.Contains(t, fams, "svc_build_info")
	assert.Contains(t, fams, "go_goroutines")

	status, _ = get(t, "GET", base+"/")
	assert.Equal(t, http.StatusNotFound, status, "nothing but the metrics")
	status, _ = get(t, "GET", base+"/api/v1/settings")
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = get(t, "POST", base+"/metrics")
	assert.Equal(t, http.StatusMethodNotAllowed, status)

	status, _ = get(t, "GET", "http://"+a.listener.Addr().String()+"/metrics")
	assert.Equal(t, http.StatusUnauthorized, status, "the main listener asks for a credential")

	require.NoError(t, a.Close())
	_, err = http.Get(base + "/metrics")
	assert.Error(t, err, "the listener closed with svc")
}

// A fresh svc's first scrape already shows, at zero, every family whose
// label values are known before its first event: the gateway's ghost
// savings, the cache tiers, the artifact types, the policy targets, the
// providers' attempts and retries, the plugins' restarts, the job types'
// failures, the batch writer, the shadow results, the refusal classes.
func TestAFreshScrapeShowsTheFamiliesOfKnownLabels(t *testing.T) {
	a := startWith(t, map[string]string{"SVC_METRICS_ADDR": "127.0.0.1:0"})
	status, body := get(t, "GET", "http://"+a.metricsAddr.String()+"/metrics")
	require.Equal(t, http.StatusOK, status, body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	series := func(family string, labels map[string]string) bool {
		f, ok := fams[family]
		if !ok {
			return false
		}
	metrics:
		for _, m := range f.GetMetric() {
			for name, value := range labels {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == name && l.GetValue() == value
				}
				if !found {
					continue metrics
				}
			}
			return true
		}
		return false
	}
	for family, labels := range map[string]map[string]string{
		"svc_gateway_ghost_savings_usd_total":     nil,
		"svc_cache_lookups_total":                 {"tier": "exact_response"},
		"svc_cache_hits_total":                    {"tier": "tool_result"},
		"svc_artifact_serves_total":               {"type": "template"},
		"svc_artifact_shadow_evaluations_total":   {"result": "mismatch"},
		"svc_policy_evaluations_total":            {"target": "chat", "decision": "deny"},
		"svc_policy_errors_total":                 {"target": "provider"},
		"svc_provider_attempts_total":             {"provider": "mock", "outcome": "ok"},
		"svc_provider_retries_total":              {"provider": "mock"},
		"svc_provider_attempt_duration_seconds":   {"provider": "mock"},
		"svc_plugin_restarts_total":               {"plugin": "svc-provider-mock"},
		"svc_job_failures_total":                  {"final": "true"},
		"svc_ledger_batch_write_duration_seconds": {"outcome": "error"},
		"svc_web_fetch_refusals_total":            {"class": "private"},
	} {
		assert.True(t, series(family, labels), "%s%v", family, labels)
	}
}

// With the metrics off, SVC_METRICS_ADDR serves nothing.
func TestMetricsListenerOff(t *testing.T) {
	a := startWith(t, map[string]string{"SVC_METRICS_ADDR": "127.0.0.1:0", "SVC_METRICS": "off"})
	assert.Nil(t, a.Metrics)
	assert.Nil(t, a.metricsAddr)
}
