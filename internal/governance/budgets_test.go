package governance_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/spend"
)

// chatRules has a chat rule that holds big models for approval, and one
// that reads spend: a monthly cap written as a policy.
const chatRules = `policies:
  - id: big-models
    target: chat
    when: request.model == "gpt-4o"
    effect: require_approval
    reason: big models need approval
  - id: monthly-cap
    target: chat
    when: spend.tenant.month.usd > 100.0
    effect: deny
    reason: the tenant's monthly cap
`

// webOnly has rules of no chat request.
const webOnly = `policies:
  - id: no-admin-pages
    target: web
    when: web.url.contains("/admin")
    effect: deny
    reason: admin pages are off limits
`

// memBudgets gives each tenant's compiled budgets; err, when set, fails
// every read.
type memBudgets struct {
	mu       sync.Mutex
	compiled map[string]*spend.Compiled
	err      error
	reads    int
}

var _ governance.Budgets = (*memBudgets)(nil)

func (m *memBudgets) Compiled(_ context.Context, tenantID string) (*spend.Compiled, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.err != nil {
		return nil, m.err
	}
	return m.compiled[tenantID], nil
}

// billingDaily is tenant A's hard budget of USD 5 a day for the app
// billing, compiled as the spend package compiles it.
func billingDaily(t *testing.T) *spend.Compiled {
	t.Helper()
	limit := 5.0
	b := spend.Budget{ID: "billing-daily", Scope: spend.App, Match: "billing", Window: spend.Day, Kind: spend.Hard, LimitUSD: &limit}
	set, err := policy.NewSet([]policy.Rule{{ID: spend.RulePrefix + b.ID, Target: policy.Chat, Effect: policy.Deny,
		Reason: "budget billing-daily", When: `request.app == "billing" && spend.app.day.usd >= 5.0`, Source: "budgets"}})
	require.NoError(t, err)
	return &spend.Compiled{Set: set, Hard: []spend.Budget{b}}
}

// budgeted is a world over rules whose governor judges chat requests
// against budgets and counts in m.
func budgeted(t *testing.T, rules string, budgets governance.Budgets) (*world, *metrics.Metrics) {
	t.Helper()
	w := newWorld(t, rules)
	m := metrics.New(metrics.Options{})
	w.gov = governance.New(governance.Options{
		Policies:  engine(t, rules),
		Approvals: approval.NewService(w.approvals, fixedSettings{ttl: exceptionTTL, pending: pendingLimit}, w.clock.Now),
		Audit:     audit.NewLog(w.audit, hclog.NewNullLogger(), w.clock.Now),
		Notifier:  w.notes,
		Agents:    w.agents,
		Metrics:   m,
		Budgets:   budgets,
		Now:       w.clock.Now,
	})
	return w, m
}

// chatCall is a chat request of id for model, with spent the app's
// spend of the day and the tenant's of the month.
func chatCall(id *auth.Identity, model string, spent float64) (governance.Call, *policy.Input) {
	c := governance.Call{ID: id, RunID: "run_1", Target: policy.Chat,
		Describe: func() (json.RawMessage, string) { return json.RawMessage(`{"model":"` + model + `"}`), "fp-" + model }}
	in := &policy.Input{Request: policy.Request{Model: model, App: id.App, Key: id.KeyID},
		Spend: policy.Spend{App: policy.SpendScope{Day: policy.SpendWindow{USD: spent}}, Tenant: policy.SpendScope{Month: policy.SpendWindow{USD: spent}}}}
	return c, in
}

