package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
)

// policyNamed returns the rule of that id from GET /api/v1/policies.
func policyNamed(t *testing.T, res response, id string) map[string]any {
	t.Helper()
	for _, p := range res.json["policies"].([]any) {
		if p := p.(map[string]any); p["id"] == id {
			return p
		}
	}
	t.Fatalf("no rule %s in %s", id, res.body)
	return nil
}

func TestPolicyMatchesAndVerdictsAreTenantScoped(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirToken, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize})
	require.NoError(t, err)

	denied := ts.call(t, "POST", "/v1/chat/completions", bootstrap, bigModel, "X-Svc-App", "support")
	require.Equal(t, http.StatusForbidden, denied.status, denied.body)
	held := ts.call(t, "POST", "/v1/chat/completions", bootstrap, wire("900"))
	require.Equal(t, http.StatusForbidden, held.status, held.body)
	approvalID := held.json["verdict"].(map[string]any)["approvalId"].(string)
	// The other tenant's match never counts for us.
	require.Equal(t, http.StatusForbidden, ts.call(t, "POST", "/v1/chat/completions", theirToken, bigModel, "X-Svc-App", "support").status)

	res := ts.call(t, "GET", "/api/v1/policies", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	m := policyNamed(t, res, "no-big-models")["matches"].(map[string]any)
	assert.InDelta(t, 1, m["lastHour"], 0)
	assert.InDelta(t, 1, m["lastDay"], 0)
	at, err := time.Parse(time.RFC3339Nano, m["lastAt"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), at, time.Minute)
	assert.Equal(t, map[string]any{"lastHour": 0.0, "lastDay": 0.0, "lastAt": nil}, policyNamed(t, res, "no-deletes")["matches"])
	reload := res.json["reload"].(map[string]any)
	assert.Equal(t, true, reload["ok"])
	assert.InDelta(t, 5, reload["rules"], 0)
	assert.NotContains(t, reload, "error")

	v := ts.call(t, "GET", "/api/v1/policies/no-big-models/verdicts", bootstrap, "")
	require.Equal(t, http.StatusOK, v.status, v.body)
	verdicts := v.json["verdicts"].([]any)
	require.Len(t, verdicts, 1)
	got := verdicts[0].(map[string]any)
	assert.Equal(t, denied.header.Get("x-svc-run-id"), got["runId"])
	assert.Equal(t, "chat", got["target"])
	assert.Equal(t, "deny", got["effect"])
	assert.Equal(t, "deny", got["decision"])
	assert.Equal(t, "support uses gpt-4o-mini", got["reason"])
	assert.NotEmpty(t, got["at"])

	w := ts.call(t, "GET", "/api/v1/policies/wire-transfers/verdicts?limit=1", bootstrap, "").json["verdicts"].([]any)
	require.Len(t, w, 1)
	assert.Equal(t, approvalID, w[0].(map[string]any)["approvalId"])
	assert.Equal(t, "require_approval", w[0].(map[string]any)["decision"])

	theirs := ts.call(t, "GET", "/api/v1/policies", theirToken, "")
	assert.InDelta(t, 1, policyNamed(t, theirs, "no-big-models")["matches"].(map[string]any)["lastDay"], 0)
	assert.InDelta(t, 0, policyNamed(t, theirs, "wire-transfers")["matches"].(map[string]any)["lastDay"], 0)
	tv := ts.call(t, "GET", "/api/v1/policies/no-big-models/verdicts", theirToken, "").json["verdicts"].([]any)
	require.Len(t, tv, 1)
	assert.NotEqual(t, denied.header.Get("x-svc-run-id"), tv[0].(map[string]any)["runId"])
	assert.Empty(t, ts.call(t, "GET", "/api/v1/policies/wire-transfers/verdicts", theirToken, "").json["verdicts"])

	missing := ts.call(t, "GET", "/api/v1/policies/no-such-rule/verdicts", bootstrap, "")
	assert.Equal(t, http.StatusNotFound, missing.status)
	assert.Equal(t, "not_found", missing.errorCode())
	bad := ts.call(t, "GET", "/api/v1/policies/no-big-models/verdicts?limit=-1", bootstrap, "")
	assert.Equal(t, http.StatusBadRequest, bad.status)
	assert.Equal(t, "limit", bad.json["error"].(map[string]any)["param"])
}

func TestPolicyReload(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(body), 0o600))
	}
	write("policies:\n  - id: first\n    target: chat\n    when: 'true'\n    effect: allow\n")
	ts := newServerWith(t, bootstrap, map[string]string{"SVC_POLICY_DIR": dir}, &fakeProvider{})
	_, member, err := ts.keys.Create(context.Background(), "default", auth.NewKey{Name: "reader", Mode: auth.Optimize})
	require.NoError(t, err)
	forbidden := ts.call(t, "POST", "/api/v1/policies/reload", member, "")
	assert.Equal(t, http.StatusForbidden, forbidden.status, "only an admin reloads")
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirAdmin, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize, Admin: true})
	require.NoError(t, err)
	write("policies:\n  - id: half-edited\n    target: chat\n    when: 'true'\n    effect: deny\n")
	refused := ts.call(t, "POST", "/api/v1/policies/reload", theirAdmin, "")
	assert.Equal(t, http.StatusForbidden, refused.status, "the folder governs every org: another org's admin may not reload it")
	assert.Equal(t, "first", ts.call(t, "GET", "/api/v1/policies", bootstrap, "").json["policies"].([]any)[0].(map[string]any)["id"],
		"the rules in force stay")

	write("policies:\n  - id: broken\n    target: chat\n    when: 'nonsense('\n    effect: deny\n")
	res := ts.call(t, "POST", "/api/v1/policies/reload", bootstrap, "")
	require.Equal(t, http.StatusBadRequest, res.status, res.body)
	assert.Equal(t, "policy_invalid", res.errorCode())
	msg := res.json["error"].(map[string]any)["message"].(string)
	assert.Contains(t, msg, `p.yaml: rule "broken"`)
	assert.NotContains(t, msg, dir, "the folder's place stays private")
	failed := res.json["reload"].(map[string]any)
	assert.Equal(t, false, failed["ok"])
	assert.InDelta(t, 1, failed["rules"], 0, "the last good rule stays in force")

	list := ts.call(t, "GET", "/api/v1/policies", bootstrap, "")
	assert.Equal(t, failed, list.json["reload"], "the list shows the failed reload")
	assert.Equal(t, "first", list.json["policies"].([]any)[0].(map[string]any)["id"])

	write("policies:\n  - id: second\n    target: chat\n    when: 'true'\n    effect: allow\n  - id: third\n    target: tool\n    when: 'true'\n    effect: allow\n")
	res = ts.call(t, "POST", "/api/v1/policies/reload", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	ok := res.json["reload"].(map[string]any)
	assert.Equal(t, true, ok["ok"])
	assert.InDelta(t, 2, ok["rules"], 0)
	list = ts.call(t, "GET", "/api/v1/policies", bootstrap, "")
	assert.Equal(t, ok, list.json["reload"])
	assert.Len(t, list.json["policies"], 2)

	events := ts.call(t, "GET", "/api/v1/audit?action=policy.reload", bootstrap, "").json["events"].([]any)
	require.Len(t, events, 2, "each reload is audited")
	assert.Equal(t, "allow", events[0].(map[string]any)["decision"])
	assert.Equal(t, "deny", events[1].(map[string]any)["decision"])
	assert.Contains(t, events[1].(map[string]any)["details"].(map[string]any)["error"], "broken")
}
