package governance_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
)

// decideRules has a rule of each effect for web actions, ones that fail on
// some input, one on the agent's trust and one on the tenant and mode.
const decideRules = `policies:
  - id: example-sites
    target: web
    when: web.host.endsWith("example.com")
    effect: allow
    reason: our own sites
  - id: no-admin-pages
    target: web
    when: web.url.contains("/admin")
    effect: deny
    reason: admin pages are off limits
  - id: pay-needs-a-person
    target: web
    when: web.host == "pay.example.com"
    effect: require_approval
    reason: payments need approval
  - id: bank-accounts
    target: web
    when: web.host == "bank.example.com" && web.fields["account"].startsWith("DE")
    effect: require_approval
    reason: German accounts need approval
  - id: vault-notes
    target: web
    when: web.host == "vault.example.com" && web.fields["note"] == "open"
    effect: deny
    reason: the vault stays shut
  - id: restricted-agents
    target: web
    when: agent.trust == "restricted"
    effect: deny
    reason: restricted agents browse nothing
  - id: probe-in-observed-b
    target: tool
    when: tool.name == "probe" && tenant == "t_b" && mode == "observe"
    effect: deny
    reason: probes are for tenant b in observe mode
`

const (
	tenantA = "t_a"
	tenantB = "t_b"
)

// key is a caller with an API key of tenant A in optimize mode.
func key() *auth.Identity {
	return &auth.Identity{TenantID: tenantA, Mode: auth.Optimize, Via: auth.ViaKey, KeyID: "key_1",
		App: "billing", Agent: "", Subject: "cust-7"}
}

// action is a web action on url at host, and the call that asks about it;
// described counts the calls of Describe.
type action struct {
	call      governance.Call
	in        *policy.Input
	described *int
}

func webAction(id *auth.Identity, host, url string, fields map[string]string) action {
	n := 0
	req := json.RawMessage(`{"action":"submit","url":"` + url + `"}`)
	return action{
		call: governance.Call{ID: id, RunID: "run_1", Target: policy.Web, Describe: func() (json.RawMessage, string) {
			n++
			return req, governance.Fingerprint(policy.Web, id, req)
		}},
		in:        &policy.Input{Web: policy.WebAction{Action: "submit", URL: url, Host: host, Level: 3, Fields: fields}},
		described: &n,
	}
}

func (w *world) decide(t *testing.T, a action) governance.Decision {
	t.Helper()
	d, err := w.gov.Decide(context.Background(), a.call, a.in)
	require.NoError(t, err)
	return d
}

func TestAnAllowIsNotRecorded(t *testing.T) {
	w := newWorld(t, decideRules)
	a := webAction(key(), "docs.example.com", "https://docs.example.com/", nil)
	d := w.decide(t, a)
	assert.Equal(t, policy.Allow, d.Verdict.Decision)
	assert.Equal(t, []policy.RuleResult{{ID: "example-sites", Effect: policy.Allow, Reason: "our own sites"}}, d.Verdict.Rules)
	assert.True(t, d.Evaluated, "rules of the target were in force")
	assert.False(t, d.Enforced)
	assert.Nil(t, d.Standing, "no agent, no standing")
	assert.Zero(t, *a.described, "an allow needs no description")

	chat, err := w.gov.Decide(context.Background(), governance.Call{ID: key(), Target: policy.Chat}, &policy.Input{})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, chat.Verdict.Decision)
	assert.False(t, chat.Evaluated, "no chat rules: a bare allow")

	assert.Empty(t, w.audit.Events(), "a plain allow is worth no audit event")
	assert.Empty(t, w.notes.all())
	assert.Empty(t, w.approvals.all())
	assert.True(t, w.gov.Has(policy.Web))
	assert.False(t, w.gov.Has(policy.Chat))
	assert.Len(t, w.gov.Rules(), 7)
}

