package governance_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
	g, _ := governorWith(t, webRules)
	return g
}

func governorWith(t *testing.T, rules string) (*governance.Governor, *approval.Service) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(rules), 0o600))
	engine, err := policy.NewEngine(dir)
	require.NoError(t, err)
	s := storetest.Open(t)
	logger := hclog.NewNullLogger()
	approvals := approval.NewService(s, settings.NewService(s, nil, nil), nil)
	return governance.New(governance.Options{Policies: engine, Agents: s, Logger: logger,
		Approvals: approvals, Audit: audit.NewLog(s, logger, nil)}), approvals
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

// A rule that could not judge a call blocks it, and opens no approval:
// neither when it fails on its input nor when its cost limit stops it.
func TestARuleThatFailsOpensNoApproval(t *testing.T) {
	ctx := context.Background()
	g, approvals := governorWith(t, `policies:
  - id: account-needs-a-person
    target: web
    when: web.fields["account"].startsWith("DE")
    effect: require_approval
  - id: endless
    target: web
    when: web.fields["note"].split("").join(web.fields["note"]) == ""
    effect: require_approval
`)
	id := &auth.Identity{TenantID: tenant.DefaultID, Mode: auth.Optimize, Via: auth.ViaKey, KeyID: "key_1"}
	note := strings.Repeat("n", 20_000)
	for _, fields := range []map[string]string{{"note": "x"}, {"account": "FR76", "note": note}} {
		d, err := g.Decide(ctx, webCall(id, "https://pay.example.com/"), &policy.Input{Web: policy.WebAction{
			Action: "submit", URL: "https://pay.example.com/", Host: "pay.example.com", Level: 3, Fields: fields}})
		require.NoError(t, err)
		assert.Equal(t, policy.RequireApproval, d.Verdict.Decision)
		assert.True(t, d.Verdict.Failed())
		assert.True(t, d.Enforced, "it is blocked")
		assert.Empty(t, d.Verdict.ApprovalID, "and no approval is opened")
	}
	pending, err := approvals.List(ctx, tenant.DefaultID, approval.Filter{Status: approval.Pending})
	require.NoError(t, err)
	assert.Empty(t, pending)

	// The same rule, when it can judge, holds the call as before.
	d, err := g.Decide(ctx, webCall(id, "https://pay.example.com/de"), &policy.Input{Web: policy.WebAction{
		Action: "submit", URL: "https://pay.example.com/de", Host: "pay.example.com", Level: 3,
		Fields: map[string]string{"account": "DE89", "note": "x"}}})
	require.NoError(t, err)
	assert.False(t, d.Verdict.Failed())
	assert.NotEmpty(t, d.Verdict.ApprovalID)
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
