package metrics_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
)

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *metrics.Metrics
	m.PolicyVerdict("chat", "deny", "r")
	m.PolicyEvaluation("chat", "deny")
	m.PolicyError("chat")
	m.RateLimiter("api").Inc()
	m.Provider("p", "ok").Attempt("ok", time.Millisecond, true)
	m.Fallback("a", "b")
	m.PluginRestart("svc-provider-mock")
	m.BatchWritten(time.Millisecond, 3, nil)
	m.JobFailed("webhook.deliver", true)
	m.WebFetched("cache").Inc()
	m.WebRefused("private")
	m.Shadow("pass")
	m.Quarantined()
	m.ReadApprovalsPending(nil)
	m.ReadBreakers(nil)
	m.ReadJobQueue(nil)
	m.ReadJournal(nil)
}

func TestPolicyRulesAreBounded(t *testing.T) {
	m := metrics.New(metrics.Options{LabelLimit: 2})
	for i := range 4 {
		m.PolicyVerdict("chat", "deny", "rule-"+strconv.Itoa(i))
	}
	for rule, want := range map[string]float64{"rule-0": 1, "rule-1": 1, metrics.Other: 2} {
		if got := metricstest.Value(t, m.PolicyVerdicts.WithLabelValues("chat", "deny", rule)); got != want {
			t.Errorf("deny %s = %v, want %v", rule, got, want)
		}
	}
	if n := len(metricstest.Samples(t, m, "svc_policy_verdicts_total")); n != 3 {
		t.Errorf("%d series, want 3", n)
	}
}

func TestProviderCounters(t *testing.T) {
	m := metrics.New(metrics.Options{})
	p := m.Provider("a", "ok", "error")
	p.Attempt("error", 2*time.Millisecond, false)
	p.Attempt("ok", time.Millisecond, true)
	p.Attempt("timeout", time.Second, true) // an outcome not made beforehand
	for outcome, want := range map[string]float64{"ok": 1, "error": 1, "timeout": 1} {
		if got := metricstest.Value(t, m.ProviderAttempts.WithLabelValues("a", outcome)); got != want {
			t.Errorf("attempts %s = %v, want %v", outcome, got, want)
		}
	}
	if got := metricstest.Value(t, m.ProviderRetries.WithLabelValues("a")); got != 2 {
		t.Errorf("retries = %v, want 2", got)
	}
	if n := len(metricstest.Samples(t, m, "svc_provider_attempt_duration_seconds")); n != 1 {
		t.Errorf("duration series = %d, want 1", n)
	}
}

func TestRefusalClassesAreFew(t *testing.T) {
	for class, want := range map[string]string{
		"private": "private", "cgnat": "private", "link-local": "link_local", "loopback": "loopback",
		"metadata-name": "name", "teredo": "reserved", "something-new": metrics.Other,
	} {
		if got := metrics.RefusalClass(class); got != want {
			t.Errorf("RefusalClass(%q) = %q, want %q", class, got, want)
		}
	}
	m := metrics.New(metrics.Options{})
	m.WebRefused("link-local")
	if got := metricstest.Value(t, m.WebRefusals.WithLabelValues("link_local")); got != 1 {
		t.Errorf("link_local refusals = %v, want 1", got)
	}
}

func TestSourcedFamilies(t *testing.T) {
	m := metrics.New(metrics.Options{})
	if got := metricstest.Samples(t, m, "svc_job_queue_depth"); len(got) != 0 {
		t.Fatalf("a family without a source reports %v", got)
	}
	m.ReadJobQueue(func(context.Context) (map[string]int, error) { return map[string]int{"queued": 3, "failed": 1}, nil })
	m.ReadApprovalsPending(func(context.Context) (int, error) { return 2, nil })
	m.ReadBreakers(func() []metrics.ProviderHealth {
		return []metrics.ProviderHealth{{Provider: "a", Breaker: "open"}, {Provider: "b", Breaker: "closed", RateLimited: true}}
	})
	m.ReadJournal(func() (int64, int64) { return 5, 1234 })

	want := map[string]map[string]float64{
		"svc_job_queue_depth":   {"queued": 3, "running": 0}, // a failed job is history, not depth
		"svc_approvals_pending": {"": 2},
		"svc_provider_breaker_state": {"a,closed": 0, "a,open": 1, "a,half_open": 0,
			"b,closed": 1, "b,open": 0, "b,half_open": 0},
		"svc_provider_rate_limited":        {"a": 0, "b": 1},
		"svc_ledger_journal_backlog_runs":  {"": 5},
		"svc_ledger_journal_backlog_bytes": {"": 1234},
	}
	for name, w := range want {
		got := metricstest.Samples(t, m, name)
		if len(got) != len(w) {
			t.Errorf("%s = %v, want %v", name, got, w)
			continue
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("%s{%s} = %v, want %v", name, k, got[k], v)
			}
		}
	}
}

func TestSourcedFailureCounts(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.ReadApprovalsPending(func(context.Context) (int, error) { return 0, errors.New("database is closed") })
	if got := metricstest.Samples(t, m, "svc_approvals_pending"); len(got) != 0 {
		t.Errorf("a failed read reports %v", got)
	}
	if got := metricstest.Value(t, m.MetricsErrors); got != 1 {
		t.Errorf("collect errors = %v, want 1", got)
	}
}
