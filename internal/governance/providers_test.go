package governance_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/audit/audittest"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
)

// providerRules keep the EU portal off the US provider, keep the vault's
// prompts on the local model, let restricted agents use only the local
// model, and allow the local model by name; a chat rule beside them.
const providerRules = `policies:
  - id: eu-stays-off-us
    target: provider
    when: provider.name == "openai-us" && request.app == "eu-portal"
    effect: deny
    reason: EU traffic stays in the EU
  - id: vault-stays-local
    target: provider
    when: request.subject == "vault" && provider.name != "local" && tenant == "t_a"
    effect: deny
    reason: the vault's prompts never leave the building
  - id: restricted-agents-local-only
    target: provider
    when: agent.trust == "restricted" && provider.plugin != "openai"
    effect: deny
    reason: restricted agents use our own models
  - id: local-is-fine
    target: provider
    when: provider.name == "local" && provider.model.startsWith("llama") && mode != ""
    effect: allow
    reason: our own model
  - id: big-prompts
    target: chat
    when: size(request.messages) > 100
    effect: deny
`

// candidates are a call's three providers, in the order they would be tried.
var candidates = []policy.Candidate{
	{Name: "openai-us", Plugin: "openai", Model: "gpt-4o"},
	{Name: "anthropic", Plugin: "anthropic", Model: "claude-sonnet-4"},
	{Name: "local", Plugin: "openai", Model: "llama-3.1-8b"},
}

func routedRequest(app, subject string) policy.Request {
	return policy.Request{Model: "gpt-4o", App: app, Subject: subject, Providers: []string{"openai-us", "anthropic", "local"},
		Messages: []policy.Message{{Role: "user", Content: "hello"}}}
}

func (w *world) judge(t *testing.T, id *auth.Identity, req policy.Request) []governance.ProviderVerdict {
	t.Helper()
	out, err := w.gov.JudgeProviders(context.Background(), id, "run_1", req, candidates)
	require.NoError(t, err)
	return out
}

// decisions are the verdicts' decisions and enforcement, by provider.
func decisions(vs []governance.ProviderVerdict) map[string]string {
	out := map[string]string{}
	for _, v := range vs {
		s := string(v.Verdict.Decision)
		if v.Enforced {
			s += " enforced"
		}
		out[v.Provider] = s
	}
	return out
}

func TestEachCandidateProviderIsJudged(t *testing.T) {
	w := newWorld(t, providerRules)
	vs := w.judge(t, key(), routedRequest("eu-portal", "cust-7"))
	require.Len(t, vs, 3, "a verdict per candidate")
	assert.Equal(t, []string{"openai-us", "anthropic", "local"}, []string{vs[0].Provider, vs[1].Provider, vs[2].Provider}, "in order")
	assert.Equal(t, map[string]string{"openai-us": "deny enforced", "anthropic": "allow", "local": "allow"}, decisions(vs))
	assert.Equal(t, []policy.RuleResult{{ID: "eu-stays-off-us", Effect: policy.Deny, Reason: "EU traffic stays in the EU"}}, vs[0].Verdict.Rules)
	assert.Empty(t, vs[1].Verdict.Rules)
	assert.Equal(t, []string{"local-is-fine"}, ruleIDs(vs[2].Verdict), "the mode is filled")

	// The tenant and the request's subject.
	vs = w.judge(t, key(), routedRequest("support", "vault"))
	assert.Equal(t, map[string]string{"openai-us": "deny enforced", "anthropic": "deny enforced", "local": "allow"}, decisions(vs))
	other := key()
	other.TenantID = tenantB
	vs = w.judge(t, other, routedRequest("support", "vault"))
	assert.Equal(t, map[string]string{"openai-us": "allow", "anthropic": "allow", "local": "allow"}, decisions(vs), "another tenant's call")

	// The agent, with its trust.
	w.agents.book[agentKey{tenantA, "bot"}] = ledger.Standing{Trust: ledger.TrustRestricted, Denies: 3}
	agent := key()
	agent.Agent = "bot"
	vs = w.judge(t, agent, routedRequest("support", "cust-7"))
	assert.Equal(t, map[string]string{"openai-us": "allow", "anthropic": "deny enforced", "local": "allow"}, decisions(vs))
}

func TestAProviderDenyIsOnlyRecordedInObserveMode(t *testing.T) {
	w := newWorld(t, providerRules)
	observe := key()
	observe.Mode = auth.Observe
	vs := w.judge(t, observe, routedRequest("eu-portal", "cust-7"))
	assert.Equal(t, map[string]string{"openai-us": "deny", "anthropic": "allow", "local": "allow"}, decisions(vs))

	events := w.audit.Events()
	require.Len(t, events, 1, "recorded")
	assert.Equal(t, false, events[0].Details["enforced"])
	assert.Equal(t, "observe", events[0].Details["mode"])
}

