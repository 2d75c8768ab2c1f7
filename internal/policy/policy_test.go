package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/fakeclock"
)

// folder writes files into a new folder and returns it.
func folder(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	return dir
}

func load(t testing.TB, body string) *Set {
	t.Helper()
	set, err := Load(folder(t, map[string]string{"p.yaml": body}))
	require.NoError(t, err)
	return set
}

func rule(id, target, when, effect string) string {
	return fmt.Sprintf("  - id: %s\n    target: %s\n    when: %q\n    effect: %s\n    reason: because %s\n", id, target, when, effect, id)
}

func chatInput() *Input {
	return &Input{Tenant: "t_1", Mode: "optimize",
		Request: Request{Model: "gpt-4o", App: "billing", Agent: "bot", Messages: []Message{
			{Role: "system", Content: "You are a bank assistant."},
			{Role: "user", Content: "Please send a wire transfer of $5,000."}}, Tools: []string{"refund", "lookup"}},
		Agent: Agent{Name: "bot", Trust: "unverified"}}
}

func ids(v Verdict) []string {
	var out []string
	for _, r := range v.Rules {
		out = append(out, r.ID)
	}
	return out
}

func TestEffectsCombine(t *testing.T) {
	const (
		yes = `request.model == "gpt-4o"`
		no  = `request.model == "other"`
	)
	cases := []struct {
		name     string
		rules    []string
		decision Effect
		matched  []string
	}{
		{"nothing matches", []string{rule("a", "chat", no, "deny")}, Allow, nil},
		{"allow only", []string{rule("a", "chat", yes, "allow")}, Allow, []string{"a"}},
		{"deny beats allow", []string{rule("a", "chat", yes, "allow"), rule("d", "chat", yes, "deny")}, Deny, []string{"a", "d"}},
		{"approval beats allow", []string{rule("a", "chat", yes, "allow"), rule("r", "chat", yes, "require_approval")}, RequireApproval, []string{"a", "r"}},
		{"deny beats approval", []string{rule("d", "chat", yes, "deny"), rule("r", "chat", yes, "require_approval")}, Deny, []string{"d", "r"}},
		{"unmatched deny does not count", []string{rule("d", "chat", no, "deny"), rule("r", "chat", yes, "require_approval")}, RequireApproval, []string{"r"}},
		{"other targets are not evaluated", []string{rule("d", "tool", "true", "deny"), rule("w", "web", "true", "deny")}, Allow, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := load(t, "policies:\n"+strings.Join(c.rules, ""))
			v := set.Evaluate(context.Background(), Chat, chatInput())
			assert.Equal(t, c.decision, v.Decision)
			assert.Equal(t, c.matched, ids(v))
			assert.NotNil(t, v.Rules, "rules is a list, never null")
			assert.Equal(t, c.decision != Allow, v.Blocks())
		})
	}
}

func TestVariables(t *testing.T) {
	cases := []struct {
		target Target
		when   string
		in     Input
	}{
		{Chat, `request.messages.exists(m, m.role == "user" && m.content.lowerAscii().contains("wire transfer"))`, *chatInput()},
		{Chat, `"refund" in request.tools && request.app == "billing" && tenant == "t_1" && mode == "optimize"`, *chatInput()},
		{Chat, `agent.trust == "unverified" && agent.name == request.agent`, *chatInput()},
		{Tool, `tool.name == "refund" && tool.args.amount > 100 && tool.level >= 3`,
			Input{Tool: ToolCall{Name: "refund", Args: NewArgs(map[string]any{"amount": 250.0}), Level: 3}}},
		{Tool, `has(tool.args.account) && tool.args.account.startsWith("DE")`,
			Input{Tool: ToolCall{Name: "pay", Args: NewArgs(map[string]any{"account": "DE89"})}}},
		{Web, `web.action == "submit" && web.host.endsWith("bank.example") && web.fields["iban"] != "" && web.level == 3`,
			Input{Web: WebAction{Action: "submit", URL: "https://www.bank.example/pay", Host: "www.bank.example", Level: 3, Fields: map[string]string{"iban": "DE89"}}}},
	}
	for _, c := range cases {
		t.Run(c.when, func(t *testing.T) {
			set := load(t, "policies:\n"+rule("r", string(c.target), c.when, "deny"))
			assert.Equal(t, Deny, set.Evaluate(context.Background(), c.target, &c.in).Decision)
			// And the same rule does not match an empty input.
			assert.Equal(t, Allow, set.Evaluate(context.Background(), c.target, &Input{}).Decision)
		})
	}
}

