package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/ledger"
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
// only a deterministic request (temperature 0 or unset, one choice) has one
// answer worth repeating.
func cacheable(req *Request) (bool, string) {
	switch {
	case req.Temperature != nil && *req.Temperature != 0:
		return false, "not cacheable: temperature is not 0"
	case req.N > 1:
		return false, "not cacheable: more than one choice asked for"
	}
	return true, ""
}

// lookupExact looks the call up in the exact cache and notes on the run what
// it found; in observe mode a fresh entry becomes ghost savings.
func (g *Gateway) lookupExact(c *call) {
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

// reject sets why route was not taken.
func (c *call) reject(route, reason string) {
	ex := &c.run.Explanation
	for i := range ex.Rejected {
		if ex.Rejected[i].Route == route {
			ex.Rejected[i].Reason = reason
			return
		}
	}
	ex.Rejected = append(ex.Rejected, ledger.Alternative{Route: route, Reason: reason})
}

func withoutRoute(alts []ledger.Alternative, route string) []ledger.Alternative {
	out := alts[:0]
	for _, a := range alts {
		if a.Route != route {
			out = append(out, a)
		}
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	u := t.UTC()
	return &u
}

// completionChunks replays a chat.completion body as the chunks of a
// stream: the role and content of each choice, then its finish reason, and
// the usage when the client asked for it.
func completionChunks(body []byte, includeUsage bool) []json.RawMessage {
	var c struct {
		ID                string          `json:"id"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
		Usage             json.RawMessage `json:"usage"`
		Choices           []struct {
			Index        int             `json:"index"`
			FinishReason *string         `json:"finish_reason"`
			Message      json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &c) != nil {
		return nil
	}
	type choice struct {
		Index        int             `json:"index"`
		Delta        json.RawMessage `json:"delta"`
		FinishReason *string         `json:"finish_reason"`
	}
	chunk := func(choices []choice, usage json.RawMessage) []byte {
		b, _ := json.Marshal(envelope[choice]{c.ID, "chat.completion.chunk", c.Created, c.Model, c.SystemFingerprint, choices, usage})
		return b
	}
	var out []json.RawMessage
	for _, ch := range c.Choices {
		delta := indexToolCalls(ch.Message)
		if len(delta) == 0 {
			delta = json.RawMessage(`{}`)
		}
		out = append(out, chunk([]choice{{Index: ch.Index, Delta: delta}}, nil))
		out = append(out, chunk([]choice{{Index: ch.Index, Delta: json.RawMessage(`{}`), FinishReason: ch.FinishReason}}, nil))
	}
	if includeUsage && !emptyJSON(c.Usage) {
		out = append(out, chunk([]choice{}, c.Usage))
	}
	return out
}

// envelope is what surrounds the choices of a chat completion or of one
// of its stream's chunks.
type envelope[C any] struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
	Choices           []C             `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

// emptyJSON reports whether raw is absent or an empty value: null, "",
// [] or {}.
func emptyJSON(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", `""`, "[]", "{}":
		return true
	}
	return false
}

// hasOtherMembers reports whether a delta has a member with a value besides
// the role, content, refusal and tool calls assembleCompletion puts back.
func hasOtherMembers(delta json.RawMessage) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(delta, &members) != nil {
		return true
	}
	for name, v := range members {
		switch name {
		case "role", "content", "refusal", "tool_calls":
		default:
			if !emptyJSON(v) {
				return true
			}
		}
	}
	return false
}

// indexToolCalls gives each tool call of a message the index a stream's
// tool-call delta carries: clients put a streamed call together by it, and
// without it merge parallel calls into one.
func indexToolCalls(message json.RawMessage) json.RawMessage {
	if !bytes.Contains(message, []byte(`"tool_calls"`)) {
		return message // most answers: nothing to decode
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(message, &m) != nil || len(m["tool_calls"]) == 0 {
		return message
	}
	var calls []map[string]json.RawMessage
	if json.Unmarshal(m["tool_calls"], &calls) != nil {
		return message
	}
	for i, call := range calls {
		call["index"], _ = json.Marshal(i)
	}
	m["tool_calls"], _ = json.Marshal(calls)
	b, err := json.Marshal(m)
	if err != nil {
		return message
	}
	return b
}

// assembly says what assembleCompletion may leave out of a streamed answer.
type assembly int

const (
	// wholeAnswer leaves nothing out: what the cache stores must be the
	// answer itself.
	wholeAnswer assembly = iota
	// answerText keeps the text and drops what it cannot put back (log
	// probabilities, members it does not know): enough to mask or compare.
	answerText
)

// assembleCompletion puts a streamed answer back together as the
// chat.completion body the same request answers without streaming. Answers
// with tool calls are not assembled; for wholeAnswer, neither are answers
// with log probabilities or a delta member it does not know that has a
// value (an empty one, such as "function_call": null, is ignored).
func assembleCompletion(chunks []json.RawMessage, usage json.RawMessage, mode assembly) ([]byte, bool) {
	type choice struct {
		content, refusal       strings.Builder
		hasContent, hasRefusal bool
		role                   string
		finish                 *string
	}
	var (
		id, model   string
		fingerprint *string
		created     int64
		choices     []*choice
	)
	for _, raw := range chunks {
		var ch struct {
			ID                string  `json:"id"`
			Created           int64   `json:"created"`
			Model             string  `json:"model"`
			SystemFingerprint *string `json:"system_fingerprint"`
			Choices           []struct {
				Index        int             `json:"index"`
				Delta        json.RawMessage `json:"delta"`
				Logprobs     json.RawMessage `json:"logprobs"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal(raw, &ch) != nil {
			return nil, false
		}
		id, model, created = ch.ID, ch.Model, ch.Created
		if ch.SystemFingerprint != nil {
			fingerprint = ch.SystemFingerprint
		}
		for _, c := range ch.Choices {
			if c.Index < 0 || c.Index > 128 || mode == wholeAnswer && !emptyJSON(c.Logprobs) {
				return nil, false
			}
			var delta struct {
				Role      string          `json:"role"`
				Content   *string         `json:"content"`
				Refusal   *string         `json:"refusal"`
				ToolCalls json.RawMessage `json:"tool_calls"`
			}
			if len(c.Delta) > 0 && json.Unmarshal(c.Delta, &delta) != nil {
				return nil, false
			}
			if !emptyJSON(delta.ToolCalls) || mode == wholeAnswer && hasOtherMembers(c.Delta) {
				return nil, false
			}
			for len(choices) <= c.Index {
				choices = append(choices, &choice{})
			}
			p := choices[c.Index]
			if delta.Role != "" {
				p.role = delta.Role
			}
			if delta.Content != nil {
				p.content.WriteString(*delta.Content)
				p.hasContent = true
			}
			if delta.Refusal != nil {
				p.refusal.WriteString(*delta.Refusal)
				p.hasRefusal = true
			}
			if c.FinishReason != nil {
				p.finish = c.FinishReason
			}
		}
	}
	if len(choices) == 0 {
		return nil, false
	}
	type message struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
		Refusal *string `json:"refusal"`
	}
	type outChoice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason *string `json:"finish_reason"`
	}
	out := envelope[outChoice]{ID: id, Object: "chat.completion", Created: created, Model: model, SystemFingerprint: fingerprint, Usage: usage}
	for i, p := range choices {
		m := message{Role: p.role}
		if m.Role == "" {
			m.Role = "assistant"
		}
		if content := p.content.String(); p.hasContent || !p.hasRefusal {
			m.Content = &content // a refusal alone leaves content null, as OpenAI's does
		}
		if p.hasRefusal {
			refusal := p.refusal.String()
			m.Refusal = &refusal
		}
		out.Choices = append(out.Choices, outChoice{Index: i, Message: m, FinishReason: p.finish})
	}
	b, err := json.Marshal(out)
	return b, err == nil
}