func TestADenyIsEnforcedAuditedAndNotified(t *testing.T) {
	w := newWorld(t, decideRules)
	id := key()
	d := w.decide(t, webAction(id, "shop.example.com", "https://shop.example.com/admin", nil))
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.True(t, d.Enforced)
	assert.Empty(t, d.Verdict.ApprovalID)

	events := w.audit.Events()
	require.Len(t, events, 1)
	e := events[0]
	assert.Equal(t, tenantA, e.TenantID)
	assert.Equal(t, "key:key_1", e.Actor)
	assert.Equal(t, "policy.web", e.Action)
	assert.Equal(t, audit.Deny, e.Decision)
	assert.Equal(t, "run_1", e.Target)
	assert.Equal(t, map[string]any{"target": "web", "rules": d.Verdict.Rules, "enforced": true, "mode": "optimize",
		"app": "billing", "agent": "", "subject": "cust-7"}, e.Details)

	sent := w.notes.all()
	require.Len(t, sent, 1)
	assert.Equal(t, note{tenantA, governance.EventPolicyBlocked,
		map[string]any{"runId": "run_1", "target": "web", "verdict": d.Verdict}}, sent[0])

	// Observe mode, and a call that already happened: recorded, not
	// enforced, nobody told.
	observe := key()
	observe.Mode = auth.Observe
	d = w.decide(t, webAction(observe, "shop.example.com", "https://shop.example.com/admin", nil))
	assert.Equal(t, policy.Deny, d.Verdict.Decision, "observe mode records the verdict")
	assert.False(t, d.Enforced, "but never enforces it")
	advisory := webAction(id, "shop.example.com", "https://shop.example.com/admin", nil)
	advisory.call.Advisory = true
	d = w.decide(t, advisory)
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.False(t, d.Enforced, "an advisory call is only recorded")

	events = w.audit.Events()
	require.Len(t, events, 3)
	assert.Equal(t, false, events[1].Details["enforced"])
	assert.Equal(t, "observe", events[1].Details["mode"])
	assert.Equal(t, false, events[2].Details["enforced"])
	assert.Len(t, w.notes.all(), 1, "only an enforced deny is a block worth a webhook")
}

// A governor without a notifier decides the same.
func TestNoNotifierIsNeeded(t *testing.T) {
	w := newWorld(t, decideRules)
	g := governance.New(governance.Options{Policies: engine(t, decideRules), Agents: w.agents,
		Approvals: approval.NewService(w.approvals, fixedSettings{ttl: time.Hour, pending: 5}, w.clock.Now),
		Audit:     audit.NewLog(w.audit, nil, w.clock.Now)})
	for _, a := range []action{
		webAction(key(), "shop.example.com", "https://shop.example.com/admin", nil),
		webAction(key(), "pay.example.com", "https://pay.example.com/", nil),
	} {
		d, err := g.Decide(context.Background(), a.call, a.in)
		require.NoError(t, err)
		assert.True(t, d.Enforced)
	}
	assert.Len(t, w.approvals.all(), 1)
}

