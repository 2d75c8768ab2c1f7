// Package metrics holds svc's Prometheus metrics: every family in one
// registry of its own (with the Go runtime and process collectors), named by
// Prometheus' conventions (svc_ prefix, base units, _total counters), with
// labels kept bounded. A nil *Metrics is metrics turned off: every method
// does nothing, so callers never check.
package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Other is the value a bounded label takes once its limit is reached.
const Other = "other"

// Buckets of the duration histograms, in seconds. latencyBuckets resolve a
// cache hit's 100 µs and a 60 s stream alike; overheadBuckets, svc's own
// time, from 25 µs to a second.
var (
	latencyBuckets  = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
	overheadBuckets = []float64{0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
)

// Options configure the metrics.
type Options struct {
	// TenantLabel adds a tenant label to the gateway's families.
	TenantLabel bool
	// LabelLimit bounds the distinct values of a free-form label (app,
	// model, tenant, rule id); the rest count as Other.
	LabelLimit int
	// Version is the build's version, on svc_build_info.
	Version string
}

// Metrics are svc's metric families. Fields are the families; packages
// record through the methods (gateway.go, subsystems.go), which take care
// of nil and of bounding labels.
type Metrics struct {
	registry *prometheus.Registry
	handler  http.Handler
	tenant   bool
	apps     *Limiter
	models   *Limiter
	tenants  *Limiter
	rules    *Limiter
	calls    sync.Map // callKey → *gatewaySeries
	tiers    sync.Map // cache tier → *tierSeries

	// The gateway (gateway.go).
	Requests        *prometheus.CounterVec   // svc_gateway_requests_total{endpoint,route,provider,model,status_class,mode,app[,tenant]}
	RequestDuration *prometheus.HistogramVec // svc_gateway_request_duration_seconds{endpoint,route,provider,model}
	Overhead        *prometheus.HistogramVec // svc_gateway_overhead_seconds{endpoint,route}
	FirstByte       *prometheus.HistogramVec // svc_gateway_time_to_first_byte_seconds{endpoint,route,provider,model}
	Tokens          *prometheus.CounterVec   // svc_gateway_tokens_total{type=input|output,provider,model[,tenant]}
	Cost            *prometheus.CounterVec   // svc_gateway_cost_usd_total{route,provider,model[,tenant]}
	Savings         *prometheus.CounterVec   // svc_gateway_savings_usd_total{route[,tenant]}
	GhostSavings    *prometheus.CounterVec   // svc_gateway_ghost_savings_usd_total{[tenant]}

	// Caches and artifacts.
	CacheLookups      *prometheus.CounterVec // svc_cache_lookups_total{tier}
	CacheHits         *prometheus.CounterVec // svc_cache_hits_total{tier}
	ArtifactServes    *prometheus.CounterVec // svc_artifact_serves_total{type}
	ShadowEvaluations *prometheus.CounterVec // svc_artifact_shadow_evaluations_total{result=match|mismatch|abstain}
	Quarantines       prometheus.Counter     // svc_artifact_quarantines_total

	// Policies and approvals.
	PolicyEvaluations *prometheus.CounterVec // svc_policy_evaluations_total{target,decision}
	PolicyVerdicts    *prometheus.CounterVec // svc_policy_verdicts_total{target,effect,rule}
	PolicyErrors      *prometheus.CounterVec // svc_policy_errors_total{target}

	// Providers and plugins.
	ProviderAttempts *prometheus.CounterVec   // svc_provider_attempts_total{provider,outcome}
	ProviderDuration *prometheus.HistogramVec // svc_provider_attempt_duration_seconds{provider}
	ProviderRetries  *prometheus.CounterVec   // svc_provider_retries_total{provider}
	Fallbacks        *prometheus.CounterVec   // svc_provider_fallbacks_total{from,to}
	PluginRestarts   *prometheus.CounterVec   // svc_plugin_restarts_total{plugin}

	// The run journal and its batch writer.
	BatchWrite *prometheus.HistogramVec // svc_ledger_batch_write_duration_seconds{outcome=ok|error}
	BatchRuns  prometheus.Histogram     // svc_ledger_batch_runs

	// Jobs.
	JobFailures *prometheus.CounterVec // svc_job_failures_total{type,final=true|false}

	// The web and rate limits.
	WebFetches    *prometheus.CounterVec // svc_web_fetches_total{source}
	WebRefusals   *prometheus.CounterVec // svc_web_fetch_refusals_total{class}
	RateLimited   *prometheus.CounterVec // svc_rate_limit_refusals_total{limiter}
	MetricsErrors prometheus.Counter     // svc_metrics_collect_errors_total: a scrape-time collector that failed

	// Read at scrape time from the component that knows (subsystems.go:
	// each is registered here, and reports nothing until app gives it its
	// source).
	ApprovalsPending *Sourced // svc_approvals_pending
	Breakers         *Sourced // svc_provider_breaker_state{provider,state=closed|open|half_open}, svc_provider_rate_limited{provider}
	JobQueue         *Sourced // svc_job_queue_depth{state=queued|running}
	Journal          *Sourced // svc_ledger_journal_backlog_runs, svc_ledger_journal_backlog_bytes
}

// New builds the families and registers them, with the Go runtime and
// process collectors and svc_build_info.
func New(o Options) *Metrics {
	if o.LabelLimit <= 0 {
		o.LabelLimit = 50
	}
	m := &Metrics{registry: prometheus.NewRegistry(), tenant: o.TenantLabel,
		apps: NewLimiter(o.LabelLimit), models: NewLimiter(o.LabelLimit),
		tenants: NewLimiter(o.LabelLimit), rules: NewLimiter(o.LabelLimit)}
	withTenant := func(labels ...string) []string {
		if o.TenantLabel {
			return append(labels, "tenant")
		}
		return labels
	}
	f := factory{m.registry}
	m.Requests = f.counters("svc_gateway_requests_total", "Gateway calls answered, by endpoint, route taken, provider, model, status class, key mode and app.",
		withTenant("endpoint", "route", "provider", "model", "status_class", "mode", "app")...)
	m.RequestDuration = f.histograms("svc_gateway_request_duration_seconds", "Time from a gateway call's arrival to its answer's end, provider included.", latencyBuckets,
		"endpoint", "route", "provider", "model")
	m.Overhead = f.histograms("svc_gateway_overhead_seconds", "svc's own time on a gateway call: its duration minus the time its provider attempts took.", overheadBuckets,
		"endpoint", "route")
	m.FirstByte = f.histograms("svc_gateway_time_to_first_byte_seconds", "Time from a streamed call's arrival to its first byte to the client.", latencyBuckets,
		"endpoint", "route", "provider", "model")
	m.Tokens = f.counters("svc_gateway_tokens_total", "Tokens of gateway calls as the provider reported them, by type (input or output).",
		withTenant("type", "provider", "model")...)
	m.Cost = f.counters("svc_gateway_cost_usd_total", "What gateway calls cost, in US dollars, at the price of the provider that answered.",
		withTenant("route", "provider", "model")...)
	m.Savings = f.counters("svc_gateway_savings_usd_total", "What calls served by a cache or an artifact saved against the live call they avoided, in US dollars.",
		withTenant("route")...)
	m.GhostSavings = f.counters("svc_gateway_ghost_savings_usd_total", "What observe-mode calls would have saved had a cache or artifact served them, in US dollars.",
		withTenant()...)

	m.CacheLookups = f.counters("svc_cache_lookups_total", "Cache lookups, by tier.", "tier")
	m.CacheHits = f.counters("svc_cache_hits_total", "Cache lookups that found a servable entry, by tier.", "tier")
	m.ArtifactServes = f.counters("svc_artifact_serves_total", "Calls a promoted artifact answered, by artifact type.", "type")
	m.ShadowEvaluations = f.counters("svc_artifact_shadow_evaluations_total", "Shadow evaluations of an artifact beside a live call, by result (match, mismatch, or abstain when the artifact declined).", "result")
	m.Quarantines = f.counter("svc_artifact_quarantines_total", "Artifacts quarantined, automatically or by an operator.")

	m.PolicyEvaluations = f.counters("svc_policy_evaluations_total", "Policy evaluations, by target and the decision they came to (allow, deny or require_approval).", "target", "decision")
	m.PolicyVerdicts = f.counters("svc_policy_verdicts_total", "Verdicts of the policy rules that matched an evaluation, by target, effect and rule id.", "target", "effect", "rule")
	m.PolicyErrors = f.counters("svc_policy_errors_total", "Policy rules whose condition failed to evaluate, by target.", "target")

	m.ProviderAttempts = f.counters("svc_provider_attempts_total", "Calls made to provider instances, by outcome (ok, or why the attempt failed).", "provider", "outcome")
	m.ProviderDuration = f.histograms("svc_provider_attempt_duration_seconds", "Time of each provider attempt (a stream's: until its end).", latencyBuckets, "provider")
	m.ProviderRetries = f.counters("svc_provider_retries_total", "Provider attempts on a provider their call had already tried, by the provider retried.", "provider")
	m.Fallbacks = f.counters("svc_provider_fallbacks_total", "Calls answered by another provider than the first they tried.", "from", "to")
	m.PluginRestarts = f.counters("svc_plugin_restarts_total", "Plugin processes started again after theirs died.", "plugin")

	m.BatchWrite = f.histograms("svc_ledger_batch_write_duration_seconds", "Time the recorder's writer took to store a batch of runs in the database.", latencyBuckets, "outcome")
	m.BatchRuns = f.histogram("svc_ledger_batch_runs", "Runs per batch the recorder's writer stored.", prometheus.ExponentialBuckets(1, 2, 12))

	m.JobFailures = f.counters("svc_job_failures_total", "Failed job attempts, by type, and whether the job failed for good.", "type", "final")

	m.WebFetches = f.counters("svc_web_fetches_total", "Web pages fetched for agents, by source (builtin, external or cache).", "source")
	m.WebRefusals = f.counters("svc_web_fetch_refusals_total", "Web fetches, navigations and redirects refused, by class of destination.", "class")
	m.RateLimited = f.counters("svc_rate_limit_refusals_total", "Requests refused by a rate limit, by limiter.", "limiter")
	m.MetricsErrors = f.counter("svc_metrics_collect_errors_total", "Scrape-time collectors that failed to read their value.")

	m.ApprovalsPending = f.sourced(m.MetricsErrors, prometheus.NewDesc("svc_approvals_pending", "Approvals waiting for a person's decision, across tenants.", nil, nil))
	m.Breakers = f.sourced(m.MetricsErrors,
		prometheus.NewDesc("svc_provider_breaker_state", "Each provider's circuit breaker: 1 for its current state (closed, open or half_open), 0 for the others.", []string{"provider", "state"}, nil),
		prometheus.NewDesc("svc_provider_rate_limited", "1 while a provider is rate limited (a 429 asked to wait), else 0.", []string{"provider"}, nil))
	m.JobQueue = f.sourced(m.MetricsErrors, prometheus.NewDesc("svc_job_queue_depth", "Jobs in the queue across tenants, by state (queued or running).", []string{"state"}, nil))
	m.Journal = f.sourced(m.MetricsErrors,
		prometheus.NewDesc("svc_ledger_journal_backlog_runs", "Runs journaled and not yet stored in the database.", nil, nil),
		prometheus.NewDesc("svc_ledger_journal_backlog_bytes", "Journal bytes of the runs not yet stored in the database.", nil, nil))

	m.knownAtStart()

	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "svc_build_info", Help: "svc's build; always 1."}, []string{"version"})
	build.WithLabelValues(o.Version).Set(1)
	m.registry.MustRegister(build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{EnableOpenMetrics: true})
	return m
}

// Registry is the registry every family is in, for scrape-time collectors
// (Register) and tests.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.registry
}

// Register adds a collector read at scrape time (the breakers' states, the
// job queue's depth, the approvals pending).
func (m *Metrics) Register(c prometheus.Collector) {
	if m != nil {
		m.registry.MustRegister(c)
	}
}

// Handler serves the registry in the exposition format (OpenMetrics when the
// scraper asks for it); with the metrics off, a 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return m.handler
}

// factory registers families as it makes them.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counters(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) sourced(failed prometheus.Counter, descs ...*prometheus.Desc) *Sourced {
	s := &Sourced{descs: descs, failed: failed}
	f.reg.MustRegister(s)
	return s
}

func (f factory) histograms(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
