package policy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routed is a chat request of the EU portal that may go to three
// providers, judged for the candidate c.
func routed(c Candidate) *Input {
	in := chatInput()
	in.Request.App = "eu-portal"
	in.Request.Providers = []string{"openai-us", "anthropic", "local"}
	in.Candidate = c
	return in
}

var (
	openaiUS  = Candidate{Name: "openai-us", Plugin: "openai", Model: "gpt-4o"}
	anthropic = Candidate{Name: "anthropic", Plugin: "anthropic", Model: "claude-sonnet-4"}
	local     = Candidate{Name: "local", Plugin: "openai", Model: "llama-3.1-8b"}
)

func TestProviderRulesSeeTheCandidateAndTheRequest(t *testing.T) {
	set := load(t, "policies:\n"+
		rule("eu-stays-off-us", "provider", `provider.name == "openai-us" && request.app == "eu-portal"`, "deny")+
		rule("secrets-stay-local", "provider", `request.subject == "vault" && provider.name != "local"`, "deny")+
		rule("local-is-fine", "provider", `provider.plugin == "openai" && provider.model.startsWith("llama")`, "allow")+
		rule("first-choice", "provider", `provider.name == request.providers[0] && tenant == "t_1" && agent.name == "bot"`, "allow"))
	require.True(t, set.Has(Provider))
	assert.False(t, set.Has(Chat), "provider rules are not chat rules")

	ctx := context.Background()
	v := set.Evaluate(ctx, Provider, routed(openaiUS))
	assert.Equal(t, Deny, v.Decision)
	assert.Equal(t, []string{"eu-stays-off-us", "first-choice"}, ids(v))
	assert.True(t, v.Denied())

	v = set.Evaluate(ctx, Provider, routed(anthropic))
	assert.Equal(t, Allow, v.Decision)
	assert.Empty(t, v.Rules)

	v = set.Evaluate(ctx, Provider, routed(local))
	assert.Equal(t, Allow, v.Decision)
	assert.Equal(t, []string{"local-is-fine"}, ids(v))

	vault := routed(anthropic)
	vault.Request.App, vault.Request.Subject = "other", "vault"
	assert.Equal(t, []string{"secrets-stay-local"}, ids(set.Evaluate(ctx, Provider, vault)))
	vault.Candidate = local
	assert.Equal(t, Allow, set.Evaluate(ctx, Provider, vault).Decision)

	assert.Equal(t, Allow, set.Evaluate(ctx, Chat, routed(openaiUS)).Decision, "chat requests do not run provider rules")
}

func TestProviderRulesOnlyAllowOrDeny(t *testing.T) {
	set := load(t, "policies:\n"+rule("a", "provider", "true", "allow")+rule("d", "provider", "false", "deny"))
	assert.Len(t, set.Rules(), 2)

	_, err := Load(folder(t, map[string]string{"rules.yaml": "policies:\n" + rule("ask-first", "provider", `provider.name == "openai-us"`, "require_approval")}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rules.yaml")
	assert.Contains(t, err.Error(), `rule "ask-first": effect require_approval is not allowed on target provider`)
	assert.Contains(t, err.Error(), "only allows or denies a candidate provider")
}

func TestAMisspeltProviderFieldIsRefusedAtLoad(t *testing.T) {
	_, err := Load(folder(t, map[string]string{"rules.yaml": "policies:\n" + rule("typo", "provider", `provider.nmae == "openai-us"`, "deny")}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rule "typo": when: ERROR`)
	assert.Contains(t, err.Error(), "undefined field 'nmae'")
}

func TestTheTargetErrorNamesEveryTarget(t *testing.T) {
	_, err := Load(folder(t, map[string]string{"rules.yaml": "policies:\n" + rule("tgt", "providers", "true", "deny")}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rule "tgt": target must be chat, tool, web or provider, not "providers"`)
}

func TestChatRulesSeeTheCandidateProviders(t *testing.T) {
	set := load(t, "policies:\n"+rule("no-anthropic-for-billing", "chat", `"anthropic" in request.providers && request.app == "billing"`, "deny")+
		rule("one-provider", "chat", `size(request.providers) == 1`, "allow"))
	in := chatInput()
	in.Request.Providers = []string{"openai", "anthropic"}
	v := set.Evaluate(context.Background(), Chat, in)
	assert.Equal(t, Deny, v.Decision)
	assert.Equal(t, []string{"no-anthropic-for-billing"}, ids(v))

	in.Request.Providers = []string{"openai"}
	v = set.Evaluate(context.Background(), Chat, in)
	assert.Equal(t, Allow, v.Decision)
	assert.Equal(t, []string{"one-provider"}, ids(v))
}

func TestTheInputSizeCountsProviders(t *testing.T) {
	in := chatInput()
	chat := in.size(Chat)
	in.Request.Providers = []string{"openai-us", "local"}
	assert.Equal(t, chat+1+len("openai-us")+1+len("local"), in.size(Chat), "each candidate name, and one per element")
	in.Candidate = openaiUS
	assert.Equal(t, in.size(Chat)+len("openai-us")+len("openai")+len("gpt-4o"), in.size(Provider),
		"a provider rule reads the request and the candidate")
	assert.Equal(t, in.size(Tool), (&Input{Tenant: in.Tenant, Mode: in.Mode, Agent: in.Agent}).size(Tool),
		"other targets do not count them")
}

// BenchmarkEvaluateProviderRule is one candidate judged by one provider
// rule, as a chat call pays it per candidate when provider rules exist.
func BenchmarkEvaluateProviderRule(b *testing.B) {
	set := load(b, "policies:\n"+rule("eu-stays-off-us", "provider", `provider.name == "openai-us" && request.app == "eu-portal"`, "deny"))
	in := routed(openaiUS)
	b.ReportAllocs()
	for b.Loop() {
		set.Evaluate(context.Background(), Provider, in)
	}
}