func TestBadFilesAreRefusedNamingFileAndRule(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"unknown variable":   {"policies:\n" + rule("typo", "chat", `reqest.model == "x"`, "deny"), `rule "typo": when: ERROR`},
		"unknown field":      {"policies:\n" + rule("field", "chat", `request.modle == "x"`, "deny"), `rule "field": when: ERROR`},
		"type mismatch":      {"policies:\n" + rule("types", "chat", `request.model == 1`, "deny"), `rule "types": when: ERROR`},
		"not a condition":    {"policies:\n" + rule("str", "chat", `request.model`, "deny"), `rule "str": when must be a condition (bool), not string`},
		"bad effect":         {"policies:\n" + rule("eff", "chat", `true`, "block"), `rule "eff": effect must be`},
		"bad target":         {"policies:\n" + rule("tgt", "email", `true`, "deny"), `rule "tgt": target must be`},
		"no id":              {"policies:\n  - target: chat\n    when: \"true\"\n    effect: deny\n", `rule "#1": id is required`},
		"no when":            {"policies:\n  - id: empty\n    target: chat\n    effect: deny\n", `rule "empty": when is required`},
		"unknown rule field": {"policies:\n  - id: x\n    target: chat\n    when: \"true\"\n    effect: deny\n    severity: high\n", `line 6: unknown field "severity"`},
		"not yaml":           {"policies: [", "not a policy file"},
		"two documents":      {"policies:\n" + rule("first", "chat", "true", "allow") + "---\npolicies:\n" + rule("hidden", "chat", "true", "deny"), "one document"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(folder(t, map[string]string{"rules.yaml": c.body}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "rules.yaml")
			assert.Contains(t, err.Error(), c.want)
		})
	}
	t.Run("duplicate id across files", func(t *testing.T) {
		_, err := Load(folder(t, map[string]string{
			"a.yaml": "policies:\n" + rule("same", "chat", "true", "deny"),
			"b.json": `{"policies": [{"id": "same", "target": "tool", "when": "true", "effect": "allow"}]}`,
		}))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `b.json: rule "same": id already used in a.yaml`)
	})
	t.Run("missing folder", func(t *testing.T) {
		_, err := Load(filepath.Join(t.TempDir(), "nope"))
		assert.Error(t, err)
	})
}

func TestFilesLoadInNameOrderAndOthersAreIgnored(t *testing.T) {
	dir := folder(t, map[string]string{
		"20-tools.yml": "policies:\n" + rule("second", "tool", "true", "allow"),
		"10-chat.json": `{"policies": [{"id": "first", "target": "chat", "when": "true", "effect": "deny", "reason": "r"}]}`,
		"notes.txt":    "not a policy",
	})
	set, err := Load(dir)
	require.NoError(t, err)
	rules := set.Rules()
	require.Len(t, rules, 2)
	assert.Equal(t, "first", rules[0].ID)
	assert.Equal(t, "10-chat.json", rules[0].Source)
	assert.Equal(t, "second", rules[1].ID)
	assert.True(t, set.Has(Chat))
	assert.False(t, set.Has(Web))

	empty, err := Load("")
	require.NoError(t, err)
	assert.Empty(t, empty.Rules())
	assert.Equal(t, Allow, empty.Evaluate(context.Background(), Chat, chatInput()).Decision)
}

