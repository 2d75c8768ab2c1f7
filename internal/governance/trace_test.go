package governance_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
)

const toolRules = `policies:
  - id: big-refunds
    target: tool
    when: tool.name == "refund" && has(tool.args.amount) && tool.args.amount > 500
    effect: deny
    reason: refunds over 500 are not allowed
  - id: wires-need-a-person
    target: tool
    when: tool.name == "wire"
    effect: require_approval
    reason: wires need approval
  - id: no-drops
    target: tool
    when: tool.name == "drop" && tool.level >= 4
    effect: deny
    reason: dropping is level 4
  - id: default-level
    target: tool
    when: tool.name == "probe" && tool.level == 3
    effect: deny
    reason: a probe without a level
  - id: raw-arguments
    target: tool
    when: tool.name == "echo" && "_raw" in tool.args
    effect: deny
    reason: arguments must be an object
`

// tracing is a tracer over a world, with run_1 of tenant A in optimize mode.
type tracing struct {
	*world
	tracer  *governance.Tracer
	runs    *memRuns
	effects *memEffects
}

func newTracing(t *testing.T, rules string) *tracing {
	t.Helper()
	w := newWorld(t, rules)
	tr := &tracing{world: w, runs: newMemRuns(w.clock), effects: &memEffects{}}
	tr.runs.add(ledger.Run{ID: "run_1", TenantID: tenantA, Mode: "optimize"})
	tr.tracer = governance.NewTracer(tr.runs, tr.effects, w.gov)
	return tr
}

func (tr *tracing) trace(t *testing.T, id *auth.Identity, typ, payload string) governance.Traced {
	t.Helper()
	out, err := tr.tracer.Trace(context.Background(), id, "run_1", typ, json.RawMessage(payload))
	require.NoError(t, err)
	return out
}

func agentKey1() *auth.Identity {
	id := key()
	id.Agent = "bot"
	return id
}

func TestOtherEventsAreAppendedUngoverned(t *testing.T) {
	tr := newTracing(t, toolRules)
	out := tr.trace(t, key(), "retrieval.done", `{"NAME":"wire","level":"x"}`)
	assert.Equal(t, 1, out.Event.Seq)
	assert.Equal(t, "retrieval.done", out.Event.Type)
	assert.Nil(t, out.Verdict)
	assert.Nil(t, out.SideEffect)
	assert.Len(t, tr.runs.trace(tenantA, "run_1"), 1)
	assert.Empty(t, tr.audit.Events(), "nothing was decided")
	assert.Empty(t, tr.effects.executed)
}

func TestATracedToolCallIsGovernedAndItsVerdictTraced(t *testing.T) {
	tr := newTracing(t, toolRules)
	id := agentKey1()
	out := tr.trace(t, id, governance.EventToolCalled, `{"name":"refund","args":{"amount":900},"sideEffectLevel":3}`)
	require.NotNil(t, out.Verdict)
	assert.Equal(t, "deny", out.Verdict.Decision)
	assert.True(t, out.Verdict.Enforced)
	assert.Equal(t, []ledger.RuleResult{{ID: "big-refunds", Effect: "deny", Reason: "refunds over 500 are not allowed"}}, out.Verdict.Rules)
	assert.Nil(t, out.SideEffect, "a call plans no side effect")

	events := tr.runs.trace(tenantA, "run_1")
	require.Len(t, events, 2)
	assert.Equal(t, governance.EventToolCalled, events[0].Type)
	assert.Equal(t, "policy.evaluated", events[1].Type)
	assert.JSONEq(t, `{"target":"tool","tool":"refund","decision":"deny","enforced":true,"approvalId":"","seq":1,
		"rules":[{"id":"big-refunds","effect":"deny","reason":"refunds over 500 are not allowed"}]}`, string(events[1].Payload))

	audited := tr.audit.Events()
	require.Len(t, audited, 1)
	assert.Equal(t, "policy.tool", audited[0].Action)
	assert.Equal(t, "run_1", audited[0].Target)
	saved, ok := tr.agents.saved[agentKey{tenantA, "bot"}]
	require.True(t, ok, "a traced call's standing is stored at once")
	assert.Equal(t, 1, saved.Denies)

	out = tr.trace(t, id, governance.EventToolCalled, `{"name":"refund","args":{"amount":10}}`)
	assert.Equal(t, "allow", out.Verdict.Decision)
	assert.False(t, out.Verdict.Enforced)
	assert.Len(t, tr.runs.trace(tenantA, "run_1"), 4, "an allow is traced too")
	assert.Len(t, tr.audit.Events(), 1, "but not audited")
}

