package providers

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/svc-gateway/svc/internal/calltime"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Router sends each call to the providers of the current Set. It is safe
// for concurrent use; Swap replaces the set without stopping calls in
// flight, which finish on the set their plan was made from.
type Router struct {
	state  atomic.Pointer[state]
	prices atomic.Pointer[pricing.Table]
	loaded atomic.Pointer[loadStatus]
	// secrets are the keys of every set the router served, kept after a
	// reload dropped them: a call on the old set may still fail with one.
	secrets atomic.Pointer[[]string]
	swapMu  sync.Mutex // one Swap at a time, so that each sees the state it replaces
	now     func() time.Time
	// sleep waits d or until ctx is done; float64 draws in [0, 1): the
	// tests' stand-ins keep them from real time and chance.
	sleep   func(ctx context.Context, d time.Duration) error
	float64 func() float64
	// afterFunc, when set (UseTimers), stands for time.AfterFunc.
	afterFunc func(d time.Duration, f func()) (stop func() bool)
	// metrics counts the attempts, retries and fallbacks (SetMetrics);
	// nil counts nothing.
	metrics *metrics.Metrics
	// listing shares one listing of the providers' models among the calls
	// that ask for it at once.
	listing singleflight.Group
}

// SetMetrics makes the router count its attempts, retries and fallbacks
// in m. Call it before the router is shared.
func (r *Router) SetMetrics(m *metrics.Metrics) {
	r.metrics = m
	r.countAll(r.state.Load())
}

// countAll makes the attempt counters of st's providers, so that they
// show at zero before their first attempt.
func (r *Router) countAll(st *state) {
	for i, p := range st.set.Providers {
		r.counters(st.health[i], p.Name)
	}
}

// attemptOutcomes are the outcomes each provider's counters are made for
// at once.
var attemptOutcomes = []string{OutcomeOK, OutcomeError, OutcomeTimeout, OutcomeRateLimited, OutcomeUnavailable, OutcomeRefused, OutcomeCancelled}

// counters are name's attempt counters, made once the router counts
// (SetMetrics) or the provider is loaded (Swap), and kept with its health
// (across a reload that keeps the provider).
func (r *Router) counters(h *health, name string) *metrics.ProviderCounters {
	if r.metrics == nil {
		return nil
	}
	if c := h.counters.Load(); c != nil {
		return c
	}
	c := r.metrics.Provider(name, attemptOutcomes...)
	h.counters.Store(c)
	return c
}

// Health is each provider's breaker state and rate limit now, for the
// scrape-time gauges (metrics.ReadBreakers).
func (r *Router) Health() []metrics.ProviderHealth {
	st := r.state.Load()
	now := r.now()
	out := make([]metrics.ProviderHealth, len(st.set.Providers))
	for i, p := range st.set.Providers {
		b, limited, _, _ := st.health[i].status(now)
		out[i] = metrics.ProviderHealth{Provider: p.Name, Breaker: b.State, RateLimited: limited != nil}
	}
	return out
}

