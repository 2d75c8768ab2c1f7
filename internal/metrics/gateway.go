package metrics

import "time"

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
	if m.tenant {
		tenant := m.tenants.Value(c.Tenant)
		m.Requests.WithLabelValues(c.Endpoint, route, c.Provider, model, class, mode, app, tenant).Inc()
		if in > 0 {
			m.Tokens.WithLabelValues("input", c.Provider, model, tenant).Add(float64(in))
		}
		if out > 0 {
			m.Tokens.WithLabelValues("output", c.Provider, model, tenant).Add(float64(out))
		}
		if c.CostUSD > 0 {
			m.Cost.WithLabelValues(route, c.Provider, model, tenant).Add(c.CostUSD)
		}
		if c.SavedUSD > 0 {
			m.Savings.WithLabelValues(route, tenant).Add(c.SavedUSD)
		}
		if c.GhostSavedUSD > 0 {
			m.GhostSavings.WithLabelValues(tenant).Add(c.GhostSavedUSD)
		}
	} else {
		m.Requests.WithLabelValues(c.Endpoint, route, c.Provider, model, class, mode, app).Inc()
		if in > 0 {
			m.Tokens.WithLabelValues("input", c.Provider, model).Add(float64(in))
		}
		if out > 0 {
			m.Tokens.WithLabelValues("output", c.Provider, model).Add(float64(out))
		}
		if c.CostUSD > 0 {
			m.Cost.WithLabelValues(route, c.Provider, model).Add(c.CostUSD)
		}
		if c.SavedUSD > 0 {
			m.Savings.WithLabelValues(route).Add(c.SavedUSD)
		}
		if c.GhostSavedUSD > 0 {
			m.GhostSavings.WithLabelValues().Add(c.GhostSavedUSD)
		}
	}
	m.RequestDuration.WithLabelValues(c.Endpoint, route, c.Provider, model).Observe(c.Duration.Seconds())
	m.Overhead.WithLabelValues(c.Endpoint, route).Observe(c.Overhead.Seconds())
	if c.FirstByte > 0 {
		m.FirstByte.WithLabelValues(c.Endpoint, route, c.Provider, model).Observe(c.FirstByte.Seconds())
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
	m.CacheLookups.WithLabelValues(tier).Inc()
	if hit {
		m.CacheHits.WithLabelValues(tier).Inc()
	}
}
