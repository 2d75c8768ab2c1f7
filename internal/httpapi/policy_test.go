package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// policyRules are the rules of these tests, one file per target.
var policyRules = map[string]string{
	"chat.yaml": `policies:
  - id: no-big-models
    description: the support app uses small models
    target: chat
    when: request.app == "support" && request.model == "gpt-4o"
    effect: deny
    reason: support uses gpt-4o-mini
  - id: wire-transfers
    target: chat
    when: request.messages.exists(m, m.content.lowerAscii().contains("wire transfer"))
    effect: require_approval
    reason: moving money needs a person
  - id: restricted-agents
    target: chat
    when: agent.trust == "restricted"
    effect: deny
    reason: the agent is restricted
`,
	"tools.yaml": `policies:
  - id: no-deletes
    target: tool
    when: tool.name == "delete_account"
    effect: deny
    reason: accounts are deleted by people
  - id: big-refunds
    target: tool
    when: tool.name == "refund" && has(tool.args.amount) && tool.args.amount > 500
    effect: require_approval
    reason: refunds above 500 need approval
`,
}

func policyServer(t *testing.T, provider pluginapi.Provider) *testServer {
	t.Helper()
	dir := t.TempDir()
	for name, body := range policyRules {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	return newServerWith(t, bootstrap, map[string]string{"SVC_POLICY_DIR": dir}, provider)
}

// countingProvider counts the calls that reach the provider.
type countingProvider struct {
	pluginapi.Provider
	calls atomic.Int64
}

func (c *countingProvider) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	c.calls.Add(1)
	return c.Provider.Chat(ctx, req)
}

func (c *countingProvider) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	c.calls.Add(1)
	return c.Provider.StreamChat(ctx, req, send)
}

const bigModel = `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`

func wire(amount string) string {
	return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Please make a wire transfer of ` + amount + `."}]}`
}

func auditDecisions(t *testing.T, ts *testServer, decision string) []map[string]any {
	t.Helper()
	res := ts.call(t, "GET", "/api/v1/audit?decision="+decision, bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	var out []map[string]any
	for _, e := range res.json["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func TestPolicyDenyBlocksInOptimizeMode(t *testing.T) {
	provider := &countingProvider{Provider: &fakeProvider{}}
	ts := policyServer(t, provider)
	for _, body := range []string{bigModel, strings.Replace(bigModel, `{"model"`, `{"stream":true,"model"`, 1)} {
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, body, "X-Svc-App", "support")
		require.Equal(t, http.StatusForbidden, res.status, res.body)
		assert.Equal(t, "blocked", res.header.Get("x-svc-route"))
		e := res.json["error"].(map[string]any)
		assert.Equal(t, "policy_denied", e["code"])
		assert.Contains(t, e["message"], "no-big-models")
		v := res.json["verdict"].(map[string]any)
		assert.Equal(t, "deny", v["decision"])
		rules := v["rules"].([]any)
		require.Len(t, rules, 1)
		assert.Equal(t, map[string]any{"id": "no-big-models", "effect": "deny", "reason": "support uses gpt-4o-mini"}, rules[0])

		run := ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))
		r := run["run"].(map[string]any)
		assert.Equal(t, "blocked", r["route"])
		assert.Equal(t, "blocked", r["status"])
		assert.InDelta(t, 403, r["httpStatus"], 0)
		p := r["routeExplanation"].(map[string]any)["policy"].(map[string]any)
		assert.Equal(t, "deny", p["decision"])
		assert.Equal(t, true, p["enforced"])
		var types []string
		for _, e := range run["events"].([]any) {
			types = append(types, e.(map[string]any)["type"].(string))
		}
		assert.Equal(t, []string{"request.received", "policy.evaluated", "route.decided"}, types, "nothing reached the provider")
	}
	assert.Zero(t, provider.calls.Load(), "a blocked request never reaches the provider")
	assert.Len(t, auditDecisions(t, ts, "deny"), 2)
	assert.Equal(t, []string{"policy.blocked", "policy.blocked"}, ts.notified.list())

	list := ts.call(t, "GET", "/api/v1/runs?status=blocked", bootstrap, "")
	assert.InDelta(t, 2, list.json["total"], 0)

	// Another app is not concerned by the rule.
	ok := ts.call(t, "POST", "/v1/chat/completions", bootstrap, bigModel, "X-Svc-App", "batch")
	assert.Equal(t, http.StatusOK, ok.status, ok.body)
}