func TestABudgetRuleJoinsTheChatVerdict(t *testing.T) {
	budgets := &memBudgets{compiled: map[string]*spend.Compiled{tenantA: billingDaily(t)}}
	w, m := budgeted(t, chatRules, budgets)
	ctx := context.Background()

	c, in := chatCall(key(), "gpt-4o-mini", 4.99)
	d, err := w.gov.Decide(ctx, c, in)
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict.Decision, "under the budget")
	assert.True(t, d.Evaluated)

	c, in = chatCall(key(), "gpt-4o", 5)
	d, err = w.gov.Decide(ctx, c, in)
	require.NoError(t, err)
	assert.Equal(t, policy.Deny, d.Verdict.Decision, "the budget's deny is stronger than the file's require_approval")
	assert.Equal(t, []string{"big-models", "budget:billing-daily"}, ruleIDs(d.Verdict), "one verdict, the file's rules first")
	assert.True(t, d.Enforced)
	assert.Empty(t, d.Verdict.ApprovalID)
	assert.Empty(t, w.approvals.all(), "no approval is opened for a request a budget refuses")

	events := w.audit.Events()
	require.Len(t, events, 1)
	assert.Equal(t, "policy.chat", events[0].Action)
	assert.Equal(t, "deny", events[0].Decision)
	assert.Equal(t, true, events[0].Details["enforced"])
	assert.Empty(t, w.notes.all(), "a refusal by budgets alone is audited, not sent to the webhook")

	assert.Equal(t, map[string]float64{
		"require_approval,big-models,chat": 1,
		"deny,budget:billing-daily,chat":   1,
	}, metricstest.Samples(t, m, "svc_policy_verdicts_total"), "a budget's rule is counted like a file's")
	assert.Equal(t, map[string]float64{"allow,chat": 1, "deny,chat": 1}, metricstest.Nonzero(t, m, "svc_policy_evaluations_total"))

	other := key()
	other.TenantID = tenantB
	c, in = chatCall(other, "gpt-4o-mini", 50)
	d, err = w.gov.Decide(ctx, c, in)
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict.Decision, "tenant A's budget is not tenant B's")
}

func TestBudgetsAloneAreEvaluatedRules(t *testing.T) {
	budgets := &memBudgets{compiled: map[string]*spend.Compiled{tenantA: billingDaily(t)}}
	w, _ := budgeted(t, webOnly, budgets)
	c, in := chatCall(key(), "gpt-4o-mini", 1)
	d, err := w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err)
	assert.True(t, d.Evaluated, "a tenant's budgets judge its chat requests without any chat rule in a file")
	assert.Equal(t, policy.Allow, d.Verdict.Decision)

	other := key()
	other.TenantID = tenantB
	c, in = chatCall(other, "gpt-4o-mini", 1)
	d, err = w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err)
	assert.False(t, d.Evaluated, "a tenant without budgets has nothing to evaluate")

	a := webAction(key(), "shop.example.com", "https://shop.example.com/", nil)
	before := budgets.reads
	_, err = w.gov.Decide(context.Background(), a.call, a.in)
	require.NoError(t, err)
	assert.Equal(t, before, budgets.reads, "budgets judge chat requests only")
}

func TestABudgetDenyIsEnforcedInObserveMode(t *testing.T) {
	budgets := &memBudgets{compiled: map[string]*spend.Compiled{tenantA: billingDaily(t)}}
	w, _ := budgeted(t, chatRules, budgets)
	observer := key()
	observer.Mode = auth.Observe

	c, in := chatCall(observer, "gpt-4o", 150)
	d, err := w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err)
	assert.Equal(t, []string{"big-models", "monthly-cap", "budget:billing-daily"}, ruleIDs(d.Verdict))
	assert.True(t, d.Enforced, "a budget stops the call in observe mode too")
	assert.Empty(t, w.approvals.all())

	budgets.compiled = nil
	c, in = chatCall(observer, "gpt-4o-mini", 150)
	d, err = w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err)
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.False(t, d.Enforced, "a policy file's deny only records what would have happened in observe mode")
}

func TestAFileRuleOnSpendIsAPolicyDenial(t *testing.T) {
	w, _ := budgeted(t, chatRules, &memBudgets{})
	c, in := chatCall(key(), "gpt-4o-mini", 100.01)
	d, err := w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err)
	require.True(t, d.Enforced)
	assert.Equal(t, []string{"monthly-cap"}, ruleIDs(d.Verdict))
	assert.Nil(t, w.gov.BudgetError(context.Background(), key(), d.Verdict, nil), "no budget refused it")
	e := governance.BlockError(d.Verdict)
	assert.Equal(t, errs.Forbidden, e.Kind)
	assert.Equal(t, "policy_denied", e.Code)
}

