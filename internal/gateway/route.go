package gateway

// The providers of a call: its plan, the provider rules' say on each
// candidate, and what the run records of the attempts the router made.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/redact"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// route plans the call's providers. A model no provider serves is answered
// 404 model_not_found, its run recorded.
func (g *Gateway) route(ctx context.Context, c *call) error {
	p, err := g.router.Plan(c.req.Model)
	if err != nil {
		if rerr := g.finish(ctx, c, httpstatus.Of(err), errs.Public(err)); rerr != nil {
			return rerr
		}
		return err
	}
	c.plan = p
	c.run.Provider = p.Candidates[0].Provider
	return nil
}

// governProviders puts each candidate provider before the provider rules.
// A deny where policies are enforced takes the candidate out of the plan;
// when it takes every one, the call is blocked, naming the rules.
func (g *Gateway) governProviders(ctx context.Context, c *call) error {
	if !g.governor.Has(policy.Provider) {
		return nil
	}
	cands := make([]policy.Candidate, len(c.plan.Candidates))
	for i, cand := range c.plan.Candidates {
		cands[i] = policy.Candidate{Name: cand.Provider, Plugin: cand.Plugin, Model: cand.Model}
	}
	verdicts, err := g.governor.JudgeProviders(ctx, c.id, c.run.ID, c.policyRequest(), cands)
	if err != nil {
		return g.abort(ctx, c, err)
	}
	forbidden := map[string]string{} // provider → why
	var denied []policy.RuleResult
	for _, v := range verdicts {
		if len(v.Verdict.Rules) == 0 {
			continue
		}
		lv := governance.LedgerVerdict(governance.Decision{Verdict: v.Verdict, Enforced: v.Enforced})
		c.chatVerdicts = append(c.chatVerdicts, ledger.Event{Type: "policy.evaluated", Payload: payload(verdictEvent{
			Target: string(policy.Provider), Provider: v.Provider, Decision: lv.Decision, Rules: lv.Rules, Enforced: lv.Enforced})})
		pol := &c.run.Explanation.Policy
		for _, r := range lv.Rules {
			if !slices.ContainsFunc(pol.Rules, func(have ledger.RuleResult) bool { return have.ID == r.ID }) {
				pol.Rules = append(pol.Rules, r)
			}
		}
		if !v.Enforced || !v.Verdict.Blocks() {
			continue
		}
		var ids []string
		for _, r := range v.Verdict.Rules {
			if r.Effect == policy.Deny {
				ids = append(ids, r.ID)
				if !slices.ContainsFunc(denied, func(have policy.RuleResult) bool { return have.ID == r.ID }) {
					denied = append(denied, r) // a rule that forbids several candidates is named once
				}
			}
		}
		reason := "forbidden by policy rule " + strings.Join(ids, ", ")
		c.plan.Forbid(v.Provider, reason)
		forbidden[v.Provider] = reason
	}
	for _, cand := range c.plan.Candidates {
		if forbidden[cand.Provider] == "" {
			return nil
		}
	}
	// Every candidate forbidden: the run names each, and why.
	var each []ledger.Alternative
	for _, cand := range c.plan.Candidates {
		if reason := forbidden[cand.Provider]; reason != "" {
			each = append(each, ledger.Alternative{Route: ledger.RouteLive, Provider: cand.Provider, Reason: reason})
			delete(forbidden, cand.Provider) // a provider listed twice, named once
		}
	}
	for _, sk := range c.plan.Skipped { // those that were no candidates (a model not served)
		each = append(each, ledger.Alternative{Route: ledger.RouteLive, Provider: sk.Provider, Reason: sk.Reason})
	}
	c.run.Explanation.Candidates = candidateList(c.plan.Candidates)
	verdict := policy.Verdict{Decision: policy.Deny, Rules: denied}
	c.run.Explanation.Policy = governance.LedgerVerdict(governance.Decision{Verdict: verdict, Enforced: true})
	return g.block(ctx, c, verdict, each...)
}

// providerFallback is a run's routeExplanation.fallback when a provider
// other than the first tried answered.
type providerFallback struct {
	Used     bool   `json:"used"`
	Tier     string `json:"tier"` // "provider"
	Provider string `json:"provider"`
	From     string `json:"from"`
	Reason   string `json:"reason"`
}