func TestReloadKeepsTheLastGoodSet(t *testing.T) {
	dir := folder(t, map[string]string{"p.yaml": "policies:\n" + rule("old", "chat", "true", "deny")})
	clock := fakeclock.New(time.Unix(1_800_000_000, 0))
	e, err := newEngine(dir, clock.Now)
	require.NoError(t, err)
	assert.Equal(t, Status{At: clock.Now().UTC(), OK: true, Rules: 1}, e.Status(), "the first load")

	clock.Advance(time.Minute)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("policies:\n"+rule("broken", "chat", "nonsense(", "deny")), 0o600))
	st, err := e.Reload()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p.yaml")
	assert.Contains(t, err.Error(), `rule "broken"`)
	assert.NotContains(t, err.Error(), dir, "the error does not say where the folder is")
	assert.Equal(t, Status{At: clock.Now().UTC(), OK: false, Error: err.Error(), Rules: 1}, st)
	assert.Equal(t, st, e.Status())
	assert.Equal(t, []string{"old"}, ids(e.Set().Evaluate(context.Background(), Chat, chatInput())), "the last good rules stay in force")

	clock.Advance(time.Minute)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("policies:\n"+rule("new", "chat", "true", "require_approval")+rule("new2", "tool", "true", "deny")), 0o600))
	st, err = e.Reload()
	require.NoError(t, err)
	assert.Equal(t, Status{At: clock.Now().UTC(), OK: true, Rules: 2}, st)
	assert.Equal(t, st, e.Status())
	assert.Equal(t, []string{"new"}, ids(e.Set().Evaluate(context.Background(), Chat, chatInput())))
}

func TestARunawayConditionIsStoppedAndFailsClosed(t *testing.T) {
	// Each level multiplies the work by 100: far past the cost limit.
	runaway := `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100]`
	when := runaway + `.all(a, ` + runaway + `.all(b, ` + runaway + `.all(c, ` + runaway + `.all(d, a + b + c + d > 0))))`
	set := load(t, "policies:\n"+rule("heavy-deny", "chat", when, "deny")+rule("heavy-allow", "chat", when, "allow"))
	start := time.Now()
	v := set.Evaluate(context.Background(), Chat, chatInput())
	assert.Less(t, time.Since(start), 5*time.Second, "the cost limit stops the evaluation")
	assert.Equal(t, Deny, v.Decision, "a deny rule that cannot finish counts as matched")
	require.Len(t, v.Rules, 1, "an allow rule that cannot finish allows nothing")
	assert.Equal(t, "heavy-deny", v.Rules[0].ID)
	assert.Contains(t, v.Rules[0].Error, "cost limit")
	assert.Equal(t, 1, v.AllowErrors, "the allow rule's failure is counted, not listed")
}

func TestEvaluationCompilesNothing(t *testing.T) {
	set := load(t, typicalRules)
	in := chatInput()
	// Compiling one of these conditions takes hundreds of allocations;
	// evaluating all twenty takes under two hundred.
	allocs := testing.AllocsPerRun(50, func() { set.Evaluate(context.Background(), Chat, in) })
	assert.Less(t, allocs, 300.0)
	env, err := newEnv()
	require.NoError(t, err)
	impls, err := bindings(env)
	require.NoError(t, err)
	compileAllocs := testing.AllocsPerRun(5, func() {
		_, _ = compile(env, impls, "x", fileRule{ID: "r", Target: "chat", Effect: "deny", When: `request.messages.exists(m, m.content.contains("x"))`})
	})
	assert.Greater(t, compileAllocs, 300.0, "the bound above would catch a compilation")
}