func TestAHeldRequestOpensOneApproval(t *testing.T) {
	w := newWorld(t, decideRules)
	id := key()
	id.Agent = "bot"
	a := webAction(id, "pay.example.com", "https://pay.example.com/transfer", nil)
	d := w.decide(t, a)
	assert.Equal(t, policy.RequireApproval, d.Verdict.Decision)
	assert.True(t, d.Enforced)
	require.NotEmpty(t, d.Verdict.ApprovalID, "a held request opens an approval")
	assert.Equal(t, 1, *a.described)

	list := w.approvals.all()
	require.Len(t, list, 1)
	got := list[0]
	req, fp := a.call.Describe()
	assert.Equal(t, d.Verdict.ApprovalID, got.ID)
	assert.Equal(t, tenantA, got.TenantID)
	assert.Equal(t, approval.Pending, got.Status)
	assert.Equal(t, "web", got.Target)
	assert.Equal(t, "run_1", got.RunID)
	assert.Equal(t, fp, got.Fingerprint)
	assert.JSONEq(t, string(req), string(got.Request))
	assert.Equal(t, approval.Requester{Actor: "key:key_1", App: "billing", Agent: "bot", Subject: "cust-7"}, got.RequestedBy)
	assert.Equal(t, []approval.Rule{{ID: "pay-needs-a-person", Effect: "require_approval", Reason: "payments need approval"}},
		got.Rules, "the approval names the rules that held it, not the allow rule that matched too")
	assert.Equal(t, w.clock.Now(), got.CreatedAt)

	sent := w.notes.all()
	require.Len(t, sent, 1)
	assert.Equal(t, governance.EventApprovalRequested, sent[0].event)
	carried := sent[0].data["approval"].(map[string]any)
	assert.Equal(t, got.ID, carried["id"])
	assert.Equal(t, approval.Pending, carried["status"])
	assert.NotContains(t, carried, "request", "a webhook does not carry the request itself")
	events := w.audit.Events()
	require.Len(t, events, 1)
	assert.Equal(t, audit.RequireApproval, events[0].Decision)
	assert.Equal(t, got.ID, events[0].Details["approvalId"])

	// Asking again finds the pending approval; nobody is told twice.
	again := w.decide(t, webAction(id, "pay.example.com", "https://pay.example.com/transfer", nil))
	assert.Equal(t, got.ID, again.Verdict.ApprovalID)
	assert.Len(t, w.approvals.all(), 1)
	assert.Len(t, w.notes.all(), 1)

	// Another request is another approval.
	other := w.decide(t, webAction(id, "pay.example.com", "https://pay.example.com/other", nil))
	assert.NotEqual(t, got.ID, other.Verdict.ApprovalID)
	assert.Len(t, w.approvals.all(), 2)

	// A deny that matches beside it wins, and holds nothing.
	d = w.decide(t, webAction(id, "pay.example.com", "https://pay.example.com/admin", nil))
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.Empty(t, d.Verdict.ApprovalID)
	assert.Len(t, w.approvals.all(), 2)
}

// Where nobody waits for a person, nothing is held: observe mode, a call
// that already happened, a step of another call.
func TestNothingIsHeldWhereNothingWaits(t *testing.T) {
	w := newWorld(t, decideRules)
	observe := key()
	observe.Mode = auth.Observe
	for name, tc := range map[string]struct {
		a        action
		enforced bool
	}{
		"observe": {a: webAction(observe, "pay.example.com", "https://pay.example.com/", nil)},
		"advisory": {a: func() action {
			a := webAction(key(), "pay.example.com", "https://pay.example.com/", nil)
			a.call.Advisory = true
			return a
		}()},
		"unheld": {a: func() action {
			a := webAction(key(), "pay.example.com", "https://pay.example.com/", nil)
			a.call.Unheld = true
			return a
		}(), enforced: true},
	} {
		d := w.decide(t, tc.a)
		assert.Equal(t, policy.RequireApproval, d.Verdict.Decision, name)
		assert.Equal(t, tc.enforced, d.Enforced, name)
		assert.Empty(t, d.Verdict.ApprovalID, name)
	}
	assert.Empty(t, w.approvals.all(), "no approval was opened")
	assert.Empty(t, w.notes.all())
	assert.Len(t, w.audit.Events(), 3, "each verdict is recorded")
}

