package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longPrompt is a chat request whose one message holds n bytes of
// ordinary prose.
func longPrompt(n int) string {
	const line = "The quarterly report covers revenue, costs, hiring and the outlook for the next year. "
	content := strings.Repeat(line, n/len(line)+1)[:n]
	return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + content + `"}]}`
}

func pendingApprovals(t *testing.T, ts *testServer, token string) []any {
	t.Helper()
	res := ts.call(t, "GET", "/api/v1/approvals?status=pending", token, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	list, _ := res.json["approvals"].([]any)
	return list
}

// The shipped example policies let long-context traffic through: a 4 MiB
// prompt and a prompt that fills the default body limit are answered
// live, and hold nothing for approval.
func TestLongPromptsPassTheShippedPolicies(t *testing.T) {
	examples := filepath.Join("..", "..", "docs", "policies")
	for name, c := range map[string]struct {
		env    map[string]string
		prompt int
	}{
		"4 MiB prompt":               {map[string]string{"SVC_POLICY_DIR": examples}, 4 << 20},
		"the default body, filled":   {map[string]string{"SVC_POLICY_DIR": examples}, 8<<20 - 100},
		"41,000 bytes (held before)": {map[string]string{"SVC_POLICY_DIR": examples}, 41_000},
	} {
		t.Run(name, func(t *testing.T) {
			provider := &countingProvider{Provider: &fakeProvider{}}
			ts := newServerWith(t, bootstrap, c.env, provider)
			body := longPrompt(c.prompt)
			res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
			require.Equal(t, http.StatusOK, res.status, "%.500s", res.body)
			assert.Equal(t, "live", res.header.Get("x-svc-route"))
			assert.EqualValues(t, 1, provider.calls.Load())
			assert.Zero(t, len(pendingApprovals(t, ts, bootstrap)))
		})
	}
}

// quadraticRules hold a request whose work grows with the square of its
// size: each target has one.
const quadraticRules = `policies:
  - id: echo-replace
    target: chat
    when: size(request.messages) > 1 && request.messages.exists(m, m.content.replace("a", request.messages[1].content) == "")
    effect: require_approval
    reason: a rule that cannot finish on long prompts
  - id: refund-currency
    target: tool
    when: tool.name == "refund" && tool.args.currency.split("").join(tool.args.currency) == ""
    effect: require_approval
    reason: a rule that fails on calls without a currency
  - id: open-note
    target: web
    when: web.action == "open" && web.url.matches(web.fields["pattern"])
    effect: require_approval
    reason: a rule that fails on actions without a pattern
`

// A rule its cost limit stops is a policy error: the request is refused
// with policy_error, the rule named in the verdict, and no approval is
// opened. So it is for a rule that fails otherwise, on every target.
func TestARuleThatCannotFinishIsAPolicyError(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(quadraticRules), 0o600))
	provider := &countingProvider{Provider: mockProvider(t)}
	ts := newServerWith(t, bootstrap, map[string]string{"SVC_POLICY_DIR": dir}, provider)

	a := strings.Repeat("a", 20_000)
	chat := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + a + `"},{"role":"user","content":"` + a + `"}]}`
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, chat)
	require.Equal(t, http.StatusForbidden, res.status, "%.500s", res.body)
	e := res.json["error"].(map[string]any)
	assert.Equal(t, "policy_error", e["code"])
	assert.Contains(t, e["message"], "echo-replace")
	rule := res.json["verdict"].(map[string]any)["rules"].([]any)[0].(map[string]any)
	assert.Equal(t, "echo-replace", rule["id"])
	assert.Contains(t, rule["error"], "cost limit")
	assert.Nil(t, res.json["verdict"].(map[string]any)["approvalId"])
	assert.Zero(t, provider.calls.Load(), "nothing reached the provider")
	run := ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))["run"].(map[string]any)
	assert.Equal(t, "blocked", run["status"])

	tools := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Please refund for me."}],` +
		`"tools":[{"type":"function","function":{"name":"refund","parameters":{"type":"object","properties":{"amount":{"type":"number"}}}}}]}`
	res = ts.call(t, "POST", "/v1/chat/completions", bootstrap, tools)
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	assert.Equal(t, "policy_error", res.errorCode())
	assert.Equal(t, "refund-currency", res.json["verdict"].(map[string]any)["rules"].([]any)[0].(map[string]any)["id"])

	res = ts.call(t, "POST", "/api/v1/web/sessions", bootstrap, `{"url":"https://pay.example.com/start"}`)
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	assert.Equal(t, "policy_error", res.errorCode())
	assert.Equal(t, "open-note", res.json["verdict"].(map[string]any)["rules"].([]any)[0].(map[string]any)["id"])

	assert.Zero(t, len(pendingApprovals(t, ts, bootstrap)), "no approval was opened")
}

// A key can hold at most approval_pending_limit approvals pending; past
// it, a request a rule would hold is refused with 429, and no approval is
// opened.
func TestPendingApprovalsPerKeyAreCapped(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	set := ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"approval_pending_limit","value":2}`)
	require.Equal(t, http.StatusOK, set.status, set.body)
	assert.InDelta(t, 2, set.json["settings"].(map[string]any)["approval_pending_limit"], 0)
	_, key := ts.createKey(t, bootstrap, `{"name":"agent","mode":"optimize"}`)
	_, other := ts.createKey(t, bootstrap, `{"name":"other","mode":"optimize"}`)

	var first string
	for i := range 2 {
		held := ts.call(t, "POST", "/v1/chat/completions", key, wire(fmt.Sprintf("$%d", 100+i)))
		require.Equal(t, http.StatusForbidden, held.status, held.body)
		assert.Equal(t, "approval_required", held.errorCode())
		if i == 0 {
			first = held.json["verdict"].(map[string]any)["approvalId"].(string)
		}
	}
	flood := ts.call(t, "POST", "/v1/chat/completions", key, wire("$102"))
	require.Equal(t, http.StatusTooManyRequests, flood.status, flood.body)
	assert.NotEmpty(t, flood.header.Get("retry-after"))
	e := flood.json["error"].(map[string]any)
	assert.Equal(t, "too_many_pending_approvals", e["code"])
	assert.Equal(t, "rate_limit_error", e["type"], "in the provider's shape on /v1")
	assert.Contains(t, e["message"], "approval_pending_limit")
	assert.Len(t, pendingApprovals(t, ts, bootstrap), 2, "no third approval")

	again := ts.call(t, "POST", "/v1/chat/completions", key, wire("$100"))
	require.Equal(t, http.StatusForbidden, again.status, "asking again for a pending one is no new approval")
	assert.Equal(t, first, again.json["verdict"].(map[string]any)["approvalId"])

	theirs := ts.call(t, "POST", "/v1/chat/completions", other, wire("$102"))
	assert.Equal(t, http.StatusForbidden, theirs.status, "another key has its own limit")
	assert.Equal(t, "approval_required", theirs.errorCode())

	decided := ts.call(t, "POST", "/api/v1/approvals/"+first+"/reject", bootstrap, `{"reason":"no"}`)
	require.Equal(t, http.StatusOK, decided.status, decided.body)
	res := ts.call(t, "POST", "/v1/chat/completions", key, wire("$103"))
	assert.Equal(t, http.StatusForbidden, res.status, "a decision frees a place")
	assert.Equal(t, "approval_required", res.errorCode())

	bad := ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"approval_pending_limit","value":0}`)
	assert.Equal(t, http.StatusBadRequest, bad.status)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(bad.body), &body))
	assert.Equal(t, "invalid_setting", bad.errorCode())
}
