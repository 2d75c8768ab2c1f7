package governance_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

const webRules = `policies:
  - id: pay-needs-a-person
    target: web
    when: web.action == "submit" && web.host == "pay.example.com"
    effect: require_approval
    reason: payments need approval
  - id: no-admin-pages
    target: web
    when: web.url.contains("/admin")
    effect: deny
    reason: admin pages are off limits
`

func governor(t *testing.T) *governance.Governor {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webRules), 0o600))
	engine, err := policy.NewEngine(dir)
	require.NoError(t, err)
	s := storetest.Open(t)
	logger := hclog.NewNullLogger()
	return governance.New(governance.Options{Policies: engine, Agents: s, Logger: logger,
		Approvals: approval.NewService(s, settings.NewService(s, nil, nil), nil), Audit: audit.NewLog(s, logger, nil)})
}

func webCall(id *auth.Identity, url string) governance.Call {
	return governance.Call{ID: id, Target: policy.Web, Describe: func() (json.RawMessage, string) {
		req := json.RawMessage(`{"action":"submit","url":"` + url + `"}`)
		return req, governance.Fingerprint(policy.Web, id, req)
	}}
}

// The web capability asks the governor about each action.
func TestWebActionsAreGoverned(t *testing.T) {
	ctx := context.Background()
	g := governor(t)
	optimize := &auth.Identity{TenantID: tenant.DefaultID, Mode: auth.Optimize, Via: auth.ViaOpen, Agent: "browser"}
	submit := func(id *auth.Identity, url, host string) governance.Decision {
		d, err := g.Decide(ctx, webCall(id, url), &policy.Input{Web: policy.WebAction{Action: "submit", URL: url, Host: host, Level: 3}})
		require.NoError(t, err)
		return d
	}

	d := submit(optimize, "https://pay.example.com/transfer", "pay.example.com")
	assert.Equal(t, policy.RequireApproval, d.Verdict.Decision)
	assert.True(t, d.Enforced)
	assert.NotEmpty(t, d.Verdict.ApprovalID, "a held action opens an approval")
	require.NotNil(t, d.Standing)
	assert.Equal(t, ledger.TrustUnverified, d.Standing.Trust)

	d = submit(optimize, "https://shop.example.com/admin/users", "shop.example.com")
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.True(t, d.Enforced)

	observe := &auth.Identity{TenantID: tenant.DefaultID, Mode: auth.Observe, Via: auth.ViaOpen}
	d = submit(observe, "https://shop.example.com/admin/users", "shop.example.com")
	assert.Equal(t, policy.Deny, d.Verdict.Decision, "observe mode records the verdict")
	assert.False(t, d.Enforced, "but never enforces it")
	assert.Nil(t, d.Standing, "no agent, no standing")

	advisory := webCall(optimize, "https://shop.example.com/admin")
	advisory.Advisory = true
	d, err := g.Decide(ctx, advisory, &policy.Input{Web: policy.WebAction{Action: "submit", URL: "https://shop.example.com/admin"}})
	require.NoError(t, err)
	assert.False(t, d.Enforced, "an action that already happened is only recorded")

	d = submit(optimize, "https://docs.example.com/", "docs.example.com")
	assert.Equal(t, policy.Allow, d.Verdict.Decision)
	assert.True(t, d.Evaluated)
}

func TestSideEffectsOfReplayAndShadowRunsAreSuppressed(t *testing.T) {
	e := ledger.Event{Seq: 3}
	for mode, want := range map[string]string{"optimize": ledger.EffectPlanned, "observe": ledger.EffectPlanned,
		ledger.ModeReplay: ledger.EffectSuppressed, ledger.ModeShadow: ledger.EffectSuppressed} {
		se := ledger.NewSideEffect(tenant.DefaultID, "run_1", mode, e, "refund", 3, json.RawMessage(`{}`))
		assert.Equal(t, want, se.State, mode)
		assert.Equal(t, 3, se.PlannedSeq)
	}
}
