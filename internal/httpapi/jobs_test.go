package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/tenant"
)

func jobIDs(t *testing.T, res response) []string {
	t.Helper()
	list, ok := res.json["jobs"].([]any)
	require.True(t, ok, res.body)
	out := make([]string, len(list))
	for i, j := range list {
		out[i] = j.(map[string]any)["id"].(string)
	}
	return out
}

func TestJobsAPI(t *testing.T) {
	ctx := context.Background()
	ts := newServer(t, bootstrap, nil)
	res := ts.call(t, "GET", "/api/v1/jobs", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.JSONEq(t, `{"jobs": [], "stats": {"queued": 0, "running": 0, "succeeded": 0, "failed": 0}}`, res.body)

	done, err := ts.jobs.Enqueue(ctx, tenant.DefaultID, "test.ok", map[string]any{"n": 1})
	require.NoError(t, err)
	failed, err := ts.jobs.Enqueue(ctx, tenant.DefaultID, "test.bad", nil)
	require.NoError(t, err)
	_, err = ts.jobs.RunDue(ctx)
	require.NoError(t, err)
	queued, err := ts.jobs.Enqueue(ctx, tenant.DefaultID, "test.ok", nil)
	require.NoError(t, err)
	other, err := ts.store.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	theirs, err := ts.jobs.Enqueue(ctx, other.ID, "test.ok", nil)
	require.NoError(t, err)

	res = ts.call(t, "GET", "/api/v1/jobs", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, []string{queued.ID, failed.ID, done.ID}, jobIDs(t, res), "newest first, the tenant's own")
	assert.Equal(t, map[string]any{"queued": 1.0, "running": 0.0, "succeeded": 1.0, "failed": 1.0}, res.json["stats"])
	last := res.json["jobs"].([]any)[2].(map[string]any)
	for _, k := range []string{"id", "type", "payload", "status", "attempts", "maxAttempts", "lastError", "runAt", "createdAt", "updatedAt"} {
		assert.Contains(t, last, k)
	}
	assert.Equal(t, map[string]any{"n": 1.0}, last["payload"])
	assert.Equal(t, "succeeded", last["status"])
	assert.InDelta(t, 1, last["attempts"], 0)

	res = ts.call(t, "GET", "/api/v1/jobs?status=failed", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, []string{failed.ID}, jobIDs(t, res))
	assert.Equal(t, "refused by the test", res.json["jobs"].([]any)[0].(map[string]any)["lastError"])
	assert.InDelta(t, 1, res.json["stats"].(map[string]any)["queued"], 0, "stats count every state")
	res = ts.call(t, "GET", "/api/v1/jobs?limit=1", bootstrap, "")
	assert.Equal(t, []string{queued.ID}, jobIDs(t, res))

	// Any valid identity may read its tenant's jobs; never another's.
	_, member, err := ts.keys.Create(ctx, tenant.DefaultID, auth.NewKey{Name: "reader", Mode: auth.Observe})
	require.NoError(t, err)
	res = ts.call(t, "GET", "/api/v1/jobs", member, "")
	require.Equal(t, http.StatusOK, res.status, "no admin right needed")
	assert.Len(t, jobIDs(t, res), 3)
	_, theirKey, err := ts.keys.Create(ctx, other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize})
	require.NoError(t, err)
	res = ts.call(t, "GET", "/api/v1/jobs", theirKey, "")
	assert.Equal(t, []string{theirs.ID}, jobIDs(t, res))
	assert.Equal(t, map[string]any{"queued": 1.0, "running": 0.0, "succeeded": 0.0, "failed": 0.0}, res.json["stats"])

	for _, q := range []string{"status=done", "status=FAILED", "limit=abc", "limit=-1"} {
		res := ts.call(t, "GET", "/api/v1/jobs?"+q, bootstrap, "")
		assert.Equal(t, http.StatusBadRequest, res.status, q)
		assert.Equal(t, "invalid_request", res.errorCode(), q)
	}
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "GET", "/api/v1/jobs", "", "").status)
}