func TestAnApprovedRequestPassesUntilItsExceptionEnds(t *testing.T) {
	w := newWorld(t, decideRules)
	ctx := context.Background()
	id := key()
	held := w.decide(t, webAction(id, "pay.example.com", "https://pay.example.com/transfer", nil))
	admin := &auth.Identity{TenantID: tenantA, Via: auth.ViaSession, UserID: "usr_admin", Admin: true}
	a, err := w.gov.DecideApproval(ctx, admin, held.Verdict.ApprovalID, true, "confirmed by phone")
	require.NoError(t, err)
	assert.Equal(t, approval.Approved, a.Status)

	d := w.decide(t, webAction(id, "pay.example.com", "https://pay.example.com/transfer", nil))
	assert.Equal(t, policy.Allow, d.Verdict.Decision, "the approved request passes")
	assert.Equal(t, a.ID, d.Verdict.ApprovalID, "naming the approval that let it")
	assert.False(t, d.Enforced)
	last := w.audit.Events()[len(w.audit.Events())-1]
	assert.Equal(t, audit.Allow, last.Decision, "an allow by approval is recorded")
	assert.Equal(t, a.ID, last.Details["approvalId"])

	observe := key()
	observe.Mode = auth.Observe
	d = w.decide(t, webAction(observe, "pay.example.com", "https://pay.example.com/transfer", nil))
	assert.Equal(t, a.ID, d.Verdict.ApprovalID, "the fingerprint does not depend on the mode")

	for name, other := range map[string]action{
		"another request":  webAction(id, "pay.example.com", "https://pay.example.com/more", nil),
		"another app":      webAction(&auth.Identity{TenantID: tenantA, Mode: auth.Optimize, Via: auth.ViaKey, KeyID: "key_1", App: "ops", Subject: "cust-7"}, "pay.example.com", "https://pay.example.com/transfer", nil),
		"another tenant's": webAction(&auth.Identity{TenantID: tenantB, Mode: auth.Optimize, Via: auth.ViaKey, KeyID: "key_1", App: "billing", Subject: "cust-7"}, "pay.example.com", "https://pay.example.com/transfer", nil),
	} {
		d := w.decide(t, other)
		assert.Equal(t, policy.RequireApproval, d.Verdict.Decision, name)
		assert.NotEqual(t, a.ID, d.Verdict.ApprovalID, name)
	}

	w.clock.Advance(exceptionTTL)
	d = w.decide(t, webAction(id, "pay.example.com", "https://pay.example.com/transfer", nil))
	assert.Equal(t, policy.RequireApproval, d.Verdict.Decision, "the exception has ended")
	assert.NotEqual(t, a.ID, d.Verdict.ApprovalID, "and the request is held again")
}

// A verdict a rule could not reach blocks, is not passed by an approval of
// the identical request, and opens none.
func TestARuleThatFailsBlocksWithoutApproval(t *testing.T) {
	w := newWorld(t, decideRules)
	id := key()
	a := webAction(id, "bank.example.com", "https://bank.example.com/pay", map[string]string{"iban": "FR76"})
	_, fp := a.call.Describe()
	*a.described = 0
	at := w.clock.Now().Add(time.Hour)
	w.approvals.list = append(w.approvals.list, approval.Approval{ID: "apr_old", TenantID: tenantA, Status: approval.Approved,
		Target: "web", Fingerprint: fp, ExpiresAt: &at})

	d := w.decide(t, a)
	assert.Equal(t, policy.RequireApproval, d.Verdict.Decision)
	require.True(t, d.Verdict.Failed(), "the rule could not read a missing field")
	assert.True(t, d.Enforced, "the call is blocked")
	assert.Empty(t, d.Verdict.ApprovalID, "no approval passes it or is opened")
	assert.Zero(t, *a.described)
	assert.Len(t, w.approvals.all(), 1)
	assert.Empty(t, w.notes.all())
	require.Len(t, w.audit.Events(), 1, "the failure is recorded")
	assert.Equal(t, "policy_error", governance.BlockError(d.Verdict).Code)

	// A deny rule that fails blocks as a deny, still a policy error.
	d = w.decide(t, webAction(id, "vault.example.com", "https://vault.example.com/", nil))
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.True(t, d.Verdict.Failed())
	assert.False(t, d.Verdict.Denied())
	assert.True(t, d.Enforced)
	assert.Equal(t, "policy_error", governance.BlockError(d.Verdict).Code)

	// When the rule can judge, it holds as before.
	d = w.decide(t, webAction(id, "bank.example.com", "https://bank.example.com/pay", map[string]string{"account": "DE89"}))
	assert.False(t, d.Verdict.Failed())
	assert.NotEmpty(t, d.Verdict.ApprovalID)
}

