package metrics

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// This file holds what the subsystems record: policies, providers and
// plugins, the run journal, jobs, the web, rate limits and the learning
// loop. Where a label's values are fixed, a caller takes its child once (a
// *Counter, a *ProviderCounters) and keeps it, so that counting costs an
// atomic add and no lookup.

// Counter is one child of a family, looked up once. A nil Counter (metrics
// off) counts nothing.
type Counter struct{ c prometheus.Counter }

// Inc adds one.
func (c *Counter) Inc() {
	if c != nil {
		c.c.Inc()
	}
}

func child(vec *prometheus.CounterVec, labels ...string) *Counter {
	return &Counter{vec.WithLabelValues(labels...)}
}

// PolicyEvaluation counts an evaluation of the policies on a request of
// target, by the decision it came to (an evaluation no rule matched is an
// allow).
func (m *Metrics) PolicyEvaluation(target, decision string) {
	if m != nil {
		m.PolicyEvaluations.WithLabelValues(target, decision).Inc()
	}
}

// PolicyVerdict counts a rule that matched a request of target, by its
// effect and id (bounded: past the label limit, ids count as Other).
func (m *Metrics) PolicyVerdict(target, effect, rule string) {
	if m != nil {
		m.PolicyVerdicts.WithLabelValues(target, effect, m.rules.Value(rule)).Inc()
	}
}

// PolicyError counts a rule of target whose condition failed to evaluate.
func (m *Metrics) PolicyError(target string) {
	if m != nil {
		m.PolicyErrors.WithLabelValues(target).Inc()
	}
}

// RateLimiter is the refusals counter of one limiter (api, abuse,
// account, approvals), to keep beside it.
func (m *Metrics) RateLimiter(limiter string) *Counter {
	if m == nil {
		return nil
	}
	return child(m.RateLimited, limiter)
}

// ProviderCounters are one provider's attempt families, looked up once per
// outcome. A nil one counts nothing.
type ProviderCounters struct {
	outcomes map[string]prometheus.Counter // read only once made
	m        *Metrics
	name     string
	duration prometheus.Observer
	retries  prometheus.Counter
}

// Provider returns name's counters, for the outcomes given (others are
// looked up as they come).
func (m *Metrics) Provider(name string, outcomes ...string) *ProviderCounters {
	if m == nil {
		return nil
	}
	p := &ProviderCounters{outcomes: make(map[string]prometheus.Counter, len(outcomes)), m: m, name: name,
		duration: m.ProviderDuration.WithLabelValues(name), retries: m.ProviderRetries.WithLabelValues(name)}
	for _, o := range outcomes {
		p.outcomes[o] = m.ProviderAttempts.WithLabelValues(name, o)
	}
	return p
}

// Attempt counts an attempt of outcome that took d; retry says its call
// had already tried this provider.
func (p *ProviderCounters) Attempt(outcome string, d time.Duration, retry bool) {
	if p == nil {
		return
	}
	c, ok := p.outcomes[outcome]
	if !ok {
		c = p.m.ProviderAttempts.WithLabelValues(p.name, outcome)
	}
	c.Inc()
	p.duration.Observe(d.Seconds())
	if retry {
		p.retries.Inc()
	}
}

// Fallback counts a call answered by provider to after from, the first it
// tried, failed.
func (m *Metrics) Fallback(from, to string) {
	if m != nil {
		m.Fallbacks.WithLabelValues(from, to).Inc()
	}
}

// PluginRestart counts a plugin process started again after its last one
// died or was dropped.
func (m *Metrics) PluginRestart(plugin string) {
	if m != nil {
		m.PluginRestarts.WithLabelValues(plugin).Inc()
	}
}

// BatchWritten records one store of the recorder's writer: how long it
// took, how many runs it carried and whether it failed.
func (m *Metrics) BatchWritten(d time.Duration, runs int, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.BatchWrite.WithLabelValues(outcome).Observe(d.Seconds())
	m.BatchRuns.Observe(float64(runs))
}

// JobFailed counts a failed attempt of a job of type typ (the types svc
// registers); final says the job failed for good.
func (m *Metrics) JobFailed(typ string, final bool) {
	if m != nil {
		m.JobFailures.WithLabelValues(typ, strconv.FormatBool(final)).Inc()
	}
}

// WebFetched is the fetches counter of one source (builtin, external or
// cache), to keep beside it.
func (m *Metrics) WebFetched(source string) *Counter {
	if m == nil {
		return nil
	}
	return child(m.WebFetches, source)
}

// refusalClasses folds netguard's classes of a refused destination into
// a few: what an operator tells apart on a dashboard.
var refusalClasses = map[string]string{
	"private": "private", "cgnat": "private",
	"loopback":    "loopback",
	"link-local":  "link_local",
	"multicast":   "multicast",
	"unspecified": "unspecified",
	"reserved":    "reserved", "documentation": "reserved", "benchmarking": "reserved", "broadcast": "reserved",
	"ipv4-mapped": "reserved", "ipv4-compatible": "reserved", "ipv4-translated": "reserved", "nat64": "reserved",
	"6to4": "reserved", "teredo": "reserved", "non-global-ipv6": "reserved",
	"local-name": "name", "metadata-name": "name",
	"port": "port",
}