func TestWithoutToolRulesNoVerdictIsTraced(t *testing.T) {
	tr := newTracing(t, decideRules) // web and one tool rule, which does not match
	out := tr.trace(t, key(), governance.EventToolCalled, `{"name":"refund","args":{"amount":900}}`)
	assert.Equal(t, "allow", out.Verdict.Decision)
	assert.Len(t, tr.runs.trace(tenantA, "run_1"), 2)

	tr = newTracing(t, `policies:
  - id: web-only
    target: web
    when: "true"
    effect: deny
`)
	out = tr.trace(t, key(), governance.EventToolCalled, `{"name":"refund","args":{"amount":900}}`)
	require.NotNil(t, out.Verdict)
	assert.Equal(t, "allow", out.Verdict.Decision)
	assert.Len(t, tr.runs.trace(tenantA, "run_1"), 1, "no tool rules: nothing was evaluated")
}

func TestAPlannedSideEffectIsRecordedAsItsVerdictSays(t *testing.T) {
	tr := newTracing(t, toolRules)
	id := key()

	held := tr.trace(t, id, governance.EventSideEffectPlanned, `{"toolName":"wire","level":4,"payload":{"to":"DE89"}}`)
	require.NotNil(t, held.SideEffect)
	se := held.SideEffect
	assert.Equal(t, ledger.EffectBlocked, se.State)
	assert.Equal(t, "wires-need-a-person", se.RuleID)
	assert.Equal(t, "wires need approval", se.Reason)
	require.NotEmpty(t, held.Verdict.ApprovalID)
	assert.Equal(t, held.Verdict.ApprovalID, se.ApprovalID)
	assert.Equal(t, "wire", se.ToolName)
	assert.Equal(t, 4, se.Level)
	assert.JSONEq(t, `{"to":"DE89"}`, string(se.Payload))
	assert.Equal(t, held.Event.Seq, se.PlannedSeq)
	assert.Equal(t, tenantA, se.TenantID)

	// The payload is what a policy sees as the arguments.
	denied := tr.trace(t, id, governance.EventSideEffectPlanned, `{"toolName":"refund","payload":{"amount":900}}`)
	assert.Equal(t, ledger.EffectBlocked, denied.SideEffect.State)
	assert.Equal(t, "big-refunds", denied.SideEffect.RuleID)
	assert.Empty(t, denied.SideEffect.ApprovalID)

	allowed := tr.trace(t, id, governance.EventSideEffectPlanned, `{"toolName":"email","level":1}`)
	assert.Equal(t, ledger.EffectPlanned, allowed.SideEffect.State)
	assert.Empty(t, allowed.SideEffect.RuleID)
	assert.JSONEq(t, `{}`, string(allowed.SideEffect.Payload))

	observe := key()
	observe.Mode = auth.Observe
	watched := tr.trace(t, observe, governance.EventSideEffectPlanned, `{"toolName":"refund","payload":{"amount":900}}`)
	assert.Equal(t, "deny", watched.Verdict.Decision)
	assert.Equal(t, ledger.EffectPlanned, watched.SideEffect.State, "observe mode blocks nothing")

	tr.runs.add(ledger.Run{ID: "run_replay", TenantID: tenantA, Mode: ledger.ModeReplay})
	out, err := tr.tracer.Trace(context.Background(), id, "run_replay", governance.EventSideEffectPlanned,
		json.RawMessage(`{"toolName":"refund","payload":{"amount":900}}`))
	require.NoError(t, err)
	assert.Equal(t, ledger.EffectSuppressed, out.SideEffect.State, "a replay's side effect is suppressed, whatever the verdict")
	assert.Empty(t, out.SideEffect.RuleID)

	stored, err := tr.effects.SideEffects(context.Background(), tenantA, "run_1")
	require.NoError(t, err)
	assert.Len(t, stored, 4)
}

func TestACompletedToolExecutesItsPlannedSideEffect(t *testing.T) {
	tr := newTracing(t, toolRules)
	id := key()
	tr.trace(t, id, governance.EventSideEffectPlanned, `{"toolName":"email","level":1}`)
	audited := len(tr.audit.Events())
	out := tr.trace(t, id, governance.EventToolCompleted, `{"name":"email","result":{"ok":true}}`)
	assert.Nil(t, out.Verdict, "a completion is not judged again")
	assert.Equal(t, []string{tenantA + "/run_1/email"}, tr.effects.executed)
	stored, err := tr.effects.SideEffects(context.Background(), tenantA, "run_1")
	require.NoError(t, err)
	require.Len(t, stored, 1)
	assert.Equal(t, ledger.EffectExecuted, stored[0].State)
	assert.Equal(t, out.Event.At, stored[0].UpdatedAt)
	assert.Len(t, tr.audit.Events(), audited)
}