func TestACallerAtItsPendingLimitGets429(t *testing.T) {
	w := newWorld(t, decideRules)
	id := key()
	for i := range pendingLimit {
		d := w.decide(t, webAction(id, "pay.example.com", "https://pay.example.com/"+string(rune('a'+i)), nil))
		require.NotEmpty(t, d.Verdict.ApprovalID)
	}
	audited := len(w.audit.Events())
	a := webAction(id, "pay.example.com", "https://pay.example.com/z", nil)
	d, err := w.gov.Decide(context.Background(), a.call, a.in)
	require.Error(t, err)
	assert.Equal(t, governance.Decision{}, d)
	assert.True(t, errs.Is(err, errs.RateLimited))
	var e *errs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "too_many_pending_approvals", e.Code)
	assert.Equal(t, approval.RetryPending, e.Retry)
	assert.Len(t, w.approvals.all(), pendingLimit)
	assert.Len(t, w.audit.Events(), audited, "a refused call records no verdict")

	// Asking again for a pending one is not a new approval; another caller
	// has a limit of its own.
	d = w.decide(t, webAction(id, "pay.example.com", "https://pay.example.com/a", nil))
	assert.NotEmpty(t, d.Verdict.ApprovalID)
	other := key()
	other.KeyID = "key_2"
	d = w.decide(t, webAction(other, "pay.example.com", "https://pay.example.com/z", nil))
	assert.NotEmpty(t, d.Verdict.ApprovalID)
}

// A failure of the approval store fails the call rather than letting it
// through.
func TestAnApprovalStoreFailureFailsTheCall(t *testing.T) {
	disk := errors.New("disk I/O error")
	for name, set := range map[string]func(*memApprovals){
		"exception": func(m *memApprovals) { m.failException = disk },
		"open":      func(m *memApprovals) { m.failOpen = disk },
	} {
		w := newWorld(t, decideRules)
		set(w.approvals)
		a := webAction(key(), "pay.example.com", "https://pay.example.com/", nil)
		d, err := w.gov.Decide(context.Background(), a.call, a.in)
		require.ErrorIs(t, err, disk, name)
		assert.Equal(t, governance.Decision{}, d, name)
		assert.Empty(t, w.audit.Events(), name)
		// An allow does not touch the approvals.
		d = w.decide(t, webAction(key(), "docs.example.com", "https://docs.example.com/", nil))
		assert.Equal(t, policy.Allow, d.Verdict.Decision, name)
	}
}

func TestTheInputNamesTheCallersTenantAndMode(t *testing.T) {
	w := newWorld(t, decideRules)
	probe := func(tenantID string, mode auth.Mode) policy.Effect {
		id := &auth.Identity{TenantID: tenantID, Mode: mode, Via: auth.ViaOpen}
		in := &policy.Input{Tenant: tenantB, Mode: "observe", Tool: policy.ToolCall{Name: "probe"}} // the caller's say is overwritten
		d, err := w.gov.Decide(context.Background(), governance.Call{ID: id, Target: policy.Tool}, in)
		require.NoError(t, err)
		assert.Equal(t, tenantID, in.Tenant)
		assert.Equal(t, string(mode), in.Mode)
		return d.Verdict.Decision
	}
	assert.Equal(t, policy.Deny, probe(tenantB, auth.Observe))
	assert.Equal(t, policy.Allow, probe(tenantA, auth.Observe))
	assert.Equal(t, policy.Allow, probe(tenantB, auth.Optimize))
}

func TestAnAgentsStandingMovesWithItsVerdicts(t *testing.T) {
	w := newWorld(t, decideRules)
	bot := key()
	bot.Agent = "bot"
	docs := func(id *auth.Identity) governance.Decision {
		return w.decide(t, webAction(id, "docs.example.com", "https://docs.example.com/", nil))
	}

	d := docs(bot)
	require.NotNil(t, d.Standing)
	assert.Equal(t, ledger.Standing{Trust: ledger.TrustUnverified, AllowStreak: 1, Decisions: 1}, *d.Standing)
	for range ledger.TrustAfter - 1 {
		d = docs(bot)
	}
	assert.Equal(t, ledger.TrustTrusted, d.Standing.Trust, "a run of allowed calls earns trust")
	assert.Equal(t, 1, w.agents.reads, "the store is read once, on first sight")

	for range ledger.RestrictAfter {
		d = w.decide(t, webAction(bot, "shop.example.com", "https://shop.example.com/admin", nil))
	}
	assert.Equal(t, ledger.TrustRestricted, d.Standing.Trust, "repeated denies restrict the agent")
	d = docs(bot)
	assert.Equal(t, policy.Deny, d.Verdict.Decision, "and the policies see it")
	assert.Equal(t, "restricted-agents", d.Verdict.Rules[len(d.Verdict.Rules)-1].ID)

	// The same name in another tenant is another agent.
	other := &auth.Identity{TenantID: tenantB, Mode: auth.Optimize, Via: auth.ViaOpen, Agent: "bot"}
	d = docs(other)
	assert.Equal(t, policy.Allow, d.Verdict.Decision)
	assert.Equal(t, int64(1), d.Standing.Decisions)

	// A standing the store kept is where an agent starts.
	w.agents.book[agentKey{tenantA, "returning"}] = ledger.Standing{Trust: ledger.TrustRestricted, Denies: 3, Decisions: 40}
	back := key()
	back.Agent = "returning"
	d = docs(back)
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.Equal(t, int64(41), d.Standing.Decisions)

	w.gov.SaveStanding(context.Background(), tenantA, "bot", *d.Standing, w.clock.Now())
	assert.Equal(t, *d.Standing, w.agents.saved[agentKey{tenantA, "bot"}])
}