func TestPolicyInObserveModeRecordsWhatWouldHaveHappened(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	_, observer := ts.createKey(t, bootstrap, `{"name":"watch","mode":"observe"}`)
	for _, body := range []string{bigModel, wire("$9,000")} {
		res := ts.call(t, "POST", "/v1/chat/completions", observer, body, "X-Svc-App", "support")
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, "live", res.header.Get("x-svc-route"))
		p := ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))["run"].(map[string]any)["routeExplanation"].(map[string]any)["policy"].(map[string]any)
		assert.NotEqual(t, "allow", p["decision"], "the run records the verdict")
		assert.Equal(t, false, p["enforced"])
		assert.Nil(t, p["approvalId"], "observe mode opens no approval")
	}
	assert.Len(t, auditDecisions(t, ts, "deny"), 1)
	assert.Len(t, auditDecisions(t, ts, "require_approval"), 1)
	pending := ts.call(t, "GET", "/api/v1/approvals?status=pending", bootstrap, "")
	assert.Empty(t, pending.json["approvals"])
	assert.Empty(t, ts.notified.list(), "nothing was blocked")
}

func TestApprovalGrantsATimedException(t *testing.T) {
	provider := &countingProvider{Provider: &fakeProvider{}}
	ts := policyServer(t, provider)
	held := ts.call(t, "POST", "/v1/chat/completions", bootstrap, wire("$9,000"))
	require.Equal(t, http.StatusForbidden, held.status, held.body)
	assert.Equal(t, "approval_required", held.json["error"].(map[string]any)["code"])
	v := held.json["verdict"].(map[string]any)
	assert.Equal(t, "require_approval", v["decision"])
	approvalID := v["approvalId"].(string)
	require.NotEmpty(t, approvalID)

	again := ts.call(t, "POST", "/v1/chat/completions", bootstrap, wire("$9,000"))
	assert.Equal(t, approvalID, again.json["verdict"].(map[string]any)["approvalId"], "asking again finds the same approval")
	assert.Zero(t, provider.calls.Load())

	list := ts.call(t, "GET", "/api/v1/approvals?status=pending", bootstrap, "")
	require.Equal(t, http.StatusOK, list.status, list.body)
	approvals := list.json["approvals"].([]any)
	require.Len(t, approvals, 1)
	a := approvals[0].(map[string]any)
	assert.Equal(t, approvalID, a["id"])
	assert.Equal(t, "chat", a["target"])
	assert.Equal(t, "bootstrap", a["requestedBy"].(map[string]any)["actor"])
	assert.Equal(t, "wire-transfers", a["rules"].([]any)[0].(map[string]any)["id"])
	assert.Contains(t, mustMarshal(t, a["request"]), "wire transfer of $9,000")
	assert.Equal(t, http.StatusBadRequest, ts.call(t, "GET", "/api/v1/approvals?status=maybe", bootstrap, "").status)

	_, member := ts.createKey(t, bootstrap, `{"name":"member","mode":"optimize"}`)
	path := "/api/v1/approvals/" + approvalID + "/approve"
	assert.Equal(t, http.StatusForbidden, ts.call(t, "POST", path, member, `{"reason":"ok"}`).status, "deciding takes an admin")
	assert.Equal(t, http.StatusBadRequest, ts.call(t, "POST", path, bootstrap, `{"reason":""}`).status, "a reason is required")
	assert.Equal(t, http.StatusBadRequest, ts.call(t, "POST", path, bootstrap, `{}`).status)
	assert.Equal(t, http.StatusNotFound, ts.call(t, "POST", "/api/v1/approvals/apr_aaaaaaaaaaaaaaaaaaaa/approve", bootstrap, `{"reason":"ok"}`).status)

	res := ts.call(t, "POST", path, bootstrap, `{"reason":"the customer confirmed by phone"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	decided := res.json["approval"].(map[string]any)
	assert.Equal(t, "approved", decided["status"])
	assert.Equal(t, "bootstrap", decided["decidedBy"])
	assert.Equal(t, "the customer confirmed by phone", decided["reason"])
	assert.Equal(t, http.StatusConflict, ts.call(t, "POST", "/api/v1/approvals/"+approvalID+"/reject", bootstrap, `{"reason":"no"}`).status, "deciding twice")

	passed := ts.call(t, "POST", "/v1/chat/completions", bootstrap, wire("$9,000"))
	require.Equal(t, http.StatusOK, passed.status, passed.body)
	p := ts.run(t, bootstrap, passed.header.Get("x-svc-run-id"))["run"].(map[string]any)["routeExplanation"].(map[string]any)["policy"].(map[string]any)
	assert.Equal(t, "allow", p["decision"])
	assert.Equal(t, approvalID, p["approvalId"], "the verdict cites the approval")
	assert.EqualValues(t, 1, provider.calls.Load())

	other := ts.call(t, "POST", "/v1/chat/completions", bootstrap, wire("$90,000"))
	assert.Equal(t, http.StatusForbidden, other.status, "the exception covers the identical request only")

	ts.clock.Advance(24*time.Hour + time.Second) // the default TTL is 24 hours
	expired := ts.call(t, "POST", "/v1/chat/completions", bootstrap, wire("$9,000"))
	require.Equal(t, http.StatusForbidden, expired.status)
	assert.NotEqual(t, approvalID, expired.json["verdict"].(map[string]any)["approvalId"], "after the TTL a new approval is needed")

	assert.Equal(t, []string{"approval.requested", "approval.decided", "approval.requested", "approval.requested"}, ts.notified.list(),
		"asking again while pending notifies nothing")
}

func TestApprovalsAreTenantPrivate(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	held := ts.call(t, "POST", "/v1/chat/completions", bootstrap, wire("$1"))
	approvalID := held.json["verdict"].(map[string]any)["approvalId"].(string)
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, token, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize, Admin: true})
	require.NoError(t, err)
	foreign := ts.call(t, "POST", "/api/v1/approvals/"+approvalID+"/approve", token, `{"reason":"mine now"}`)
	unknown := ts.call(t, "POST", "/api/v1/approvals/apr_aaaaaaaaaaaaaaaaaaaa/approve", token, `{"reason":"mine now"}`)
	assert.Equal(t, http.StatusNotFound, foreign.status)
	assert.Equal(t, unknown.body, foreign.body, "another tenant's approval is exactly like none")
	list := ts.call(t, "GET", "/api/v1/approvals", token, "")
	assert.Empty(t, list.json["approvals"])
}

func TestToolCallsOfTheAnswerAreGoverned(t *testing.T) {
	provider := &countingProvider{Provider: mockProvider(t)}
	ts := policyServer(t, provider)
	ask := func(tool, content string) response {
		body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + content + `"}],` +
			`"tools":[{"type":"function","function":{"name":"` + tool + `","parameters":{"type":"object","properties":{"amount":{"type":"number"}}}}}]}`
		return ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
	}
	res := ask("delete_account", "Please delete_account for me.")
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	assert.Equal(t, "no-deletes", res.json["verdict"].(map[string]any)["rules"].([]any)[0].(map[string]any)["id"])
	assert.Equal(t, "blocked", res.header.Get("x-svc-route"))
	run := ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))
	r := run["run"].(map[string]any)
	assert.Equal(t, "blocked", r["route"])
	assert.Greater(t, r["costUsd"], 0.0, "the provider was called: its cost stays recorded")
	var types []string
	for _, e := range run["events"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	assert.Equal(t, []string{"request.received", "policy.evaluated", "route.decided", "provider.completed", "policy.evaluated"}, types,
		"the request's verdict, then the tool call's once the answer came")
	assert.EqualValues(t, 1, provider.calls.Load())

	ok := ask("lookup_invoice", "Please lookup_invoice 42.")
	assert.Equal(t, http.StatusOK, ok.status, ok.body)
}

