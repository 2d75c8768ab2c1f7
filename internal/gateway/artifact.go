package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/redact"
	"github.com/svc-gateway/svc/internal/tracing"
)

// Learner is the learning loop as the gateway sees it: the serving index
// (artifacts compiled in memory, looked up by shape), and where shadow
// evidence goes.
type Learner interface {
	Index() *learning.Index
	// RecordShadow records an artifact's answer beside the live answer; it
	// never blocks on storage.
	RecordShadow(tenantID, artifactID, runID, outcome, reason, artifactAnswer, liveAnswer string)
	// CanaryShare is the share of matching requests served under
	// canary_enabled.
	CanaryShare() float64
}

// Canary tells whether a tenant has canary_enabled.
type Canary interface {
	Canary(ctx context.Context, tenantID string) bool
}

// artifactLookup is what the serving index had for a call.
type artifactLookup struct {
	detail *learning.ArtifactDetailOfRun
	// serve is the promoted artifact answering the call, with its answer.
	serve  *learning.Served
	answer string
	// shadow is the artifact whose answer is compared with the live one.
	shadow         *learning.Served
	shadowAnswer   string
	shadowAnswered bool
}

// lookupArtifact finds the artifact of the call's pattern. A promoted one
// that answers serves an optimize call, unless canary_enabled sends the
// call live (all but CanaryShare of them); in observe mode its answer is
// ghost savings. A call that goes live while an artifact exists (shadow
// state, canary, observe, or an abstention) has the artifact's answer
// computed beside it, for shadow evidence.
//
// Its span says whether an artifact was found, for a tenant without any
// too (nothing to look up then).
func (g *Gateway) lookupArtifact(ctx context.Context, c *call) {
	if g.learner == nil {
		return
	}
	ctx, span := tracing.Start(ctx, "artifact.lookup", trace.SpanKindInternal)
	if ix := g.learner.Index(); !ix.Empty(c.id.TenantID) {
		g.lookupArtifactEntry(ctx, c, ix)
	}
	if span.IsRecording() {
		span.SetAttributes(attrArtifactFound.Bool(c.art != nil))
		span.End()
	}
}

func (g *Gateway) lookupArtifactEntry(ctx context.Context, c *call, ix *learning.Index) {
	if c.req.Unlearnable != "" {
		c.reject(ledger.RouteArtifact, c.req.Unlearnable)
		return
	}
	msgs := make([]shape.Message, len(c.req.Messages))
	for i, m := range c.req.Messages {
		msgs[i] = shape.Message{Role: m.Role, Content: m.Content}
	}
	sh, err := shape.Of(c.id.App, c.req.Model, msgs, c.req.ResponseFormat, c.req.Tools)
	if err != nil {
		c.reject(ledger.RouteArtifact, "the request has no user message, so no pattern")
		return
	}
	e, ok := ix.Match(c.id.TenantID, sh.Key)
	if !ok {
		return
	}
	lk := &artifactLookup{}
	c.art = lk
	if p := e.Promoted; p != nil {
		canary := c.id.Mode == auth.Optimize && g.canary != nil && g.canary.Canary(ctx, c.id.TenantID)
		d := &learning.ArtifactDetailOfRun{ID: p.ArtifactID, PatternID: p.PatternID, Type: p.Type, State: p.State}
		lk.detail = d
		ans, answered := p.Answerer.Answer(sh)
		switch {
		case !answered:
			d.Abstained, d.Reason = true, "the promoted artifact abstained: its answer was below its confidence margin"
			lk.shadow, lk.shadowAnswered = p, false
		case c.id.Mode != auth.Optimize:
			d.Reason = "observe mode: the promoted artifact would have answered; observe keys always get the live answer"
			d.SavedUSD = p.AvgCostUSD
			if c.run.GhostSavedUSD == 0 {
				c.run.GhostSavedUSD = p.AvgCostUSD
				c.run.Explanation.EstimatedSavingsUSD = p.AvgCostUSD
			}
			lk.shadow, lk.shadowAnswer, lk.shadowAnswered = p, ans, true
		case canary && rand.Float64() >= g.learner.CanaryShare():
			d.Canary = true
			d.Reason = fmt.Sprintf("canary: the artifact serves %.0f%% of its pattern's calls; this one went live for evidence",
				100*g.learner.CanaryShare())
			lk.shadow, lk.shadowAnswer, lk.shadowAnswered = p, ans, true
		default:
			d.Canary = canary
			lk.serve, lk.answer = p, ans
			return
		}
		c.reject(ledger.RouteArtifact, d.Reason)
	}
	if lk.shadow == nil && e.Shadow != nil {
		s := e.Shadow
		lk.shadow = s
		lk.shadowAnswer, lk.shadowAnswered = s.Answerer.Answer(sh)
		if lk.detail == nil {
			lk.detail = &learning.ArtifactDetailOfRun{ID: s.ArtifactID, PatternID: s.PatternID, Type: s.Type, State: s.State,
				Reason: "the artifact is in shadow: its answer is compared with the live one and does not serve"}
			c.reject(ledger.RouteArtifact, lk.detail.Reason)
		}
	}
	if lk.detail != nil {
		c.run.Explanation.Artifact = lk.detail
	}
}

