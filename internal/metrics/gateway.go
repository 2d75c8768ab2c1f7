package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// GatewayCall is one gateway request as its metrics see it, once its
// answer ended. The HTTP layer fills it, with the Run its call recorded
// (the zero Run when none was: Route "" counts as "none").
type GatewayCall struct {
	// Endpoint is chat_completions, responses, embeddings or models.
	Endpoint string
	// Status is the HTTP status the answer went out with.
	Status int
	// Mode is the caller's key mode (observe, optimize); "" when the caller
	// was not identified.
	Mode   string
	App    string
	Tenant string
	// Duration is from the request's arrival to its answer's end; Overhead,
	// svc's share of it (Duration minus the provider's time); FirstByte,
	// from arrival to a streamed answer's first byte, 0 when not streamed.
	Duration  time.Duration
	Overhead  time.Duration
	FirstByte time.Duration
	Run
}

// Run is what a gateway call's recorded run tells its metrics.
type Run struct {
	// Route is the run's route (live, exact_cache, artifact, blocked); ""
	// when no run was recorded.
	Route    string
	Provider string
	Model    string
	// InputTokens and OutputTokens are the run's usage; CostUSD what it
	// cost, SavedUSD what a cache or artifact saved, GhostSavedUSD what an
	// observe-mode call would have saved.
	InputTokens   int64
	OutputTokens  int64
	CostUSD       float64
	SavedUSD      float64
	GhostSavedUSD float64
	// ArtifactType is the type of the artifact that answered, on route
	// artifact.
	ArtifactType string
}

// The label values of what was not there.
const (
	routeNone = "none"
	routeLive = "live"
	modeNone  = "none"
	// The routes that answer without a provider (ledger.RouteExactCache,
	// ledger.RouteArtifact).
	routeExactCache = "exact_cache"
	routeArtifact   = "artifact"
)

// statusClasses are the status_class values, by the status's hundreds.
var statusClasses = [...]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"}

func statusClass(status int) string {
	if i := status / 100; i >= 0 && i < len(statusClasses) {
		return statusClasses[i]
	}
	return "5xx"
}

// ObserveCall records a gateway request: its count, latency, overhead,
// first byte, and its run's tokens (those a provider answered with: not a
// cached or an artifact's answer's), cost and savings. App, model and tenant
// pass through their limiters (a new app or model is admitted only by a
// call answered with a 2xx by a provider, the cache or an artifact); the
// tenant label is there only when turned on.
func (m *Metrics) ObserveCall(c *GatewayCall) {
	if m == nil {
		return
	}
	route, mode := c.Route, c.Mode
	if route == "" {
		route = routeNone
	}
	if mode == "" {
		mode = modeNone
	}
	class := statusClass(c.Status)
	// Only a call a provider, the cache or an artifact answered admits a
	// new model or app: any client can name one in a call that is refused,
	// and such calls must not use up the limit.
	var model, app string
	if class == "2xx" && (route == routeLive || route == routeExactCache || route == routeArtifact) {
		model, app = m.models.Value(c.Model), m.apps.Value(c.App)
	} else {
		model, app = m.models.Known(c.Model), m.apps.Known(c.App)
	}
	// A cached or an artifact's answer carries the tokens of the call it
	// stands for, which no provider was paid for this time.
	in, out := c.InputTokens, c.OutputTokens
	if route == routeExactCache || route == routeArtifact {
		in, out = 0, 0
	}
	tenant := ""
	if m.tenant {
		tenant = m.tenants.Value(c.Tenant)
	}
	k := callKey{endpoint: c.Endpoint, route: route, provider: c.Provider, model: model, class: class, mode: mode, app: app, tenant: tenant}
	if in > 0 {
		k.moved |= movesInput
	}
	if out > 0 {
		k.moved |= movesOutput
	}
	if c.CostUSD > 0 {
		k.moved |= movesCost
	}
	if c.SavedUSD > 0 {
		k.moved |= movesSavings
	}
	if c.GhostSavedUSD > 0 {
		k.moved |= movesGhostSavings
	}
	if c.FirstByte > 0 {
		k.moved |= movesFirstByte
	}
	s := m.callSeries(k)
	s.requests.Inc()
	if s.inputTokens != nil {
		s.inputTokens.Add(float64(in))
	}
	if s.outputTokens != nil {
		s.outputTokens.Add(float64(out))
	}
	if s.cost != nil {
		s.cost.Add(c.CostUSD)
	}
	if s.savings != nil {
		s.savings.Add(c.SavedUSD)
	}
	if s.ghostSavings != nil {
		s.ghostSavings.Add(c.GhostSavedUSD)
	}
	s.duration.Observe(c.Duration.Seconds())
	s.overhead.Observe(c.Overhead.Seconds())
	if s.firstByte != nil {
		s.firstByte.Observe(c.FirstByte.Seconds())
	}
	if c.ArtifactType != "" {
		m.ArtifactServes.WithLabelValues(c.ArtifactType).Inc()
	}
}