func TestTracedSideEffectsAreGoverned(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	id := ts.chatRun(t, bootstrap, triage)
	trace := func(typ, payload string) response {
		res := ts.call(t, "POST", "/api/v1/trace", bootstrap, `{"runId":"`+id+`","type":"`+typ+`","payload":`+payload+`}`)
		require.Equal(t, http.StatusCreated, res.status, res.body)
		return res
	}
	denied := trace("side_effect.planned", `{"toolName":"delete_account","level":4,"payload":{"account":"acc_1"}}`)
	assert.Equal(t, "deny", denied.json["verdict"].(map[string]any)["decision"])
	se := denied.json["sideEffect"].(map[string]any)
	assert.Equal(t, "blocked", se["state"])
	assert.Equal(t, "no-deletes", se["ruleId"])

	held := trace("side_effect.planned", `{"toolName":"refund","level":3,"payload":{"amount":900}}`)
	assert.Equal(t, "blocked", held.json["sideEffect"].(map[string]any)["state"])
	assert.NotEmpty(t, held.json["sideEffect"].(map[string]any)["approvalId"], "a held side effect waits on an approval")

	planned := trace("side_effect.planned", `{"toolName":"refund","level":3,"payload":{"amount":20}}`)
	assert.Equal(t, "planned", planned.json["sideEffect"].(map[string]any)["state"])
	trace("tool.completed", `{"name":"refund","result":{"ok":true}}`)

	called := trace("tool.called", `{"name":"delete_account","args":{"account":"acc_2"},"sideEffectLevel":4}`)
	assert.Equal(t, "deny", called.json["verdict"].(map[string]any)["decision"])

	d := ts.run(t, bootstrap, id)
	var states []string
	for _, e := range d["sideEffects"].([]any) {
		states = append(states, e.(map[string]any)["state"].(string))
	}
	assert.Equal(t, []string{"blocked", "blocked", "executed"}, states)
	assert.Equal(t, true, ts.call(t, "GET", "/api/v1/runs/"+id+"/integrity", bootstrap, "").json["ok"])
	assert.Len(t, auditDecisions(t, ts, "deny"), 2)
}

