package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/ids"
)

// Budgets and spend through svc as app builds it: each tenant sees and
// changes only its own, the budgets' own checks answer 400 naming the
// field, a budget's counter shows what its app spent, and a change is
// audited.
func TestBudgetsAndSpendThroughTheApp(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirToken, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize, Admin: true})
	require.NoError(t, err)

	res := ts.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"budgets":[{"id":"ok","scope":"app","match":"support","window":"day","limitRequests":5},{"scope":"app","window":"fortnight","limitUsd":1}]}`)
	require.Equal(t, http.StatusBadRequest, res.status, res.body)
	assert.Equal(t, "budgets[1].window", res.json["error"].(map[string]any)["param"])
	assert.Empty(t, ts.call(t, "GET", "/api/v1/budgets", bootstrap, "").json["budgets"], "nothing was stored")

	res = ts.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"id":"support-day","scope":"app","match":"support","window":"day","limitRequests":5}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	res = ts.call(t, "POST", "/v1/chat/completions", bootstrap, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`, "X-Svc-App", "support")
	require.Equal(t, http.StatusOK, res.status, res.body)

	list := ts.call(t, "GET", "/api/v1/budgets", bootstrap, "").json["budgets"].([]any)
	require.Len(t, list, 1)
	spent := list[0].(map[string]any)["spent"].(map[string]any)
	assert.InDelta(t, 1.0, spent["requests"], 0)
	// What GET answers may be sent back whole, its window and counter
	// ignored.
	read := ts.call(t, "GET", "/api/v1/budgets", bootstrap, "")
	res = ts.call(t, "PUT", "/api/v1/budgets", bootstrap, read.body)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.NotContains(t, res.body, "spent", "PUT answers the budgets alone")
	res = ts.call(t, "PUT", "/api/v1/budgets", bootstrap, `{"id":"support-day","scope":"app","match":"support","window":"day","limitRequests":5,"spentt":1}`)
	require.Equal(t, http.StatusBadRequest, res.status, "a key neither a budget's nor GET's is refused: %s", res.body)
	rep := ts.call(t, "GET", "/api/v1/spend?scope=app", bootstrap, "")
	require.Equal(t, http.StatusOK, rep.status, rep.body)
	items := rep.json["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "support", items[0].(map[string]any)["key"])

	// The other tenant sees none of it, and cannot delete it.
	assert.Empty(t, ts.call(t, "GET", "/api/v1/budgets", theirToken, "").json["budgets"])
	assert.Empty(t, ts.call(t, "GET", "/api/v1/spend?scope=app", theirToken, "").json["items"])
	assert.Equal(t, http.StatusNotFound, ts.call(t, "DELETE", "/api/v1/budgets/support-day", theirToken, "").status)
	assert.Len(t, ts.call(t, "GET", "/api/v1/budgets", bootstrap, "").json["budgets"], 1)

	assert.Equal(t, http.StatusNoContent, ts.call(t, "DELETE", "/api/v1/budgets/support-day", bootstrap, "").status)
	assert.Contains(t, ts.call(t, "GET", "/api/v1/audit?action=budgets.updated", bootstrap, "").body, "support-day")
}

// A budget set on one replica is enforced on another that had read the
// tenant's budgets before (its cache follows the change), and deleting it
// there frees the first.
func TestBudgetsFollowAcrossReplicas(t *testing.T) {
	ts := replicas(t, 2, bootstrap, nil)
	chat := func(s *testServer) response {
		return s.call(t, "POST", "/v1/chat/completions", bootstrap,
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`+ids.New("q")+`"}]}`, "X-Svc-App", "support")
	}
	require.Equal(t, http.StatusOK, chat(ts[1]).status, "the second replica reads the tenant's budgets: none")

	res := ts[0].call(t, "PUT", "/api/v1/budgets", bootstrap, `{"id":"support-day","scope":"app","match":"support","window":"day","limitRequests":1}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.Eventually(t, func() bool {
		res := chat(ts[1])
		return res.status == http.StatusTooManyRequests && res.errorCode() == "budget_exceeded"
	}, 10*time.Second, 20*time.Millisecond, "the second replica enforces the budget set on the first")

	assert.Equal(t, http.StatusNoContent, ts[1].call(t, "DELETE", "/api/v1/budgets/support-day", bootstrap, "").status)
	require.Eventually(t, func() bool { return chat(ts[0]).status == http.StatusOK },
		10*time.Second, 20*time.Millisecond, "the first replica drops the budget deleted on the second")
}
