package gateway

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/tracing"
)

// exactLookup is what the exact cache had for a call.
type exactLookup struct {
	key       string
	cacheable bool
	entry     cache.Entry
	found     cache.Freshness
}

// cacheDetail is a run's routeExplanation.cache.
type cacheDetail struct {
	Tier        cache.Tier `json:"tier"`
	Cacheable   bool       `json:"cacheable"`
	Lookup      string     `json:"lookup"` // miss, fresh, stale, skipped
	Served      bool       `json:"served"`
	SourceRunID string     `json:"sourceRunId,omitempty"`
	StoredAt    *time.Time `json:"storedAt,omitempty"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
}

// fallbackDetail is a run's routeExplanation.fallback when a cached answer
// stood in for a provider that failed.
type fallbackDetail struct {
	Used     bool       `json:"used"`
	Reason   string     `json:"reason"`
	Tier     cache.Tier `json:"tier"`
	Stale    bool       `json:"stale"`
	StoredAt time.Time  `json:"storedAt"`
	cause    error      // the provider's failure, recorded on its provider.failed event
}

// cacheable says whether an answer to req may be cached and served again:
// only a deterministic request (temperature 0 or unset) has one answer
// worth repeating. An answer of n choices is cached whole, under a key
// that holds n, so a replay gives all n.
func cacheable(req *Request) (bool, string) {
	if req.Temperature != nil && *req.Temperature != 0 {
		return false, "not cacheable: temperature is not 0"
	}
	return true, ""
}

// lookupExact looks the call up in the exact cache and notes on the run what
// it found; in observe mode a fresh entry becomes ghost savings.
func (g *Gateway) lookupExact(ctx context.Context, c *call) {
	_, span := tracing.Start(ctx, "cache.lookup", trace.SpanKindInternal)
	g.lookupExactEntry(c)
	if span.IsRecording() {
		lookup := "off"
		if d, ok := c.run.Explanation.Cache.(*cacheDetail); ok {
			lookup = d.Lookup
		}
		attrs := tracing.NewAttrs()
		attrs.Add(attrCacheTier.String(string(cache.ExactResponse)), attrCacheLookup.String(lookup))
		attrs.SetOn(span)
		span.End()
	}
}

func (g *Gateway) lookupExactEntry(c *call) {
	if g.cache == nil || !g.cache.Enabled() {
		c.reject(ledger.RouteExactCache, "the exact cache is off")
		return
	}
	ok, why := cacheable(c.req)
	detail := &cacheDetail{Tier: cache.ExactResponse, Cacheable: ok, Lookup: "skipped"}
	c.run.Explanation.Cache = detail
	if !ok {
		c.reject(ledger.RouteExactCache, why)
		return
	}
	key, err := c.req.exactKey(c.id.TenantID, c.id.App, c.id.Subject)
	if err != nil {
		c.reject(ledger.RouteExactCache, "not cacheable: the request has no canonical form")
		return
	}
	c.exact = &exactLookup{key: key, cacheable: true}
	c.exact.entry, c.exact.found = g.cache.Lookup(c.id.TenantID, cache.ExactResponse, key)
	e := c.exact.entry
	switch c.exact.found {
	case cache.Miss:
		detail.Lookup = "miss"
		c.reject(ledger.RouteExactCache, "no cached answer for this request")
		return
	case cache.Stale:
		detail.Lookup = "stale"
		c.reject(ledger.RouteExactCache, "the cached answer expired at "+e.ExpiresAt.UTC().Format(time.RFC3339))
	case cache.Fresh:
		detail.Lookup = "fresh"
		if c.id.Mode != auth.Optimize {
			c.reject(ledger.RouteExactCache, "observe mode: a cached answer exists, but observe keys always get the live one")
			c.run.GhostSavedUSD = e.Meta.CostUSD
			c.run.Explanation.EstimatedSavingsUSD = e.Meta.CostUSD
		}
	}
	detail.SourceRunID, detail.StoredAt, detail.ExpiresAt = e.Meta.RunID, timePtr(e.StoredAt), timePtr(e.ExpiresAt)
}

// servable reports whether the lookup found an answer to serve now.
func (c *call) servable() bool {
	return c.exact != nil && c.exact.found == cache.Fresh && c.id.Mode == auth.Optimize
}

// serveExact turns the call into one answered from the cache: route,
// explanation, savings and the run's usage, at no cost.
func (g *Gateway) serveExact(c *call, fallback *fallbackDetail) []byte {
	e := c.exact.entry
	run := c.run
	run.Route = ledger.RouteExactCache
	run.Response = e.Value
	run.PromptTokens, run.CompletionTokens = e.Meta.PromptTokens, e.Meta.CompletionTokens
	run.TotalTokens = e.Meta.PromptTokens + e.Meta.CompletionTokens
	run.CostUSD, run.UsageUnknown, run.PriceUnknown = 0, false, false
	run.SavedUSD = e.Meta.CostUSD
	ex := &run.Explanation
	ex.Route = ledger.RouteExactCache
	ex.Reason = "the identical request was answered at " + e.StoredAt.UTC().Format(time.RFC3339) + "; its answer was served from the exact cache"
	ex.EstimatedSavingsUSD = e.Meta.CostUSD
	if fallback != nil {
		ex.Reason = "the provider failed; " + ex.Reason
		ex.Fallback = fallback
		c.providerFailure = fallback.cause
	} else {
		c.reject(ledger.RouteLive, "a fresh cached answer to the identical request exists")
	}
	ex.Rejected = withoutRoute(ex.Rejected, ledger.RouteExactCache)
	if d, ok := ex.Cache.(*cacheDetail); ok {
		d.Served = true
	}
	c.hit = &e // counted as a hit once the answer is sure to be served (finish)
	return e.Value
}

// storeExact keeps a live answer for the identical request.
func (g *Gateway) storeExact(c *call, body []byte) {
	if c.exact == nil || !c.exact.cacheable || c.run.Route != ledger.RouteLive || c.run.Status != ledger.StatusOK || body == nil {
		return
	}
	run := c.run
	g.cache.Store(c.id.TenantID, cache.ExactResponse, c.exact.key, body, cache.Meta{RunID: run.ID, CostUSD: run.CostUSD,
		LatencyMS: run.LatencyMS, PromptTokens: run.PromptTokens, CompletionTokens: run.CompletionTokens}, 0)
}