func TestAgentTrustMovesWithDecisions(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	agent := []string{"X-Svc-Agent", "rogue", "X-Svc-App", "support"}
	for range ledger.RestrictAfter {
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, bigModel, agent...)
		require.Equal(t, http.StatusForbidden, res.status)
	}
	agents := ts.call(t, "GET", "/api/v1/agents", bootstrap, "").json["agents"].([]any)
	require.Len(t, agents, 1)
	assert.Equal(t, "restricted", agents[0].(map[string]any)["trust"])

	// A restricted agent is seen as such by the policies.
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage, agent...)
	require.Equal(t, http.StatusForbidden, res.status)
	assert.Equal(t, "restricted-agents", res.json["verdict"].(map[string]any)["rules"].([]any)[0].(map[string]any)["id"])

	good := []string{"X-Svc-Agent", "helper"}
	for range ledger.TrustAfter {
		require.Equal(t, http.StatusOK, ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage, good...).status)
	}
	for _, a := range ts.call(t, "GET", "/api/v1/agents", bootstrap, "").json["agents"].([]any) {
		if a.(map[string]any)["name"] == "helper" {
			assert.Equal(t, "trusted", a.(map[string]any)["trust"])
		}
	}
}

func TestListPolicies(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	res := ts.call(t, "GET", "/api/v1/policies", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	policies := res.json["policies"].([]any)
	require.Len(t, policies, 5)
	first := policies[0].(map[string]any)
	assert.Equal(t, "no-big-models", first["id"])
	assert.Equal(t, "the support app uses small models", first["description"])
	assert.Equal(t, "chat", first["target"])
	assert.Equal(t, "deny", first["effect"])
	assert.Equal(t, "support uses gpt-4o-mini", first["reason"])
	assert.Equal(t, "chat.yaml", first["source"])
}

func TestStreamedToolCallsAreJudgedBeforeTheStreamLeaves(t *testing.T) {
	ts := policyServer(t, mockProvider(t))
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Please delete_account acc_9."}],` +
		`"tools":[{"type":"function","function":{"name":"delete_account","parameters":{"type":"object","properties":{"account":{"type":"string"}}}}}]}`

	// An optimize key: the answer is held, its tool call denied, nothing streamed.
	blocked := ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
	require.Equal(t, http.StatusForbidden, blocked.status, blocked.body)
	assert.Equal(t, "blocked", blocked.header.Get("x-svc-route"))
	assert.NotContains(t, blocked.body, "data:", "no part of the answer left")
	assert.Equal(t, "no-deletes", blocked.json["verdict"].(map[string]any)["rules"].([]any)[0].(map[string]any)["id"])

	// An observe key: streamed as it comes, the verdict recorded.
	_, observer := ts.createKey(t, bootstrap, `{"name":"watch","mode":"observe"}`)
	res, events := ts.stream(t, observer, strings.Replace(body, "acc_9", "acc_8", 1))
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "[DONE]", events[len(events)-1])
	assert.Contains(t, strings.Join(events, "\n"), "delete_account", "the client got the tool call")
	run := ts.run(t, bootstrap, res.Header.Get("x-svc-run-id"))
	p := run["run"].(map[string]any)["routeExplanation"].(map[string]any)["policy"].(map[string]any)
	assert.Equal(t, "deny", p["decision"], "the verdict on the streamed tool call is recorded")
	assert.Equal(t, false, p["enforced"])
	assert.Len(t, auditDecisions(t, ts, "deny"), 2)

	// Without tools on offer, a stream is never held.
	plain, events := ts.stream(t, bootstrap, `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	assert.Equal(t, http.StatusOK, plain.StatusCode)
	assert.Equal(t, "[DONE]", events[len(events)-1])
}

func TestToolCallArgumentsInEveryShapeAreJudged(t *testing.T) {
	for name, message := range map[string]string{
		"arguments as a string":  `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"refund","arguments":"{\"amount\":900}"}}]}`,
		"arguments as an object": `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"refund","arguments":{"amount":900}}}]}`,
		"a legacy function_call": `{"role":"assistant","function_call":{"name":"refund","arguments":"{\"amount\":900}"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			ts := policyServer(t, &fixedAnswer{body: `{"object":"chat.completion","choices":[{"index":0,"message":` + message + `}]}`})
			res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"refund me"}]}`)
			require.Equal(t, http.StatusForbidden, res.status, res.body)
			assert.Equal(t, "big-refunds", res.json["verdict"].(map[string]any)["rules"].([]any)[0].(map[string]any)["id"])
		})
	}
	ts := policyServer(t, &fixedAnswer{body: `{"choices":[{"message":{"tool_calls":"not a list"}}]}`})
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`)
	assert.Equal(t, http.StatusInternalServerError, res.status, "tool calls that cannot be read are never let through")
}

// fixedAnswer answers every call with body.
type fixedAnswer struct {
	fakeProvider
	body string
}

func (f *fixedAnswer) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	return pluginapi.ChatResponse{Body: []byte(f.body), Usage: pluginapi.Usage{PromptTokens: 5, CompletionTokens: 5, TotalTokens: 10}}, nil
}