func TestToolLevelsAndArguments(t *testing.T) {
	tr := newTracing(t, toolRules)
	id := key()
	for payload, want := range map[string]string{
		`{"name":"drop","sideEffectLevel":4.0}`:          "deny",  // 4.0 is 4
		`{"name":"drop","sideEffectLevel":3}`:            "allow", //
		`{"name":"drop","level":4,"sideEffectLevel":1}`:  "deny",  // level first
		`{"name":"probe"}`:                               "deny",  // the default level is 3
		`{"name":"probe","level":2}`:                     "allow", //
		`{"name":"echo","args":"rm -rf /"}`:              "deny",  // arguments that are not an object are _raw
		`{"name":"echo","args":{"cmd":"ls"}}`:            "allow", //
		`{"name":"refund","args":{"amount":900},"x":[]}`: "deny",  // unknown keys are allowed
	} {
		out := tr.trace(t, id, governance.EventToolCalled, payload)
		assert.Equal(t, want, out.Verdict.Decision, payload)
	}
	assert.Equal(t, map[string]any{"_raw": `"rm -rf /"`}, governance.ParseArgs(`"rm -rf /"`))
	assert.Equal(t, map[string]any{"_raw": `null`}, governance.ParseArgs(`null`))
	assert.Equal(t, map[string]any{"a": 1.0}, governance.ParseArgs(`{"a":1}`))
}

func TestABadToolPayloadIsRefusedBeforeItIsTraced(t *testing.T) {
	tr := newTracing(t, toolRules)
	for payload, param := range map[string]string{
		`{"name":"x","level":5}`:             "payload.level",
		`{"name":"x","level":-1}`:            "payload.level",
		`{"name":"x","sideEffectLevel":2.5}`: "payload.sideEffectLevel",
		`{"name":"x","level":"4"}`:           "payload.level",
		`[1]`:                                "payload",
		`{"name":"x","Level":1}`:             "payload.Level",
		`{"name":"x","name":"y"}`:            "payload.name",
	} {
		for _, typ := range []string{governance.EventToolCalled, governance.EventSideEffectPlanned, governance.EventToolCompleted} {
			_, err := tr.tracer.Trace(context.Background(), key(), "run_1", typ, json.RawMessage(payload))
			var e *errs.Error
			require.ErrorAs(t, err, &e, "%s %s", typ, payload)
			assert.Equal(t, errs.Invalid, e.Kind, payload)
			assert.Equal(t, param, e.Param, payload)
		}
	}
	assert.Empty(t, tr.runs.trace(tenantA, "run_1"), "nothing was appended")
	assert.Empty(t, tr.effects.executed)
}

func TestTracingAnotherTenantsRunIsNotFound(t *testing.T) {
	tr := newTracing(t, toolRules)
	other := &auth.Identity{TenantID: tenantB, Mode: auth.Optimize, Via: auth.ViaKey, KeyID: "key_b"}
	for _, typ := range []string{"note", governance.EventToolCalled, governance.EventToolCompleted} {
		_, err := tr.tracer.Trace(context.Background(), other, "run_1", typ, json.RawMessage(`{"name":"refund"}`))
		assert.True(t, errs.Is(err, errs.NotFound), typ)
	}
	assert.Empty(t, tr.runs.trace(tenantA, "run_1"))
	assert.Empty(t, tr.effects.executed)

	tr.runs.fail = errors.New("disk full")
	_, err := tr.tracer.Trace(context.Background(), key(), "run_1", governance.EventToolCalled, json.RawMessage(`{"name":"refund"}`))
	require.ErrorIs(t, err, tr.runs.fail)
	assert.Empty(t, tr.audit.Events(), "a call that was not traced is not judged")
}

func TestLedgerVerdict(t *testing.T) {
	d := governance.Decision{Enforced: true, Verdict: policy.Verdict{Decision: policy.RequireApproval, ApprovalID: "apr_1",
		Rules: []policy.RuleResult{{ID: "a", Effect: policy.RequireApproval, Reason: "r"}, {ID: "b", Effect: policy.Deny, Reason: "s", Error: "e"}}}}
	assert.Equal(t, ledger.Verdict{Decision: "require_approval", ApprovalID: "apr_1", Enforced: true,
		Rules: []ledger.RuleResult{{ID: "a", Effect: "require_approval", Reason: "r"}, {ID: "b", Effect: "deny", Reason: "s", Error: "e"}}},
		governance.LedgerVerdict(d))
	assert.Equal(t, []ledger.RuleResult{}, governance.LedgerVerdict(governance.Decision{}).Rules, "no rules is an empty list, not null")
}