// CacheLookup counts a lookup of a cache tier, and a hit when it found an
// entry fresh enough to serve.
func (m *Metrics) CacheLookup(tier string, hit bool) {
	if m == nil {
		return
	}
	t := m.tierSeries(tier)
	t.lookups.Inc()
	if hit {
		t.hits.Inc()
	}
}

// tierSeries are a cache tier's series, looked up once (see gatewaySeries).
type tierSeries struct{ lookups, hits prometheus.Counter }

// tierSeries returns tier's series, looking them up the first time.
func (m *Metrics) tierSeries(tier string) *tierSeries {
	s, ok := m.tiers.Load(tier)
	if !ok {
		s, _ = m.tiers.LoadOrStore(tier, &tierSeries{lookups: m.CacheLookups.WithLabelValues(tier), hits: m.CacheHits.WithLabelValues(tier)})
	}
	return s.(*tierSeries)
}

// callKey names the series a gateway call moves: its label values, and
// which of the series that move only when there is something to count it
// moves (a series is made when first looked up, and one that never moved
// would be exposed at zero).
type callKey struct {
	endpoint, route, provider, model, class, mode, app, tenant string
	moved                                                      moves
}

// moves are the optional series of a callKey.
type moves uint8

const (
	movesInput moves = 1 << iota
	movesOutput
	movesCost
	movesSavings
	movesGhostSavings
	movesFirstByte
)

// gatewaySeries are the series of one callKey, looked up once: finding a
// series by its label values hashes and compares every value, and a call
// moves up to eight series, each looked up on every call otherwise. The
// keys are as bounded as the labels (the limiters bound the free-form
// ones), so the lookups kept are too. A series a callKey does not move is
// nil.
type gatewaySeries struct {
	requests                                               prometheus.Counter
	inputTokens, outputTokens, cost, savings, ghostSavings prometheus.Counter
	duration, overhead, firstByte                          prometheus.Observer
}

// callSeries returns k's series, looking them up the first time.
func (m *Metrics) callSeries(k callKey) *gatewaySeries {
	if s, ok := m.calls.Load(k); ok {
		return s.(*gatewaySeries)
	}
	labels := func(values ...string) []string {
		if m.tenant {
			return append(values, k.tenant)
		}
		return values
	}
	s := &gatewaySeries{
		requests: m.Requests.WithLabelValues(labels(k.endpoint, k.route, k.provider, k.model, k.class, k.mode, k.app)...),
		duration: m.RequestDuration.WithLabelValues(k.endpoint, k.route, k.provider, k.model),
		overhead: m.Overhead.WithLabelValues(k.endpoint, k.route),
	}
	if k.moved&movesInput != 0 {
		s.inputTokens = m.Tokens.WithLabelValues(labels("input", k.provider, k.model)...)
	}
	if k.moved&movesOutput != 0 {
		s.outputTokens = m.Tokens.WithLabelValues(labels("output", k.provider, k.model)...)
	}
	if k.moved&movesCost != 0 {
		s.cost = m.Cost.WithLabelValues(labels(k.route, k.provider, k.model)...)
	}
	if k.moved&movesSavings != 0 {
		s.savings = m.Savings.WithLabelValues(labels(k.route)...)
	}
	if k.moved&movesGhostSavings != 0 {
		s.ghostSavings = m.GhostSavings.WithLabelValues(labels()...)
	}
	if k.moved&movesFirstByte != 0 {
		s.firstByte = m.FirstByte.WithLabelValues(k.endpoint, k.route, k.provider, k.model)
	}
	actual, _ := m.calls.LoadOrStore(k, s)
	return actual.(*gatewaySeries)
}