// Without its standing, an agent is judged as a new one and the call goes
// on.
func TestAnUnreadableStandingCountsAsNew(t *testing.T) {
	w := newWorld(t, decideRules)
	w.agents.book[agentKey{tenantA, "bot"}] = ledger.Standing{Trust: ledger.TrustRestricted, Denies: 3}
	w.agents.fail = errors.New("database is locked")
	bot := key()
	bot.Agent = "bot"
	d := w.decide(t, webAction(bot, "docs.example.com", "https://docs.example.com/", nil))
	assert.Equal(t, policy.Allow, d.Verdict.Decision, "judged as a new agent, not a restricted one")
	assert.Nil(t, d.Standing, "no standing to report")

	w.gov.SaveStanding(context.Background(), tenantA, "bot", ledger.NewStanding(), w.clock.Now()) // logged, not fatal
	assert.Empty(t, w.agents.saved)
}

func TestDecideApprovalAuditsAndNotifies(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, decideRules)
	admin := &auth.Identity{TenantID: tenantA, Via: auth.ViaSession, UserID: "usr_admin", Admin: true}
	for _, approve := range []bool{true, false} {
		url := "https://pay.example.com/" + map[bool]string{true: "yes", false: "no"}[approve]
		held := w.decide(t, webAction(key(), "pay.example.com", url, nil))
		before := len(w.audit.Events())
		a, err := w.gov.DecideApproval(ctx, admin, held.Verdict.ApprovalID, approve, "  checked  ")
		require.NoError(t, err)
		want := map[bool]string{true: approval.Approved, false: approval.Rejected}[approve]
		assert.Equal(t, want, a.Status)
		assert.Equal(t, "user:usr_admin", a.DecidedBy)

		events := w.audit.Events()
		require.Len(t, events, before+1)
		e := events[before]
		assert.Equal(t, "approval."+want, e.Action)
		assert.Equal(t, map[bool]string{true: audit.Allow, false: audit.Deny}[approve], e.Decision)
		assert.Equal(t, a.ID, e.Target)
		assert.Equal(t, map[string]any{"reason": "checked", "target": "web", "runId": "run_1"}, e.Details)

		sent := w.notes.all()
		last := sent[len(sent)-1]
		assert.Equal(t, governance.EventApprovalDecided, last.event)
		carried := last.data["approval"].(map[string]any)
		assert.Equal(t, want, carried["status"])
		assert.Equal(t, "checked", carried["reason"])
		assert.NotContains(t, carried, "request")
	}

	before, sent := len(w.audit.Events()), len(w.notes.all())
	_, err := w.gov.DecideApproval(ctx, admin, "apr_unknown", true, "ok")
	require.Error(t, err)
	other := &auth.Identity{TenantID: tenantB, Via: auth.ViaSession, UserID: "usr_b", Admin: true}
	held := w.decide(t, webAction(key(), "pay.example.com", "https://pay.example.com/third", nil))
	_, err = w.gov.DecideApproval(ctx, other, held.Verdict.ApprovalID, true, "ok")
	assert.True(t, errs.Is(err, errs.NotFound), "another tenant's approval is not found")
	assert.Len(t, w.audit.Events(), before+1, "only the held request was recorded")
	assert.Len(t, w.notes.all(), sent+1, "only the held request was told")
}