func TestABudgetAndAPolicyDenyingAnswerThePolicy(t *testing.T) {
	budgets := &memBudgets{compiled: map[string]*spend.Compiled{tenantA: billingDaily(t)}}
	w, _ := budgeted(t, chatRules, budgets)
	c, in := chatCall(key(), "gpt-4o-mini", 150)
	d, err := w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err)
	require.Equal(t, []string{"monthly-cap", "budget:billing-daily"}, ruleIDs(d.Verdict))
	assert.Nil(t, w.gov.BudgetError(context.Background(), key(), d.Verdict, nil),
		"where policies are enforced, a policy's deny is the answer: the budget's reset would not let the call through")
}

func TestUnreadableBudgetsFailClosed(t *testing.T) {
	budgets := &memBudgets{err: errors.New("database is locked")}
	w, m := budgeted(t, webOnly, budgets)
	c, in := chatCall(key(), "gpt-4o-mini", 0)
	d, err := w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err, "a verdict, not an error: the call is refused as on a policy error")
	assert.True(t, d.Evaluated)
	assert.Equal(t, policy.Deny, d.Verdict.Decision)
	assert.True(t, d.Verdict.Failed())
	assert.True(t, d.Enforced)
	assert.Equal(t, []string{governance.BudgetsUnread}, ruleIDs(d.Verdict))
	assert.NotContains(t, d.Verdict.Rules[0].Error, "database", "the store's error is logged, not answered")
	assert.Equal(t, "policy_error", governance.BlockError(d.Verdict).Code)
	assert.Nil(t, w.gov.BudgetError(context.Background(), key(), d.Verdict, nil), "no budget was judged: nothing resets")
	assert.Equal(t, map[string]float64{"chat": 1}, metricstest.Nonzero(t, m, "svc_policy_errors_total"))
	assert.False(t, w.gov.NeedsSpend(context.Background(), tenantA), "a request refused without its spend needs none")
}

func TestNeedsSpend(t *testing.T) {
	ctx := context.Background()
	soft := &spend.Compiled{Soft: []spend.Budget{{ID: "heads-up", Scope: spend.Tenant, Window: spend.Month, Kind: spend.Soft}}}
	budgets := &memBudgets{compiled: map[string]*spend.Compiled{tenantA: billingDaily(t), tenantB: soft}}

	w, _ := budgeted(t, webOnly, budgets)
	assert.True(t, w.gov.NeedsSpend(ctx, tenantA), "a tenant with hard budgets")
	assert.False(t, w.gov.NeedsSpend(ctx, tenantB), "soft budgets refuse nothing: the decision needs no spend")
	assert.False(t, w.gov.NeedsSpend(ctx, "t_c"), "a tenant without budgets")

	w, _ = budgeted(t, webOnly, nil)
	assert.False(t, w.gov.NeedsSpend(ctx, tenantA), "no budgets at all")

	w, _ = budgeted(t, chatRules, nil)
	assert.True(t, w.gov.NeedsSpend(ctx, "t_c"), "a chat rule reads spend: every tenant's")
}

func TestABudgetRuleThatFailsCountsAsAPolicyError(t *testing.T) {
	set, err := policy.NewSet([]policy.Rule{{ID: spend.RulePrefix + "odd", Target: policy.Chat, Effect: policy.Allow, Reason: "odd",
		When: `request.messages[3].content == "x"`, Source: "budgets"}})
	require.NoError(t, err)
	budgets := &memBudgets{compiled: map[string]*spend.Compiled{tenantA: {Set: set}}}
	w, m := budgeted(t, webOnly, budgets)
	c, in := chatCall(key(), "gpt-4o-mini", 0)
	d, err := w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict.Decision)
	assert.Equal(t, map[string]float64{"chat": 1}, metricstest.Nonzero(t, m, "svc_policy_errors_total"),
		"a budget set's allow rule that cannot decide is counted like a file's")
}