// explainProviders records on the run what the router did: who answered,
// every attempt, the candidates, those not tried and why, and a fallback
// from the first provider tried to another.
func (g *Gateway) explainProviders(c *call) {
	p := c.plan
	if p == nil || !c.calledProvider {
		return
	}
	run, ex := c.run, &c.run.Explanation
	switch {
	case p.Answered != "":
		run.Provider = p.Answered
	case len(p.Attempts) > 0:
		run.Provider = p.Attempts[len(p.Attempts)-1].Provider
	}
	ex.Provider = p.Answered
	// The plan's attempts, copied only when an error text changes.
	attempts, copied := p.Attempts, false
	for i, a := range p.Attempts {
		if a.Error == "" {
			continue
		}
		if e := g.attemptText(c, a.Error); e != a.Error {
			if !copied {
				attempts, copied = slices.Clone(p.Attempts), true
			}
			attempts[i].Error = e
		}
	}
	if len(attempts) > 0 {
		ex.Attempts = attemptList(attempts)
	}
	ex.Candidates = candidateList(p.Candidates)
	for _, s := range p.Skipped {
		ex.Rejected = append(ex.Rejected, ledger.Alternative{Route: ledger.RouteLive, Provider: s.Provider, Reason: s.Reason})
	}
	// The answer is the last attempt's; a route may list one provider
	// twice with two models (a downgrade), a fallback too.
	if at := p.Attempts; p.Answered != "" && len(at) > 1 && ex.Fallback == nil &&
		(at[0].Provider != p.Answered || at[0].Model != at[len(at)-1].Model) {
		ex.Fallback = &providerFallback{Used: true, Tier: "provider", Provider: p.Answered, From: at[0].Provider,
			Reason: g.attemptText(c, at[0].Error)}
	}
}

// attemptText is an attempt's error as the run stores it: without the
// keys, and masked when the tenant's stored text is.
func (g *Gateway) attemptText(c *call, s string) string {
	s = g.scrub(s)
	if c.masking {
		s = redact.String(s)
	}
	return s
}

// failedAttempts are the provider.failed events of a call's failed
// attempts: every one, but those that answered or that the client cut
// (the call's own outcome tells of them). A client that left during a
// backoff leaves a failed attempt last.
func (g *Gateway) failedAttempts(events []ledger.Event, c *call, at time.Time) []ledger.Event {
	if c.plan == nil {
		return events
	}
	for i, a := range c.plan.Attempts {
		if a.Outcome == providers.OutcomeOK || a.Outcome == providers.OutcomeCancelled {
			continue
		}
		e := providerEvent{Provider: a.Provider, Status: attemptStatus(a), UpstreamStatus: a.Status, Error: g.attemptText(c, a.Error),
			LatencyMS: a.LatencyMS, Attempt: i + 1}
		if i == len(c.plan.Attempts)-1 {
			e.Code = c.failureCode // the call's, when this attempt ended it failed
		}
		events = append(events, ledger.Event{Type: "provider.failed", At: at, Payload: payload(e)})
	}
	return events
}

// attemptStatus is the status a failed attempt would have been answered
// with, alone: a provider's refusal of the caller's request keeps its
// status, any other failure is 502.
func attemptStatus(a providers.Attempt) int {
	if a.Status == 0 {
		return http.StatusBadGateway
	}
	return httpstatus.Of(&errs.Error{Kind: httpstatus.KindOf(a.Status), Err: &pluginapi.ProviderError{Status: a.Status}})
}

// exhaustedError is the answer when no provider answered: 502
// providers_failed naming the attempts, or, when every attempt was rate
// limited, 429 with the shortest wait asked.
func (g *Gateway) exhaustedError(ex *providers.ExhaustedError) error {
	msg := g.scrub(ex.Error())
	var wait time.Duration
	shorter := func(ms int64) {
		if d := time.Duration(ms) * time.Millisecond; d > 0 && (wait == 0 || d < wait) {
			wait = d
		}
	}
	limited, asked := true, 0
	for _, a := range ex.Attempts {
		if a.Unsupported {
			continue // that provider cannot serve the request: it has no say on the wait
		}
		asked++
		if a.Outcome != providers.OutcomeRateLimited {
			limited = false
			break
		}
		shorter(a.RetryAfterMS)
	}
	if asked == 0 { // none that could serve it tried: rate limited if each was skipped as such
		limited = false
		for _, s := range ex.Skipped {
			if s.NotCandidate() {
				continue
			}
			if s.RetryAfterMS == 0 {
				limited = false
				break
			}
			limited = true
			shorter(s.RetryAfterMS)
		}
	}
	if limited {
		return &errs.Error{Kind: errs.RateLimited, Code: "rate_limited", Type: "rate_limit_error", Public: msg, Retry: wait}
	}
	return &errs.Error{Kind: errs.Upstream, Code: "providers_failed", Type: "upstream_error", Public: msg}
}