// UseTimers makes the router's waits (an attempt's timeout, a backoff)
// timers of afterFunc, such as a fake clock's, instead of real time. Call
// it before the router is shared.
func (r *Router) UseTimers(afterFunc func(d time.Duration, f func()) (stop func() bool)) {
	r.afterFunc = afterFunc
	r.sleep = func(ctx context.Context, d time.Duration) error {
		fired := make(chan struct{})
		stop := afterFunc(d, func() { close(fired) })
		defer stop()
		select {
		case <-fired:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// loadStatus is what the loader said of the last load.
type loadStatus struct {
	source   string
	at       time.Time // when the set serving was read
	err      string
	failedAt time.Time // when the refused reload was read
}

// NewRouter returns a router over set.
func NewRouter(set *Set, now func() time.Time) *Router {
	if now == nil {
		now = time.Now
	}
	r := &Router{now: now, sleep: sleep, float64: rand.Float64}
	r.state.Store(newState(set, nil))
	r.keepSecrets(set)
	r.loaded.Store(&loadStatus{source: set.Source, at: now()})
	return r
}

// keepSecrets adds set's keys to the router's secrets. Called once per set,
// under swapMu or before the router is shared.
func (r *Router) keepSecrets(set *Set) {
	var all []string
	if old := r.secrets.Load(); old != nil {
		all = append(all, *old...)
	}
	for _, k := range set.Secrets {
		if k != "" && !slices.Contains(all, k) {
			all = append(all, k)
		}
	}
	r.secrets.Store(&all)
}

// Secrets are the keys of every set the router served: strings no error
// text may show.
func (r *Router) Secrets() []string {
	if s := r.secrets.Load(); s != nil {
		return *s
	}
	return nil
}

// scrub hides the router's secrets in s.
func (r *Router) scrub(s string) string {
	for _, secret := range r.Secrets() {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

// Single is the environment's set: one provider, serving every model, one
// attempt per call, no breaker, no timeout.
func Single(name, plugin string, impl pluginapi.Provider) *Set {
	return &Set{
		Providers: []*Provider{{Name: name, Plugin: plugin, Mode: ModePlugin, Weight: 1, Impl: impl,
			Fingerprint: "env:" + name + ":" + plugin}},
		Retries: Retries{MaxAttempts: 1},
	}
}

// Swap makes set the current one. A provider of the same Name and
// Fingerprint as one of the set it replaces keeps its breaker, rate limit
// and counts.
func (r *Router) Swap(set *Set) {
	r.swapMu.Lock()
	defer r.swapMu.Unlock()
	r.keepSecrets(set)
	st := newState(set, r.state.Load())
	r.countAll(st)
	r.state.Store(st)
}

// Current is the set calls are planned on now.
func (r *Router) Current() *Set { return r.state.Load().set }

// SetLoadStatus records the outcome of the last load of the providers
// file, for Status: source is the file, at when it was read, err why it
// failed (nil: it loaded, and the set was swapped in). A failed reload
// leaves the last good set serving, and its load time; Status says so.
func (r *Router) SetLoadStatus(source string, at time.Time, err error) {
	ls := &loadStatus{source: source, at: at}
	if err != nil {
		ls.err, ls.failedAt = err.Error(), at
		if prev := r.loaded.Load(); prev != nil && !prev.at.IsZero() {
			ls.at = prev.at
		}
	}
	r.loaded.Store(ls)
}

// SetPrices gives the router the price table Cost falls back on.
func (r *Router) SetPrices(t *pricing.Table) { r.prices.Store(t) }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxListing bounds a shared listing of a provider that sets no timeout
// of its own: no caller is left to end it once they all went away.
const maxListing = time.Minute

// Models lists the models of every provider (those its models match),
// the first provider naming a model owning it, and then each route's
// model that is no glob, owned by svc. A provider that fails to list is
// left out, unless every one fails. Calls at once share one listing, which
// goes on when a caller leaves: a burst of calls costs the upstreams, and
// svc, one list rather than one each.
func (r *Router) Models(ctx context.Context) ([]pluginapi.Model, error) {
	// The wait is the providers' time, not svc's (real time, as attempt
	// marks it).
	clock := calltime.From(ctx)
	clock.AttemptBegan(time.Now())
	defer func() { clock.AttemptEnded(time.Now()) }()
	shared := r.listing.DoChan("models", func() (any, error) {
		return r.listModels(context.WithoutCancel(ctx))
	})
	select {
	case res := <-shared:
		if res.Err != nil {
			return nil, res.Err
		}
		return slices.Clone(res.Val.([]pluginapi.Model)), nil // each caller's own
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// listModels asks every provider for its models, at once.
func (r *Router) listModels(ctx context.Context) ([]pluginapi.Model, error) {
	set := r.Current()
	// Every provider is asked at once, each within its own timeout: one
	// that hangs costs the list its timeout, not the sum of them all.
	lists := make([][]pluginapi.Model, len(set.Providers))
	errs := make([]error, len(set.Providers))
	var wg sync.WaitGroup
	for i, p := range set.Providers {
		wg.Go(func() {
			timeout := p.Timeout
			if timeout <= 0 {
				timeout = maxListing
			}
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			lists[i], errs[i] = p.Impl.Models(pctx)
		})
	}
	wg.Wait()
	var out []pluginapi.Model
	seen := map[string]bool{}
	kinds := map[listed]string{} // each model listed: what it answers
	var firstErr error
	failed := 0
	for i, p := range set.Providers {
		if errs[i] != nil {
			if firstErr == nil {
				firstErr = errs[i]
			}
			failed++
			continue
		}
		for _, m := range lists[i] {
			kinds[listed{p.Name, m.ID}] = m.Kind
			if !seen[m.ID] && p.Serves(m.ID) {
				seen[m.ID] = true
				out = append(out, m)
			}
		}
	}
	if failed == len(set.Providers) && firstErr != nil {
		return nil, listingFailed(firstErr)
	}
	for _, rt := range set.Routes {
		if !isGlob(rt.Model) && !seen[rt.Model] {
			seen[rt.Model] = true
			out = append(out, pluginapi.Model{ID: rt.Model, OwnedBy: "svc", Kind: routeKind(rt, kinds)})
		}
	}
	return out, nil
}

// listingFailed is the answer to a model list no provider could give. A
// provider's refusal of its own listing (an upstream without /models
// answers 404 model_not_found) is the provider failing, not the caller
// naming a model: a 502 that says so, with the provider's words.
func listingFailed(err error) error {
	var pe *pluginapi.ProviderError
	if !errors.As(err, &pe) || pe.Status >= 500 {
		return err
	}
	return &pluginapi.ProviderError{Status: http.StatusBadGateway, Type: "upstream_error",
		Message: "no provider's model list could be read: " + pe.Message}
}

// listed is a model as one provider listed it.
type listed struct{ provider, model string }

// routeKind is what a route's alias answers: what the first of its
// targets' models answers, as the target's provider listed it, else chat.
func routeKind(rt Route, kinds map[listed]string) string {
	for _, t := range rt.Targets {
		model := t.Model
		if model == "" {
			model = rt.Model
		}
		if kind := kinds[listed{t.Provider, model}]; kind != "" {
			return kind
		}
	}
	return pluginapi.KindChat
}

// Cost prices a call of the plan: at the answering provider's own price
// for the model it was asked for, else the table's for that model, else
// the table's for the model the caller named. Without an answer, the last
// provider tried stands for it.
func (r *Router) Cost(p *Plan, n pricing.Tokens) (usd float64, known bool) {
	table := r.prices.Load()
	upstream := p.Model
	var prov *Provider
	if i := max(p.lastTried-1, 0); i < len(p.Candidates) {
		upstream = p.Candidates[i].Model
		switch {
		case p.lastProvider != nil:
			prov = p.lastProvider
		case p.st != nil:
			prov = p.st.set.Providers[p.order[i]]
		}
	}
	if prov != nil && prov.Prices != nil {
		if usd, ok := prov.Prices.Cost(upstream, n); ok {
			return usd, true
		}
	}
	if table == nil {
		return 0, false
	}
	if usd, ok := table.Cost(upstream, n); ok || upstream == p.Model {
		return usd, ok
	}
	return table.Cost(p.Model, n)
}

// Status is the set's configuration and each provider's health now.
func (r *Router) Status() Status {
	st := r.state.Load()
	ls := r.loaded.Load()
	now := r.now()
	s := Status{Source: ls.source, LoadedAt: ls.at.UTC(), OK: ls.err == "", Error: ls.err, FailedAt: utcOrNil(ls.failedAt),
		Retries: RetriesStatus{MaxAttempts: max(st.set.Retries.MaxAttempts, 1), BackoffMS: st.set.Retries.Backoff.Milliseconds(),
			MaxBackoffMS: st.set.Retries.MaxBackoff.Milliseconds()},
		Providers: make([]ProviderStatus, 0, len(st.set.Providers)), Routes: make([]RouteStatus, 0, len(st.set.Routes))}
	for i, p := range st.set.Providers {
		h := st.health[i]
		ps := ProviderStatus{Name: p.Name, Plugin: p.Plugin, Mode: p.Mode, BaseURL: p.BaseURL, Models: p.Models,
			Weight: max(p.Weight, 1), TimeoutMS: p.Timeout.Milliseconds(),
			Stats: ProviderStats{Attempts: h.attempts.Load(), Failures: h.failures.Load()}}
		if ps.Mode == "" {
			ps.Mode = ModePlugin
		}
		if ps.Models == nil {
			ps.Models = []string{}
		}
		ps.Breaker, ps.RateLimitedUntil, ps.LastError, ps.LastErrorAt = h.status(now)
		s.Providers = append(s.Providers, ps)
	}
	for _, rt := range st.set.Routes {
		rs := RouteStatus{Model: rt.Model, Strategy: rt.Strategy, Targets: make([]TargetStatus, 0, len(rt.Targets))}
		if rs.Strategy == "" {
			rs.Strategy = Ordered
		}
		for _, t := range rt.Targets {
			w := t.Weight
			if i, ok := st.byName[t.Provider]; ok && w <= 0 {
				w = max(st.set.Providers[i].Weight, 1)
			}
			rs.Targets = append(rs.Targets, TargetStatus{Provider: t.Provider, Model: t.Model, Weight: w})
		}
		s.Routes = append(s.Routes, rs)
	}
	return s
}

// Status is the providers' configuration and health, for the API: never a
// key.
type Status struct {
	Source    string           `json:"source"`             // the providers file, or "" for the environment
	LoadedAt  time.Time        `json:"loadedAt"`           // when the set serving was read
	OK        bool             `json:"ok"`                 // the last load or reload succeeded
	Error     string           `json:"error,omitempty"`    // why it failed; the last good set serves
	FailedAt  *time.Time       `json:"failedAt,omitempty"` // when the refused reload was read
	Retries   RetriesStatus    `json:"retries"`
	Providers []ProviderStatus `json:"providers"`
	Routes    []RouteStatus    `json:"routes"`
}

// RetriesStatus is Retries in the API's units.
type RetriesStatus struct {
	MaxAttempts  int   `json:"maxAttempts"`
	BackoffMS    int64 `json:"backoffMs"`
	MaxBackoffMS int64 `json:"maxBackoffMs"`
}

// ProviderStatus is one provider instance and its health.
type ProviderStatus struct {
	Name             string        `json:"name"`
	Plugin           string        `json:"plugin"`
	Mode             string        `json:"mode"`
	BaseURL          string        `json:"baseUrl"`
	Models           []string      `json:"models"`
	Weight           int           `json:"weight"`
	TimeoutMS        int64         `json:"timeoutMs"`
	Breaker          BreakerStatus `json:"breaker"`
	RateLimitedUntil *time.Time    `json:"rateLimitedUntil,omitempty"`
	Stats            ProviderStats `json:"stats"`
	LastError        string        `json:"lastError,omitempty"`
	LastErrorAt      *time.Time    `json:"lastErrorAt,omitempty"`
}

// Breaker states.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// BreakerStatus is a provider's circuit breaker now.
type BreakerStatus struct {
	State               string     `json:"state"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	OpenUntil           *time.Time `json:"openUntil,omitempty"`
	Failures            int        `json:"failures"` // the configured threshold; 0: disabled
	CooldownMS          int64      `json:"cooldownMs"`
}

// ProviderStats count a provider's attempts since it was loaded.
type ProviderStats struct {
	Attempts int64 `json:"attempts"`
	Failures int64 `json:"failures"`
}

// RouteStatus is one route of the set.
type RouteStatus struct {
	Model    string         `json:"model"`
	Strategy string         `json:"strategy"`
	Targets  []TargetStatus `json:"targets"`
}

// TargetStatus is one target of a route.
type TargetStatus struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	Weight   int    `json:"weight"`
}

// utcOrNil is t in UTC, or nil for the zero time.
func utcOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