func TestABudgetRefusalLeavesTheAgentsStanding(t *testing.T) {
	budgets := &memBudgets{compiled: map[string]*spend.Compiled{tenantA: billingDaily(t)}}
	w, _ := budgeted(t, chatRules, budgets)
	trusted := ledger.Standing{Trust: ledger.TrustTrusted, AllowStreak: 30, Decisions: 30}
	w.agents.book[agentKey{tenantA, "bot"}] = trusted
	id := key()
	id.Agent = "bot"

	for range ledger.RestrictAfter + 1 {
		c, in := chatCall(id, "gpt-4o-mini", 6)
		d, err := w.gov.Decide(context.Background(), c, in)
		require.NoError(t, err)
		require.True(t, d.Enforced)
		require.NotNil(t, d.Standing)
		assert.Equal(t, trusted, *d.Standing, "a budget reached says nothing of the agent")
	}

	c, in := chatCall(id, "gpt-4o-mini", 150) // the monthly cap, a policy, denies too
	d, err := w.gov.Decide(context.Background(), c, in)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Standing.Denies, "a policy's deny moves the standing as ever")
}

func TestARefusalByBudgetsAloneIsAuditedNotSent(t *testing.T) {
	budgets := &memBudgets{compiled: map[string]*spend.Compiled{tenantA: billingDaily(t)}}
	w, _ := budgeted(t, chatRules, budgets)
	ctx := context.Background()
	observer := key()
	observer.Mode = auth.Observe

	for _, id := range []*auth.Identity{key(), observer} {
		c, in := chatCall(id, "gpt-4o-mini", 5)
		d, err := w.gov.Decide(ctx, c, in)
		require.NoError(t, err)
		require.True(t, d.Enforced)
		require.Equal(t, []string{"budget:billing-daily"}, ruleIDs(d.Verdict))
	}
	events := w.audit.Events()
	require.Len(t, events, 2, "each refusal is audited")
	assert.Equal(t, "deny", events[0].Decision)
	assert.Empty(t, w.notes.all(), "a cap reached under load must not send a webhook event for each call it refuses")

	c, in := chatCall(key(), "gpt-4o-mini", 150)
	d, err := w.gov.Decide(ctx, c, in)
	require.NoError(t, err)
	require.Equal(t, []string{"monthly-cap", "budget:billing-daily"}, ruleIDs(d.Verdict))
	sent := w.notes.all()
	require.Len(t, sent, 1, "a policy file's enforced deny is sent, a budget beside it or not")
	assert.Equal(t, governance.EventPolicyBlocked, sent[0].event)
}

func TestJudgeWritesNothingAndSettleActs(t *testing.T) {
	w, _ := budgeted(t, chatRules, &memBudgets{compiled: map[string]*spend.Compiled{tenantA: billingDaily(t)}})
	ctx := context.Background()
	id := key()
	id.Agent = "planner"
	c, in := chatCall(id, "gpt-4o", 1)
	w.gov.Prepare(ctx, c, in)
	assert.Equal(t, "planner", in.Agent.Name)

	j, err := w.gov.Judge(ctx, c, in)
	require.NoError(t, err)
	assert.Equal(t, policy.RequireApproval, j.Verdict.Decision)
	assert.True(t, j.Enforced, "the judgment says whether the call is stopped")
	assert.Empty(t, w.audit.Events(), "judging writes nothing")
	assert.Empty(t, w.approvals.all())
	assert.Empty(t, w.notes.all())
	assert.Nil(t, j.Standing)

	d, err := w.gov.Settle(ctx, j)
	require.NoError(t, err)
	assert.NotEmpty(t, d.Verdict.ApprovalID, "settling opens the approval")
	require.Len(t, w.approvals.all(), 1)
	require.NotNil(t, d.Standing, "and moves the agent's standing")
	require.Len(t, w.audit.Events(), 1)
	require.Len(t, w.notes.all(), 1)
	assert.Equal(t, governance.EventApprovalRequested, w.notes.all()[0].event)
}