// RefusalClass is the class a refusal of netguard's class counts under:
// private, loopback, link_local, multicast, unspecified, reserved, name,
// port, or Other.
func RefusalClass(class string) string {
	if c, ok := refusalClasses[class]; ok {
		return c
	}
	return Other
}

// WebRefused counts a fetch, navigation or redirect refused for going to
// a destination of netguard's class (folded by RefusalClass).
func (m *Metrics) WebRefused(class string) {
	if m != nil {
		m.WebRefusals.WithLabelValues(RefusalClass(class)).Inc()
	}
}

// Shadow counts a shadow evaluation of an artifact beside a live call by
// the learning loop's outcome: pass counts as match, fail as mismatch,
// abstain (the artifact declined) as abstain.
func (m *Metrics) Shadow(outcome string) {
	if m == nil {
		return
	}
	result := "abstain"
	switch outcome {
	case "pass":
		result = "match"
	case "fail":
		result = "mismatch"
	}
	m.ShadowEvaluations.WithLabelValues(result).Inc()
}

// Quarantined counts a promoted artifact quarantined.
func (m *Metrics) Quarantined() {
	if m != nil {
		m.Quarantines.Inc()
	}
}

// Sourced is a family read at scrape time from a source the composition
// root gives it once the component exists; without one it reports
// nothing. Its descriptions are registered with the rest, so the registry
// lists it from the start.
type Sourced struct {
	descs   []*prometheus.Desc
	collect atomic.Pointer[func(ctx context.Context, ch chan<- prometheus.Metric) error]
	failed  prometheus.Counter
}

// Describe sends the family's descriptions.
func (s *Sourced) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d
	}
}

// collectTimeout bounds a source's read at scrape time.
const collectTimeout = 5 * time.Second

// Collect reads the source; one that fails reports nothing and counts in
// svc_metrics_collect_errors_total.
func (s *Sourced) Collect(ch chan<- prometheus.Metric) {
	f := s.collect.Load()
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	if err := (*f)(ctx, ch); err != nil && s.failed != nil {
		s.failed.Inc()
	}
}

func (s *Sourced) set(f func(ctx context.Context, ch chan<- prometheus.Metric) error) {
	s.collect.Store(&f)
}

// ReadApprovalsPending makes svc_approvals_pending count's answer.
func (m *Metrics) ReadApprovalsPending(count func(ctx context.Context) (int, error)) {
	if m == nil {
		return
	}
	d := m.ApprovalsPending.descs[0]
	m.ApprovalsPending.set(func(ctx context.Context, ch chan<- prometheus.Metric) error {
		n, err := count(ctx)
		if err != nil {
			return err
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n))
		return nil
	})
}

// The states of a circuit breaker, as svc_provider_breaker_state names
// them (the providers' own names).
var breakerStates = []string{"closed", "open", "half_open"}

// ProviderHealth is one provider's breaker state (closed, open or
// half_open) and whether it is rate limited now.
type ProviderHealth struct {
	Provider    string
	Breaker     string
	RateLimited bool
}

// ReadBreakers makes svc_provider_breaker_state and
// svc_provider_rate_limited the providers' health as states reports it.
func (m *Metrics) ReadBreakers(states func() []ProviderHealth) {
	if m == nil {
		return
	}
	state, limited := m.Breakers.descs[0], m.Breakers.descs[1]
	m.Breakers.set(func(_ context.Context, ch chan<- prometheus.Metric) error {
		for _, p := range states() {
			for _, s := range breakerStates {
				ch <- prometheus.MustNewConstMetric(state, prometheus.GaugeValue, b2f(p.Breaker == s), p.Provider, s)
			}
			ch <- prometheus.MustNewConstMetric(limited, prometheus.GaugeValue, b2f(p.RateLimited), p.Provider)
		}
		return nil
	})
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// JobStates are the states svc_job_queue_depth reports: those of jobs
// still waiting or running (finished ones, succeeded or failed, are
// history: svc_job_failures_total counts the failures).
var JobStates = []string{"queued", "running"}

// ReadJobQueue makes svc_job_queue_depth count's answer, a count per
// state; each of JobStates is reported, 0 when count has none.
func (m *Metrics) ReadJobQueue(count func(ctx context.Context) (map[string]int, error)) {
	if m == nil {
		return
	}
	d := m.JobQueue.descs[0]
	m.JobQueue.set(func(ctx context.Context, ch chan<- prometheus.Metric) error {
		n, err := count(ctx)
		if err != nil {
			return err
		}
		for _, s := range JobStates {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n[s]), s)
		}
		return nil
	})
}

// ReadJournal makes the journal backlog's gauges backlog's answer: runs
// journaled and not yet stored, and their bytes.
func (m *Metrics) ReadJournal(backlog func() (runs, bytes int64)) {
	if m == nil {
		return
	}
	runs, bytes := m.Journal.descs[0], m.Journal.descs[1]
	m.Journal.set(func(_ context.Context, ch chan<- prometheus.Metric) error {
		r, b := backlog()
		ch <- prometheus.MustNewConstMetric(runs, prometheus.GaugeValue, float64(r))
		ch <- prometheus.MustNewConstMetric(bytes, prometheus.GaugeValue, float64(b))
		return nil
	})
}
