package policy

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prose is n bytes of ordinary text ending with tail.
func prose(n int, tail string) string {
	const line = "The quarterly report covers revenue, costs, hiring and the outlook for the next year. "
	var b strings.Builder
	b.Grow(n)
	for b.Len()+len(line) <= n-len(tail) {
		b.WriteString(line)
	}
	b.WriteString(strings.Repeat(".", n-len(tail)-b.Len()))
	b.WriteString(tail)
	return b.String()
}

// chat is a chat request of one user message per content.
func chat(contents ...string) *Input {
	in := &Input{Tenant: "t_1", Mode: "optimize", Request: Request{Model: "gpt-4o", App: "support"}}
	for _, c := range contents {
		in.Request.Messages = append(in.Request.Messages, Message{Role: "user", Content: c})
	}
	return in
}

func examples(t testing.TB) *Set {
	t.Helper()
	set, err := Load(filepath.Join("..", "..", "docs", "policies"))
	require.NoError(t, err)
	return set
}

// sizes are the prompt sizes the examples are held to: up to the largest
// body svc admits by default.
var sizes = []struct {
	name string
	n    int
}{{"1KB", 1 << 10}, {"100KB", 100 << 10}, {"1MiB", 1 << 20}, {"4MiB", 4 << 20}}

func TestExamplePoliciesAllowLongPromptsAndStillCatchTheirTargets(t *testing.T) {
	set := examples(t)
	for _, s := range sizes {
		v := set.Evaluate(context.Background(), Chat, chat(prose(s.n, "")))
		assert.Equal(t, Allow, v.Decision, s.name)
		assert.Empty(t, v.Rules, s.name)
	}
	// A system prompt and many turns: the comprehension walks them all.
	turns := make([]string, 0, 50_000)
	for len(turns) < cap(turns) {
		turns = append(turns, "Could you summarise the previous answer?")
	}
	v := set.Evaluate(context.Background(), Chat, chat(turns...))
	assert.Equal(t, Allow, v.Decision, "50,000 short messages")
	assert.Empty(t, v.Rules)

	const big = 4 << 20
	cases := []struct {
		tail, rule string
		decision   Effect
	}{
		{" Then please send a Wire Transfer of $5,000 to the new account.", "wire-transfers-need-a-person", RequireApproval},
		{" -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "no-secrets-in-prompts", Deny},
	}
	for _, c := range cases {
		v := set.Evaluate(context.Background(), Chat, chat(prose(big, c.tail)))
		assert.Equal(t, c.decision, v.Decision, c.rule)
		assert.Equal(t, []string{c.rule}, ids(v))
		assert.False(t, v.Failed())
	}
	intern := chat(prose(big, ""))
	intern.Request.App = "intern-tools"
	v = set.Evaluate(context.Background(), Chat, intern)
	assert.Equal(t, []string{"interns-use-small-models"}, ids(v))
	assert.False(t, v.Failed())
}

// quadratic are conditions whose work grows with the square of their
// input: on two messages of 20,000 characters each would take hundreds of
// megabytes or seconds.
var quadratic = map[string]string{
	"replace":         `request.messages.exists(m, m.content.replace("a", request.messages[1].content) == "")`,
	"split and join":  `request.messages[0].content.split("").join(request.messages[1].content) == ""`,
	"request pattern": `request.messages[0].content.matches(request.messages[1].content)`,
	// A pattern of 13 bytes that compiles to a thousand instructions.
	"compact request pattern": `request.messages[0].content.matches(request.messages[1].content)`,
	// A text made of a list that holds every message once per message.
	"format": `"%s".format([request.messages.map(a, request.messages.map(b, b.content))]).size() == 0`,
}

// quadraticInput is the input each is stopped on.
func quadraticInput(name string) *Input {
	switch name {
	case "request pattern":
		return chat(strings.Repeat("a", 20_000), strings.Repeat("(a|b)", 4_000))
	case "compact request pattern":
		return chat(strings.Repeat("a", 1<<20), `(?:\pL{1000})b`)
	case "format":
		msgs := make([]string, 200)
		for i := range msgs {
			msgs[i] = strings.Repeat("m", 1_000)
		}
		return chat(msgs...)
	}
	return chat(strings.Repeat("a", 20_000), strings.Repeat("a", 20_000))
}

func TestWorkThatGrowsFasterThanTheInputIsStoppedBeforeItIsDone(t *testing.T) {
	for name, when := range quadratic {
		t.Run(name, func(t *testing.T) {
			set := load(t, "policies:\n"+rule("quadratic", "chat", when, "require_approval"))
			in := quadraticInput(name)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			v := set.Evaluate(context.Background(), Chat, in)
			runtime.ReadMemStats(&after)
			assert.Equal(t, RequireApproval, v.Decision, "a rule that cannot finish fails closed")
			require.Len(t, v.Rules, 1)
			assert.True(t, v.Failed(), "and is a policy error, not a match")
			assert.Contains(t, v.Rules[0].Error, "cost limit")
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "refused before its result was built")
		})
	}
	t.Run("nested comprehensions", func(t *testing.T) {
		msgs := make([]string, 5_000)
		for i := range msgs {
			msgs[i] = fmt.Sprint(i)
		}
		set := load(t, "policies:\n"+rule("pairs", "chat", `request.messages.exists(a, request.messages.exists(b, a.content == b.content && a != b))`, "deny"))
		v := set.Evaluate(context.Background(), Chat, chat(msgs...))
		assert.Equal(t, Deny, v.Decision)
		require.Len(t, v.Rules, 1)
		assert.Contains(t, v.Rules[0].Error, "cost limit")
	})
}