// artifactServable reports whether a promoted artifact answers the call.
func (c *call) artifactServable() bool { return c.art != nil && c.art.serve != nil }

// serveArtifact turns the call into one answered by the promoted artifact:
// the answer in the provider's chat.completion shape, at no cost, saving
// the pattern's average live cost and latency.
func (g *Gateway) serveArtifact(c *call) []byte {
	p := c.art.serve
	run := c.run
	body := artifactCompletion(run.ID, c.req.Model, run.CreatedAt.Unix(), c.art.answer)
	run.Route = ledger.RouteArtifact
	run.Response = body
	run.CostUSD, run.UsageUnknown, run.PriceUnknown = 0, false, false
	run.SavedUSD = p.AvgCostUSD
	d := c.art.detail
	d.Served, d.SavedUSD = true, p.AvgCostUSD
	d.Reason = fmt.Sprintf("the promoted %s artifact %s of pattern %s answered", p.Type, p.ArtifactID, p.PatternID)
	ex := &run.Explanation
	ex.Route, ex.Reason = ledger.RouteArtifact, d.Reason
	ex.Artifact = d
	ex.EstimatedSavingsUSD = p.AvgCostUSD
	c.reject(ledger.RouteLive, "a promoted artifact answered the request")
	ex.Rejected = withoutRoute(ex.Rejected, ledger.RouteArtifact)
	return body
}

// shadowEvaluate compares the artifact's answer with the live body and
// hands the outcome to the learning loop.
func (g *Gateway) shadowEvaluate(c *call, body []byte) {
	if c.art == nil || c.art.shadow == nil || body == nil {
		return
	}
	lk := c.art
	reply := shape.ReadReply(body)
	if !reply.HasText && !reply.ToolCall {
		return
	}
	outcome, reason := synth.JudgeShadow(lk.shadowAnswer, lk.shadowAnswered, reply)
	lk.detail.Shadow = outcome
	answer, live := lk.shadowAnswer, reply.Text
	if g.redaction != nil && g.redaction.Redaction(context.Background(), c.id.TenantID) {
		// Evidence rows keep the texts; under redaction they keep them
		// masked, as the run does.
		answer, live = redact.String(answer), redact.String(live)
	}
	g.learner.RecordShadow(c.id.TenantID, lk.shadow.ArtifactID, c.run.ID, outcome, reason, answer, live)
}

// artifactCompletion is an artifact's answer as a chat.completion body.
func artifactCompletion(runID, model string, created int64, content string) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	b, _ := json.Marshal(struct {
		ID      string           `json:"id"`
		Object  string           `json:"object"`
		Created int64            `json:"created"`
		Model   string           `json:"model"`
		Choices []choice         `json:"choices"`
		Usage   map[string]int64 `json:"usage"`
	}{"chatcmpl-" + runID, "chat.completion", created, model,
		[]choice{{Message: message{Role: "assistant", Content: content}, FinishReason: "stop"}},
		map[string]int64{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})
	return b
}

type artifactServedEvent struct {
	ArtifactID string  `json:"artifactId"`
	PatternID  string  `json:"patternId"`
	Type       string  `json:"type"`
	SavedUSD   float64 `json:"savedUsd"`
	SavedMS    float64 `json:"savedMs"`
}