func TestExamplePoliciesLoadAndDecide(t *testing.T) {
	e, err := NewEngine(filepath.Join("..", "..", "docs", "policies"))
	require.NoError(t, err)
	set := e.Set()
	require.NotEmpty(t, set.Rules())

	wire := chatInput()
	assert.Equal(t, RequireApproval, set.Evaluate(context.Background(), Chat, wire).Decision, "a wire transfer prompt is held")
	plain := chatInput()
	plain.Request.Messages = []Message{{Role: "user", Content: "What are your opening hours?"}}
	assert.Equal(t, Allow, set.Evaluate(context.Background(), Chat, plain).Decision)

	refund := &Input{Tool: ToolCall{Name: "issue_refund", Args: NewArgs(map[string]any{"amount": 900.0}), Level: 3}, Agent: Agent{Name: "bot", Trust: "trusted"}}
	assert.Equal(t, RequireApproval, set.Evaluate(context.Background(), Tool, refund).Decision, "a large refund is held")
	refund.Tool.Args = NewArgs(map[string]any{"amount": 20.0})
	assert.Equal(t, Allow, set.Evaluate(context.Background(), Tool, refund).Decision)
	refund.Agent.Trust = "restricted"
	refund.Tool.Level = 4
	assert.Equal(t, Deny, set.Evaluate(context.Background(), Tool, refund).Decision, "a restricted agent may not run level-4 tools")

	submit := &Input{Web: WebAction{Action: "submit", URL: "https://pay.example.com/transfer", Host: "pay.example.com", Level: 3}}
	assert.Equal(t, RequireApproval, set.Evaluate(context.Background(), Web, submit).Decision)

	// Provider rules judge each candidate of a call.
	candidates := []Candidate{{Name: "openai-us", Plugin: "openai", Model: "gpt-4o"},
		{Name: "openai-eu", Plugin: "openai", Model: "gpt-4o"}, {Name: "local-vllm", Plugin: "openai", Model: "llama-3.1-8b"}}
	judge := func(app, subject string) map[string]Effect {
		out := map[string]Effect{}
		for _, c := range candidates {
			in := chatInput()
			in.Request.App, in.Request.Subject, in.Request.Providers = app, subject, []string{"openai-us", "openai-eu", "local-vllm"}
			in.Candidate = c
			out[c.Name] = set.Evaluate(context.Background(), Provider, in).Decision
		}
		return out
	}
	assert.Equal(t, map[string]Effect{"openai-us": Deny, "openai-eu": Allow, "local-vllm": Allow}, judge("eu-portal", ""),
		"the EU portal stays off the US provider")
	assert.Equal(t, map[string]Effect{"openai-us": Allow, "openai-eu": Allow, "local-vllm": Allow}, judge("billing", ""))
	assert.Equal(t, map[string]Effect{"openai-us": Deny, "openai-eu": Deny, "local-vllm": Allow}, judge("billing", "patient-records"),
		"patient records only go to the local model")
}

// typicalRules are 20 chat rules of the kinds operators write.
var typicalRules = "policies:\n" + strings.Join([]string{
	rule("r01", "chat", `request.model == "gpt-4-32k"`, "deny"),
	rule("r02", "chat", `request.app == "intern-tools" && request.model.startsWith("o1")`, "deny"),
	rule("r03", "chat", `request.messages.exists(m, m.content.contains("BEGIN PRIVATE KEY"))`, "deny"),
	rule("r04", "chat", `request.messages.exists(m, m.role == "user" && m.content.lowerAscii().contains("wire transfer"))`, "require_approval"),
	rule("r05", "chat", `agent.trust == "restricted"`, "deny"),
	rule("r06", "chat", `"delete_account" in request.tools && agent.trust != "trusted"`, "require_approval"),
	rule("r07", "chat", `size(request.messages) > 200`, "deny"),
	rule("r08", "chat", `request.subject == "" && request.app == "support"`, "require_approval"),
	rule("r09", "chat", `mode == "optimize" && request.model == "gpt-4o" && request.app == "batch"`, "deny"),
	rule("r10", "chat", `tenant == "t_blocked"`, "deny"),
	rule("r11", "chat", `request.messages.exists(m, m.content.matches("\\d{3}-\\d{2}-\\d{4}"))`, "deny"),
	rule("r12", "chat", `request.app.startsWith("beta-") && request.model != "gpt-4o-mini"`, "deny"),
	rule("r13", "chat", `request.agent == "scraper" && size(request.tools) > 0`, "deny"),
	rule("r14", "chat", `request.model in ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet"]`, "allow"),
	rule("r15", "chat", `request.messages.exists(m, m.role == "system" && m.content.contains("ignore all previous"))`, "deny"),
	rule("r16", "chat", `agent.name == "nightly" && request.model == "gpt-4o"`, "require_approval"),
	rule("r17", "chat", `"transfer_funds" in request.tools`, "require_approval"),
	rule("r18", "chat", `request.app == "hr" && request.messages.exists(m, m.content.lowerAscii().contains("salary"))`, "require_approval"),
	rule("r19", "chat", `request.model.endsWith("-preview")`, "deny"),
	rule("r20", "chat", `request.messages.all(m, size(m.content) < 100000)`, "allow"),
}, "")

// BenchmarkEvaluate20Rules is the policy cost of one chat request.
func BenchmarkEvaluate20Rules(b *testing.B) {
	set := load(b, typicalRules)
	in := chatInput()
	b.ReportAllocs()
	for b.Loop() {
		set.Evaluate(context.Background(), Chat, in)
	}
}

func BenchmarkLoad20Rules(b *testing.B) {
	dir := folder(b, map[string]string{"p.yaml": typicalRules})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