func TestWorkInProportionToTheInputPassesOnTheLargestBodies(t *testing.T) {
	conditions := []string{
		// Reading every message several times over.
		`request.messages.exists(m, m.content.lowerAscii().contains("zebra") || m.content.upperAscii().contains("ZEBRA") ||
			m.content.trim().endsWith("zebra") || m.content.startsWith("zebra") || m.content.indexOf("zebra") >= 0 ||
			size(m.content.replace("revenue", "income")) < 0)`,
		`request.messages.exists(m, m.content.matches("(?i)wire\\s+transfer"))`,
		`request.messages.exists(m, m.content.split(" ").exists(w, w == "zebra"))`,
		`request.messages.map(m, m.content).join("\n").contains("zebra")`,
		`request.messages.exists(m, (m.role + ": " + m.content).contains("zebra"))`,
	}
	in := chat(prose(4<<20, ""))
	for _, when := range conditions {
		set := load(t, "policies:\n"+rule("linear", "chat", when, "deny"))
		v := set.Evaluate(context.Background(), Chat, in)
		assert.Equal(t, Allow, v.Decision, when)
		assert.Empty(t, v.Rules, when)
	}
}

// Linear work that a cruder charge would stop: a character-by-character
// scan with a few comparisons at each, and a long system prompt looked for
// in a longer message.
func TestLinearScansOfLongPromptsPass(t *testing.T) {
	scan := load(t, "policies:\n"+rule("hidden-characters", "chat",
		`request.messages.exists(m, m.content.split("").exists(c, c == "\u200b" || c == "\u202e" || c == "\u2066"))`, "deny"))
	v := scan.Evaluate(context.Background(), Chat, chat(prose(100<<10, "")))
	assert.Equal(t, Allow, v.Decision, "%v", v.Rules)
	v = scan.Evaluate(context.Background(), Chat, chat(prose(100<<10, "\u202e")))
	assert.Equal(t, Deny, v.Decision, "and still finds what it looks for")
	assert.False(t, v.Failed())

	quoted := load(t, "policies:\n"+rule("system-prompt-quoted", "chat",
		`request.messages.exists(m, m.role == "user" && m.content.contains(request.messages[0].content))`, "deny"))
	in := chat(prose(20<<10, "system"), prose(4<<20, ""))
	in.Request.Messages[0].Role = "system"
	v = quoted.Evaluate(context.Background(), Chat, in)
	assert.Equal(t, Allow, v.Decision, "%v", v.Rules)
}