func TestProviderVerdictsAreAuditedOncePerRuleAndCall(t *testing.T) {
	w := newWorld(t, providerRules)
	id := key()
	id.Agent = "bot"
	w.agents.book[agentKey{tenantA, "bot"}] = ledger.Standing{Trust: ledger.TrustRestricted, Denies: 3, Decisions: 7}
	// vault-stays-local denies two candidates, restricted-agents-local-only
	// one of them; the local model is allowed.
	vs := w.judge(t, id, routedRequest("eu-portal", "vault"))
	assert.Equal(t, map[string]string{"openai-us": "deny enforced", "anthropic": "deny enforced", "local": "allow"}, decisions(vs))

	events := w.audit.Events()
	require.Len(t, events, 1, "one event for the call")
	e := events[0]
	assert.Equal(t, tenantA, e.TenantID)
	assert.Equal(t, "key:key_1", e.Actor)
	assert.Equal(t, "policy.provider", e.Action)
	assert.Equal(t, audit.Deny, e.Decision)
	assert.Equal(t, "run_1", e.Target)
	rules := e.Details["rules"].([]policy.RuleResult)
	assert.Equal(t, []string{"eu-stays-off-us", "vault-stays-local", "restricted-agents-local-only"}, ruleIDs(policy.Verdict{Rules: rules}),
		"each rule once, though vault-stays-local denied two candidates")
	assert.Equal(t, "provider", e.Details["target"])
	assert.Equal(t, true, e.Details["enforced"])
	assert.Equal(t, "optimize", e.Details["mode"])
	assert.Equal(t, "billing", e.Details["app"])
	assert.Equal(t, "bot", e.Details["agent"])
	assert.Equal(t, "cust-7", e.Details["subject"])
	providers, err := json.Marshal(e.Details["providers"])
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"provider": "openai-us", "decision": "deny", "enforced": true, "rules": ["eu-stays-off-us", "vault-stays-local"]},
		{"provider": "anthropic", "decision": "deny", "enforced": true, "rules": ["vault-stays-local", "restricted-agents-local-only"]}]`,
		string(providers), "the candidates judged otherwise than allow, and the rules of each")

	assert.Empty(t, w.approvals.all(), "no approval is opened")
	assert.Empty(t, w.notes.all(), "a skipped provider is no block")
	st, _, err := w.agents.AgentStanding(context.Background(), tenantA, "bot")
	require.NoError(t, err)
	assert.Equal(t, ledger.Standing{Trust: ledger.TrustRestricted, Denies: 3, Decisions: 7}, st)
	d, err := w.gov.Decide(context.Background(), governance.Call{ID: id, Target: policy.Chat}, &policy.Input{})
	require.NoError(t, err)
	require.NotNil(t, d.Standing)
	assert.EqualValues(t, 7+1, d.Standing.Decisions, "judging providers did not move the agent's standing")

	// A call whose candidates are all allowed leaves no record.
	w.judge(t, key(), routedRequest("support", "cust-7"))
	assert.Len(t, w.audit.Events(), 1, "nothing more for an allowed call")
}

func TestAProviderRuleThatFailsForbidsItsCandidate(t *testing.T) {
	w := newWorld(t, `policies:
  - id: third-message
    target: provider
    when: provider.name == "anthropic" || request.messages[2].content == "x"
    effect: deny
  - id: broken-allow
    target: provider
    when: request.messages[2].content == "x"
    effect: allow
`)
	vs := w.judge(t, key(), routedRequest("support", "cust-7"))
	assert.Equal(t, map[string]string{"openai-us": "deny enforced", "anthropic": "deny enforced", "local": "deny enforced"}, decisions(vs))
	assert.True(t, vs[0].Verdict.Failed(), "the rule could not read a third message")
	assert.False(t, vs[1].Verdict.Failed(), "it matched the second outright")
	events := w.audit.Events()
	require.Len(t, events, 1)
	rules := events[0].Details["rules"].([]policy.RuleResult)
	require.Len(t, rules, 1)
	assert.NotEmpty(t, rules[0].Error, "the first candidate's result of the rule")
}

func TestNoProviderRulesNoVerdicts(t *testing.T) {
	w := newWorld(t, decideRules)
	vs, err := w.gov.JudgeProviders(context.Background(), key(), "run_1", routedRequest("eu-portal", "vault"), candidates)
	require.NoError(t, err)
	assert.Nil(t, vs)
	assert.Empty(t, w.audit.Events())
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = w.gov.JudgeProviders(context.Background(), key(), "run_1", policy.Request{}, candidates)
	})
	assert.Zero(t, allocs, "no provider rules cost nothing")
}

// BenchmarkJudgeProvidersNoRules is what judging providers costs a chat
// call when no provider rule is in force.
func BenchmarkJudgeProvidersNoRules(b *testing.B) {
	g := governance.New(governance.Options{Policies: engine(b, decideRules)})
	id, req, ctx := key(), routedRequest("eu-portal", "vault"), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if vs, _ := g.JudgeProviders(ctx, id, "run_1", req, candidates); vs != nil {
			b.Fatal("verdicts without provider rules")
		}
	}
}

// BenchmarkJudgeProviders is three candidates judged by the provider rules
// above.
func BenchmarkJudgeProviders(b *testing.B) {
	g := governance.New(governance.Options{Policies: engine(b, providerRules), Audit: audit.NewLog(&audittest.Memory{}, nil, nil)})
	id, req, ctx := key(), routedRequest("support", "cust-7"), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = g.JudgeProviders(ctx, id, "run_1", req, candidates)
	}
}

func ruleIDs(v policy.Verdict) []string {
	out := []string{}
	for _, r := range v.Rules {
		out = append(out, r.ID)
	}
	return out
}
