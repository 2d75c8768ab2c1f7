package governance

import (
	"context"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/policy"
)

// ProviderVerdict is the provider rules' verdict on one candidate provider
// of a chat call.
type ProviderVerdict struct {
	Provider string
	Verdict  policy.Verdict
	// Enforced says the candidate is taken out of the call's route: a deny
	// where policies are enforced. In observe mode a deny is recorded with
	// Enforced false.
	Enforced bool
}

// JudgeProviders puts each candidate provider of a chat call before the
// provider rules (target provider). It returns a verdict for each
// candidate, in order, or nil when no provider rule is in force.
//
// A provider rule only allows or denies (require_approval is refused at
// load), so nothing is held and no approval is opened; a deny rule that
// cannot be evaluated denies its candidate. The call's verdicts that are
// not a plain allow are audited together, as one policy.provider event
// listing each rule once, so that a rule counts one match per call however
// many candidates it forbade. Skipping a provider neither blocks the call
// (no policy.blocked webhook: the gateway tells when no candidate is left)
// nor says anything of the agent's conduct, so its standing does not move.
func (g *Governor) JudgeProviders(ctx context.Context, id *auth.Identity, runID string, req policy.Request, candidates []policy.Candidate) ([]ProviderVerdict, error) {
	set := g.policies.Set()
	if !set.Has(policy.Provider) {
		return nil, nil
	}
	in := &policy.Input{Tenant: id.TenantID, Mode: string(id.Mode), Request: req, Agent: g.agent(ctx, id)}
	out := make([]ProviderVerdict, len(candidates))
	for i, c := range candidates {
		in.Candidate = c
		v := set.Evaluate(ctx, policy.Provider, in)
		g.count(policy.Provider, v)
		out[i] = ProviderVerdict{Provider: c.Name, Verdict: v,
			Enforced: v.Decision == policy.Deny && id.Mode == auth.Optimize}
	}
	g.recordProviders(ctx, id, runID, out)
	return out, nil
}

// judgedProvider is a candidate in a policy.provider audit event.
type judgedProvider struct {
	Provider string        `json:"provider"`
	Decision policy.Effect `json:"decision"`
	Enforced bool          `json:"enforced"`
	Rules    []string      `json:"rules"` // the ids of the rules that matched it
}

// recordProviders audits a call's provider verdicts that are not a plain
// allow as one event shaped like Decide's: its rules are those of the
// verdicts, each once (the first candidate's result of it), its decision
// the strongest, enforced when any candidate was taken out; providers
// lists the candidates judged so.
func (g *Governor) recordProviders(ctx context.Context, id *auth.Identity, runID string, verdicts []ProviderVerdict) {
	var (
		rules    []policy.RuleResult
		judged   []judgedProvider
		decision = policy.Allow
		enforced bool
	)
	for _, pv := range verdicts {
		v := pv.Verdict
		if v.Decision == policy.Allow {
			continue
		}
		jp := judgedProvider{Provider: pv.Provider, Decision: v.Decision, Enforced: pv.Enforced, Rules: make([]string, 0, len(v.Rules))}
		for _, r := range v.Rules {
			jp.Rules = append(jp.Rules, r.ID)
			if !listed(rules, r.ID) {
				rules = append(rules, r)
			}
		}
		judged = append(judged, jp)
		if v.Decision.Strength() > decision.Strength() {
			decision = v.Decision
		}
		enforced = enforced || pv.Enforced
	}
	if len(judged) == 0 {
		return
	}
	details := verdictDetails(id, policy.Provider, rules, enforced)
	details["providers"] = judged
	g.audit.Record(ctx, audit.Event{TenantID: id.TenantID, Actor: id.Actor(), Action: "policy." + string(policy.Provider),
		Decision: string(decision), Target: runID, Details: details})
}

// listed reports whether rules holds the rule id.
func listed(rules []policy.RuleResult, id string) bool {
	for _, r := range rules {
		if r.ID == id {
			return true
		}
	}
	return false
}
