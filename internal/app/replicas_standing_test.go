package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/tenant"
)

// standingRules deny one model, and every call of a restricted agent.
const standingRules = `policies:
  - id: no-big-models
    target: chat
    when: request.model == "gpt-4o"
    effect: deny
    reason: small models only
  - id: restricted-agents
    target: chat
    when: agent.trust == "restricted"
    effect: deny
    reason: this agent is restricted
`

// Denies spread over two replicas restrict the agent on both: each
// decision moves the one standing they share, and the replica that
// restricted it tells the other at once.
func TestDeniesOnEveryReplicaRestrictTheAgentOnBoth(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "chat.yaml"), []byte(standingRules), 0o600))
	a, b := twoReplicasEnv(t, never, newGatedProvider(true), map[string]string{"SVC_POLICY_DIR": dir})
	chat := func(r *app.App, model string) int {
		req := httptest.NewRequest("POST", "/v1/chat/completions",
			strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+replicaToken)
		req.Header.Set(auth.HeaderAgent, "bot")
		w := httptest.NewRecorder()
		r.Handler().ServeHTTP(w, req)
		return w.Code
	}
	require.Equal(t, http.StatusOK, chat(b, "gpt-4o-mini"), "B has met the agent")
	for i, r := range []*app.App{a, b, a} { // the last deny is A's
		require.Equal(t, http.StatusForbidden, chat(r, "gpt-4o"), "deny %d", i+1)
	}

	// A's notice of the restriction reaches B before a later one of A's:
	// once B refuses a key A revoked, it has heard of the agent too.
	ctx := context.Background()
	k, token, err := a.Keys.Create(ctx, tenant.DefaultID, auth.NewKey{Name: "marker", Mode: auth.Observe, Admin: true})
	require.NoError(t, err)
	status, body := call(b, "GET", "/api/v1/settings", "", token, "")
	require.Equal(t, http.StatusOK, status, body)
	_, err = a.Keys.Revoke(ctx, tenant.DefaultID, k.ID)
	require.NoError(t, err)
	becomes(t, http.StatusUnauthorized, func() (int, string) { return call(b, "GET", "/api/v1/settings", "", token, "") },
		"B hears A's notices")

	assert.Equal(t, http.StatusForbidden, chat(b, "gpt-4o-mini"), "B sees the agent restricted")
	assert.Equal(t, http.StatusForbidden, chat(a, "gpt-4o-mini"), "and so does A")
	st, ok, err := a.Store.AgentStanding(ctx, tenant.DefaultID, "bot")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, ledger.TrustRestricted, st.Trust)
	assert.Equal(t, int64(6), st.Decisions, "every decision of both counted once")

	// The runs' batches carry standings the database has passed: they
	// leave it as it is.
	for _, r := range []*app.App{a, b} {
		require.NoError(t, r.Recorder.Sync(ctx))
	}
	again, _, err := b.Store.AgentStanding(ctx, tenant.DefaultID, "bot")
	require.NoError(t, err)
	assert.Equal(t, st, again)
}