func TestBlockErrorNamesTheRules(t *testing.T) {
	deny := policy.RuleResult{ID: "no-admin", Effect: policy.Deny}
	hold := policy.RuleResult{ID: "pay", Effect: policy.RequireApproval}
	broken := policy.RuleResult{ID: "broken", Effect: policy.RequireApproval, Error: "no such key"}
	brokenDeny := policy.RuleResult{ID: "broken-deny", Effect: policy.Deny, Error: "no such key"}
	for _, tc := range []struct {
		v            policy.Verdict
		code, public string
	}{
		{policy.Verdict{Decision: policy.Deny, Rules: []policy.RuleResult{hold, deny, brokenDeny}},
			"policy_denied", "blocked by policy: no-admin"},
		{policy.Verdict{Decision: policy.Deny, Rules: []policy.RuleResult{hold, brokenDeny}},
			"policy_error", "blocked: a policy could not be evaluated on this request: broken-deny (the verdict says why)"},
		{policy.Verdict{Decision: policy.RequireApproval, Rules: []policy.RuleResult{hold, broken}},
			"policy_error", "blocked: a policy could not be evaluated on this request: broken (the verdict says why)"},
		{policy.Verdict{Decision: policy.RequireApproval, ApprovalID: "apr_1", Rules: []policy.RuleResult{hold}},
			"approval_required", "held for approval apr_1 by policy: pay"},
	} {
		e := governance.BlockError(tc.v)
		assert.Equal(t, errs.Forbidden, e.Kind, tc.code)
		assert.Equal(t, tc.code, e.Code)
		assert.Equal(t, tc.public, e.Public)
		assert.Equal(t, map[string]any{"verdict": tc.v}, e.Beside)
	}
}

func TestFingerprintTellsRequestsAndCallersApart(t *testing.T) {
	id := &auth.Identity{App: "billing", Agent: "bot", Subject: "cust-7"}
	base := governance.Fingerprint(policy.Chat, id, []byte(`{"a":1}`))
	assert.Len(t, base, 64)
	assert.Equal(t, base, governance.Fingerprint(policy.Chat, &auth.Identity{App: "billing", Agent: "bot", Subject: "cust-7",
		TenantID: "t_x", KeyID: "key_9", Mode: auth.Observe}, []byte(`{"a":1}`)), "only target, app, agent, subject and content count")
	for name, other := range map[string]string{
		"target":  governance.Fingerprint(policy.Tool, id, []byte(`{"a":1}`)),
		"app":     governance.Fingerprint(policy.Chat, &auth.Identity{App: "ops", Agent: "bot", Subject: "cust-7"}, []byte(`{"a":1}`)),
		"agent":   governance.Fingerprint(policy.Chat, &auth.Identity{App: "billing", Agent: "bot2", Subject: "cust-7"}, []byte(`{"a":1}`)),
		"subject": governance.Fingerprint(policy.Chat, &auth.Identity{App: "billing", Agent: "bot", Subject: "cust-8"}, []byte(`{"a":1}`)),
		"content": governance.Fingerprint(policy.Chat, id, []byte(`{"a":2}`)),
		"shifted": governance.Fingerprint(policy.Chat, &auth.Identity{App: "billingbot", Subject: "cust-7"}, []byte(`{"a":1}`)),
	} {
		assert.NotEqual(t, base, other, name)
	}

	req, fp := governance.DescribeTool(id, "refund", map[string]any{"b": 2, "a": 1}, 4)
	assert.Equal(t, `{"args":{"a":1,"b":2},"level":4,"tool":"refund"}`, string(req))
	assert.Equal(t, governance.Fingerprint(policy.Tool, id, req), fp)
	_, again := governance.DescribeTool(id, "refund", map[string]any{"a": 1, "b": 2}, 4)
	assert.Equal(t, fp, again, "argument order does not matter")
	_, fp4 := governance.DescribeTool(id, "refund", map[string]any{"a": 1, "b": 2}, 3)
	assert.NotEqual(t, fp, fp4)
}