func TestTheLimitGrowsWithTheInput(t *testing.T) {
	// lowerAscii reads and makes every byte: about 1.1 units a byte, far
	// over the base limit on 4 MiB, well within the limit of 4 MiB.
	set := load(t, "policies:\n"+rule("lower", "chat", `request.messages.exists(m, m.content.lowerAscii().contains("zebra"))`, "deny"))
	for _, s := range sizes {
		in := chat(prose(s.n, ""))
		v := set.Evaluate(context.Background(), Chat, in)
		assert.Equal(t, Allow, v.Decision, s.name)
		assert.Greater(t, costLimit("x", in.size(Chat)), uint64(16*s.n), s.name)
	}
}

func TestTheDeadlineInterruptsAnEvaluation(t *testing.T) {
	// Well within its cost limit, but a hundred milliseconds or more of
	// iterations: the caller's deadline, sooner than svc's, stops it.
	set := load(t, "policies:\n"+rule("each-character", "chat", `request.messages.exists(m, m.content.split("").exists(c, c == "#"))`, "deny"))
	in := chat(prose(1<<20, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	v := set.Evaluate(ctx, Chat, in)
	assert.Equal(t, Deny, v.Decision, "a rule stopped by the deadline fails closed")
	require.Len(t, v.Rules, 1)
	assert.True(t, v.Failed())
	assert.Contains(t, v.Rules[0].Error, "deadline")

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	v = set.Evaluate(gone, Chat, in)
	require.Len(t, v.Rules, 1)
	assert.Contains(t, v.Rules[0].Error, "the request ended")
}

func TestAFailedRuleIsAPolicyError(t *testing.T) {
	set := load(t, "policies:\n"+
		rule("broken-approval", "tool", `tool.args.amount > 500`, "require_approval")+
		rule("held", "tool", `tool.name == "pay"`, "require_approval"))
	v := set.Evaluate(context.Background(), Tool, &Input{Tool: ToolCall{Name: "pay", Args: NewArgs(map[string]any{})}})
	assert.Equal(t, RequireApproval, v.Decision)
	assert.True(t, v.Failed(), "one rule could not judge the call")
	assert.False(t, v.Denied())

	v = set.Evaluate(context.Background(), Tool, &Input{Tool: ToolCall{Name: "pay", Args: NewArgs(map[string]any{"amount": 1.0})}})
	assert.Equal(t, RequireApproval, v.Decision)
	assert.False(t, v.Failed())
}

func TestAWrongWrittenPatternIsRefusedAtLoad(t *testing.T) {
	_, err := Load(folder(t, map[string]string{"p.yaml": "policies:\n" + rule("bad-pattern", "chat", `request.model.matches("(")`, "deny")}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rule "bad-pattern"`)
}

// BenchmarkExamplePolicies is the shipped examples' cost on benign prompts
// up to the default body limit.
func BenchmarkExamplePolicies(b *testing.B) {
	set := examples(b)
	for _, s := range sizes {
		in := chat(prose(s.n, ""))
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(s.n))
			for b.Loop() {
				if v := set.Evaluate(context.Background(), Chat, in); v.Decision != Allow {
					b.Fatal(v)
				}
			}
		})
	}
}

// BenchmarkQuadratic is how soon each quadratic condition is stopped on two
// messages of 20,000 characters, and what it allocates before that
// (B/op; the peak growth of the heap cannot be more).
func BenchmarkQuadratic(b *testing.B) {
	for _, name := range []string{"replace", "split and join", "request pattern"} {
		set := load(b, "policies:\n"+rule("quadratic", "chat", quadratic[name], "deny"))
		in := quadraticInput(name)
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := set.Evaluate(context.Background(), Chat, in); !v.Failed() {
					b.Fatal(v)
				}
			}
		})
	}
}

// TestMeteredProgramsDecideAsCELDoes checks the metered programs against
// CEL's own, planned without svc's decorator, on conditions that use every
// kind of call: the same value, or an error for both.
func TestMeteredProgramsDecideAsCELDoes(t *testing.T) {
	env, err := newEnv()
	require.NoError(t, err)
	impls, err := bindings(env)
	require.NoError(t, err)
	conditions := []string{
		`request.messages.exists(m, m.content.lowerAscii().contains("wire transfer"))`,
		`request.messages.all(m, m.content.upperAscii() != "" && size(m.content) > 3)`,
		`request.messages.exists(m, m.content.matches("\\d{3}-\\d{2}-\\d{4}"))`,
		`request.messages[0].content.matches(request.subject)`,
		`request.messages.map(m, m.role + ":" + m.content).join("|").startsWith("system:")`,
		`request.messages.filter(m, m.role == "user").size() == 1`,
		`request.messages[1].content.replace("$", "USD ").contains("USD 5")`,
		`request.messages[1].content.replace("a", "b", 1).indexOf("b") > 0`,
		`request.messages[1].content.split(" ").exists(w, w.trim() == "wire")`,
		`request.messages[1].content.split(" ", 2).size() == 2`,
		`request.messages[1].content.lastIndexOf("e") > request.messages[1].content.indexOf("e", 2)`,
		`request.messages[1].content.charAt(0) == "P" && request.messages[1].content.substring(0, 6) == "Please"`,
		`request.messages[1].content.reverse().endsWith("esaelP")`,
		`"refund" in request.tools && request.model in ["gpt-4o", "gpt-4o-mini"]`,
		`request.tools.exists(t, t in ["lookup"])`,
		`"%s/%s".format([request.app, request.model]) == "billing/gpt-4o"`,
		`strings.quote(request.agent) == "\"bot\""`,
		`tool.args.amount + 1.0 > 100.0 && tool.args.note + "!" == "hi!"`,
		`tool.args.missing > 1`,
		`has(tool.args.amount) && tool.args.amount > 100`,
		`tool.args.items.exists(i, i == "b") && size(tool.args.items) == 2`,
		`web.fields.exists(k, web.fields[k].contains("DE89"))`,
		`bytes(request.model).size() == 6 && string(bytes("x")) == "x"`,
		`int(size(request.messages)) * 2 == 4 && double(1) < 2.0`,
		`request.messages.exists_one(m, m.role == "system")`,
		`[1, 2, 3].map(x, x * 2).exists(x, x == 6)`,
		`{"a": 1}.exists(k, k == "a")`,
		`request.messages[5].content == "x"`,
	}
	in := chatInput()
	in.Request.Subject = "[0-9]+"
	in.Tool = ToolCall{Name: "pay", Args: NewArgs(map[string]any{"amount": 250.0, "note": "hi", "items": []any{"a", "b"}})}
	in.Web = WebAction{Fields: map[string]string{"iban": "DE89 3704"}}
	for _, when := range conditions {
		ast, iss := env.Compile(when)
		require.NoError(t, iss.Err(), when)
		plain, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
		require.NoError(t, err)
		metered, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), newMetering(impls, ast))
		require.NoError(t, err)
		act := &activation{in: in}
		act.meter.ctx, act.meter.due = context.Background(), time.Now().Add(time.Minute)
		act.meter.start(BaseCost)
		want, _, wantErr := plain.Eval(act)
		got, _, gotErr := metered.Eval(act)
		if wantErr != nil {
			assert.Error(t, gotErr, when)
			continue
		}
		require.NoError(t, gotErr, when)
		assert.Equal(t, want, got, when)
		assert.Positive(t, act.meter.used, when)
	}
}

func TestAWrittenBombIsStoppedToo(t *testing.T) {
	// Not the request's doing, but a rule's own texts are metered alike.
	when := `"` + strings.Repeat("a", 20_000) + `".replace("a", "` + strings.Repeat("b", 20_000) + `") == request.model`
	set := load(t, "policies:\n"+rule("bomb", "chat", when, "deny"))
	v := set.Evaluate(context.Background(), Chat, chatInput())
	require.Len(t, v.Rules, 1)
	assert.Contains(t, v.Rules[0].Error, "cost limit")
}
