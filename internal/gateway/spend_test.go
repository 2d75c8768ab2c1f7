package gateway_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/audit/audittest"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// meter stands for spend.Tracker: it estimates every call at estimate,
// hands decide spent, and keeps what it was asked. err, when set, fails
// every admission.
type meter struct {
	mu          sync.Mutex
	estimate    spend.Amount
	spent       policy.Spend
	err         error
	reservation *spend.Reservation
	recorder    *recorder // the runs recorded, counted at each Recorded
	admissions  []admission
	estimates   []estimated
	recordings  []recording
}

var _ gateway.Spend = (*meter)(nil)

type admission struct {
	who      spend.Who
	estimate spend.Amount
	admitted bool
}

type estimated struct {
	model     string
	bodyBytes int
	maxTokens int64
	// perMillion is the cost function's price of a million prompt tokens.
	perMillion float64
	known      bool
}

type recording struct {
	run         ledger.Run
	reservation *spend.Reservation
	stored      int // runs the recorder had when this one was counted
}

func newMeter(estimate spend.Amount, spent policy.Spend) *meter {
	return &meter{estimate: estimate, spent: spent, reservation: &spend.Reservation{}}
}

func (m *meter) Admit(_ context.Context, who spend.Who, estimate spend.Amount, decide func(policy.Spend) (bool, error)) (*spend.Reservation, error) {
	m.mu.Lock()
	err, spent := m.err, m.spent
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	admit, err := decide(spent)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.admissions = append(m.admissions, admission{who: who, estimate: estimate, admitted: admit && err == nil})
	if err != nil || !admit {
		return nil, err
	}
	return m.reservation, nil
}

func (m *meter) Recorded(run *ledger.Run, r *spend.Reservation) {
	stored := 0
	if m.recorder != nil {
		m.recorder.mu.Lock()
		stored = len(m.recorder.recs)
		m.recorder.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recordings = append(m.recordings, recording{run: *run, reservation: r, stored: stored})
}

func (m *meter) Estimate(model string, bodyBytes int, maxTokens int64, cost func(prompt, completion int64) (float64, bool)) spend.Amount {
	usd, known := cost(1_000_000, 0)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.estimates = append(m.estimates, estimated{model: model, bodyBytes: bodyBytes, maxTokens: maxTokens, perMillion: usd, known: known})
	return m.estimate
}

func (m *meter) seen() ([]admission, []estimated, []recording) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]admission(nil), m.admissions...), append([]estimated(nil), m.estimates...), append([]recording(nil), m.recordings...)
}

// budgetsOnly is a governor of a tenant with hard budgets and no chat
// rule in a file: every chat request is decided on its spend.
func budgetsOnly(d governance.Decision) *governor {
	return &governor{targets: map[policy.Target]bool{}, needsSpend: true, decision: d}
}

var allowed = governance.Decision{Evaluated: true, Verdict: policy.Verdict{Decision: policy.Allow, Rules: []policy.RuleResult{}}}

// teamCaller is a caller of an app, for a subject.
func teamCaller() *auth.Identity {
	return &auth.Identity{TenantID: tenantID, KeyID: "key_1", App: "billing", Subject: "cust-7", Mode: auth.Optimize}
}

func TestACallDecidedOnItsSpendIsAdmittedAndRecorded(t *testing.T) {
	gov := budgetsOnly(allowed)
	m := newMeter(spend.Amount{USD: 0.25, Tokens: 100, Requests: 1}, policy.Spend{App: policy.SpendScope{Day: policy.SpendWindow{USD: 3, Requests: 7}}})
	f := newFixture(t, setup{governor: gov, spend: m})
	m.recorder = f.recorder
	req := question(t, `"max_completion_tokens":40,`)

	res, err := f.gw.Complete(context.Background(), teamCaller(), req)
	require.NoError(t, err)
	assert.Equal(t, ledger.RouteLive, res.Route)

	admissions, estimates, recordings := m.seen()
	assert.Equal(t, []estimated{{model: model, bodyBytes: len(req.Body), maxTokens: 40, perMillion: 1, known: true}}, estimates,
		"the estimate is asked of the request's size and token limit, priced at the provider's prices")
	assert.Equal(t, []admission{{who: spend.Who{TenantID: tenantID, App: "billing", KeyID: "key_1", Subject: "cust-7"},
		estimate: spend.Amount{USD: 0.25, Tokens: 100, Requests: 1}, admitted: true}}, admissions)
	require.Len(t, gov.spends, 1, "the tenant's budgets decide the request without a chat rule in a file")
	assert.Equal(t, m.spent, gov.spends[0], "the decision sees the spend the tracker gathered")
	assert.InDelta(t, 0.25, gov.inputs[0].EstimatedCostUSD, 1e-12)
	assert.Equal(t, "key_1", gov.inputs[0].Key)

	require.Len(t, recordings, 1)
	assert.Same(t, m.reservation, recordings[0].reservation, "the reservation ends with the run")
	assert.Equal(t, res.RunID, recordings[0].run.ID)
	assert.Equal(t, int64(12), recordings[0].run.TotalTokens)
	assert.Positive(t, recordings[0].run.CostUSD)
	assert.Zero(t, recordings[0].stored, "the run is counted before it is recorded")
	assert.Len(t, f.recorder.recs, 1)

	t.Run("max_tokens", func(t *testing.T) {
		m := newMeter(spend.Amount{}, policy.Spend{})
		f := newFixture(t, setup{governor: budgetsOnly(allowed), spend: m})
		_, err := f.gw.Complete(context.Background(), teamCaller(), question(t, `"max_tokens":64,`))
		require.NoError(t, err)
		_, estimates, _ := m.seen()
		require.Len(t, estimates, 1)
		assert.Equal(t, int64(64), estimates[0].maxTokens)
	})
}

func TestABudgetRefusalIs429AndHoldsNothing(t *testing.T) {
	verdict := policy.Verdict{Decision: policy.Deny, Rules: []policy.RuleResult{{ID: spend.RulePrefix + "billing-daily", Effect: policy.Deny, Reason: "budget"}}}
	exceeded := &errs.Error{Kind: errs.RateLimited, Code: spend.CodeExceeded, Type: "rate_limit_error", Retry: 2 * time.Hour,
		Public: "budget billing-daily (app billing, day) reached"}
	gov := budgetsOnly(governance.Decision{Evaluated: true, Enforced: true, Verdict: verdict})
	gov.budgetError = exceeded
	m := newMeter(spend.Amount{USD: 0.25, Requests: 1}, policy.Spend{App: policy.SpendScope{Day: policy.SpendWindow{USD: 5}}})
	f := newFixture(t, setup{governor: gov, spend: m})

	res, err := f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
	require.Error(t, err)
	assert.Same(t, exceeded, errs.As(err), "the budget's own error answers")
	assert.Equal(t, 429, httpstatus.Of(err))
	assert.Equal(t, ledger.RouteBlocked, res.Route)
	assert.Zero(t, f.provider.called())
	require.Len(t, gov.budgeted, 1)
	assert.Equal(t, verdict, gov.budgeted[0])

	run := f.recorder.last(t).Run
	assert.Equal(t, ledger.StatusBlocked, run.Status)
	assert.Equal(t, 429, run.HTTPStatus)
	assert.Equal(t, exceeded.Public, run.Error)
	assert.Equal(t, "deny", run.Explanation.Policy.Decision)
	assert.Equal(t, []ledger.RuleResult{{ID: "budget:billing-daily", Effect: "deny", Reason: "budget"}}, run.Explanation.Policy.Rules)
	assert.True(t, run.Explanation.Policy.Enforced)

	admissions, _, recordings := m.seen()
	require.Len(t, admissions, 1)
	assert.False(t, admissions[0].admitted)
	require.Len(t, recordings, 1, "a blocked run is counted too (as nothing spent)")
	assert.Nil(t, recordings[0].reservation, "a refused call holds no reservation")
	assert.Equal(t, ledger.RouteBlocked, recordings[0].run.Route)

	t.Run("a policy's deny stays a 403", func(t *testing.T) {
		gov := budgetsOnly(governance.Decision{Evaluated: true, Enforced: true, Verdict: policy.Verdict{Decision: policy.Deny,
			Rules: []policy.RuleResult{{ID: "monthly-cap", Effect: policy.Deny}}}})
		f := newFixture(t, setup{governor: gov, spend: newMeter(spend.Amount{}, policy.Spend{})})
		_, err := f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
		require.Error(t, err)
		assert.Equal(t, 403, httpstatus.Of(err))
		assert.Equal(t, "policy_denied", errs.As(err).Code)
	})
}

func TestACallTheTrackerCannotAdmitIsNeverLetThrough(t *testing.T) {
	m := newMeter(spend.Amount{USD: 0.25, Requests: 1}, policy.Spend{})
	m.err = errors.New("the counters could not be read")
	f := newFixture(t, setup{governor: budgetsOnly(allowed), spend: m})
	_, err := f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
	require.Error(t, err)
	assert.Equal(t, 500, httpstatus.Of(err))
	assert.Zero(t, f.provider.called())
	_, _, recordings := m.seen()
	require.Len(t, recordings, 1)
	assert.Nil(t, recordings[0].reservation)
	assert.Equal(t, 500, recordings[0].run.HTTPStatus)
}

func TestSpendIsGatheredOnlyWhereRulesReadIt(t *testing.T) {
	t.Run("chat rules without spend: estimated, not admitted", func(t *testing.T) {
		gov := &governor{targets: map[policy.Target]bool{policy.Chat: true}, decision: allowed}
		m := newMeter(spend.Amount{USD: 0.5, Requests: 1}, policy.Spend{App: policy.SpendScope{Day: policy.SpendWindow{USD: 1}}})
		f := newFixture(t, setup{governor: gov, spend: m})
		_, err := f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
		require.NoError(t, err)
		admissions, estimates, recordings := m.seen()
		assert.Empty(t, admissions)
		assert.Len(t, estimates, 1, "a chat rule may read request.estimatedCostUsd")
		assert.InDelta(t, 0.5, gov.inputs[0].EstimatedCostUSD, 1e-12)
		assert.Equal(t, policy.Spend{}, gov.spends[0], "no spend is gathered for rules that do not read it")
		require.Len(t, recordings, 1, "every run is counted")
		assert.Nil(t, recordings[0].reservation)
	})
	t.Run("no rules: neither, every run counted", func(t *testing.T) {
		gov := &governor{targets: map[policy.Target]bool{}}
		m := newMeter(spend.Amount{}, policy.Spend{})
		f := newFixture(t, setup{governor: gov, spend: m})
		for range 2 {
			_, err := f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
			require.NoError(t, err)
		}
		admissions, estimates, recordings := m.seen()
		assert.Empty(t, admissions)
		assert.Empty(t, estimates)
		assert.Empty(t, gov.inputs)
		require.Len(t, recordings, 2)
		assert.Equal(t, []string{ledger.RouteLive, ledger.RouteExactCache}, []string{recordings[0].run.Route, recordings[1].run.Route},
			"a cache hit is counted too (by its route)")
	})
	t.Run("no governor", func(t *testing.T) {
		m := newMeter(spend.Amount{}, policy.Spend{})
		f := newFixture(t, setup{spend: m})
		_, err := f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
		require.NoError(t, err)
		_, estimates, recordings := m.seen()
		assert.Empty(t, estimates)
		assert.Len(t, recordings, 1)
	})
}

func TestAStreamedCallIsCountedWithItsUsage(t *testing.T) {
	usage := pluginapi.ChatChunk{Data: []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`), Usage: &pluginapi.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}, UsageOnly: true}
	m := newMeter(spend.Amount{USD: 0.1, Requests: 1}, policy.Spend{})
	f := newFixture(t, setup{governor: budgetsOnly(allowed), spend: m})
	f.provider.chunks = []pluginapi.ChatChunk{chunk("Par"), chunk("is"), usage}
	res, err := f.gw.Stream(context.Background(), teamCaller(), question(t, `"stream":true,`), &sink{})
	require.NoError(t, err)
	admissions, _, recordings := m.seen()
	require.Len(t, admissions, 1)
	require.Len(t, recordings, 1)
	assert.Same(t, m.reservation, recordings[0].reservation)
	assert.Equal(t, res.RunID, recordings[0].run.ID)
	assert.Equal(t, int64(12), recordings[0].run.TotalTokens, "the stream's usage is on the run counted")
	assert.InDelta(t, (10*1+2*2)/1e6, recordings[0].run.CostUSD, 1e-12)
}

func TestAnEmbeddingsCallIsDecidedOnItsSpend(t *testing.T) {
	rec := &recorder{}
	set := &providers.Set{Providers: []*providers.Provider{{Name: "b", Plugin: "openai", Impl: embedder{&provider{}}}}}
	m := newMeter(spend.Amount{USD: 0.01, Requests: 1}, policy.Spend{Key: policy.SpendScope{Month: policy.SpendWindow{Tokens: 9}}})
	gov := budgetsOnly(allowed)
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: rec, Governor: gov, Spend: m,
		Prices: pricing.New(map[string]pricing.Price{"gpt-e": {Input: 2}})})
	req, err := gateway.ParseEmbedRequest([]byte(`{"model":"gpt-e","input":"hello"}`))
	require.NoError(t, err)
	_, err = gw.Embed(context.Background(), teamCaller(), req)
	require.NoError(t, err)
	admissions, estimates, recordings := m.seen()
	assert.Equal(t, []estimated{{model: "gpt-e", bodyBytes: len(req.Body), perMillion: 2, known: true}}, estimates)
	require.Len(t, admissions, 1)
	assert.Equal(t, m.spent, gov.spends[0])
	require.Len(t, recordings, 1)
	assert.Same(t, m.reservation, recordings[0].reservation)
	assert.Equal(t, int64(3), recordings[0].run.TotalTokens)
}

// heldApprovals keeps the approvals a governor opens, and has no
// exception.
type heldApprovals struct {
	approval.Store
	mu     sync.Mutex
	opened []approval.Approval
}

func (h *heldApprovals) OpenApproval(_ context.Context, a *approval.Approval, _ int) (approval.Approval, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opened = append(h.opened, *a)
	return *a, true, nil
}

func (h *heldApprovals) ApprovedException(context.Context, string, string, time.Time) (*approval.Approval, error) {
	return nil, nil
}

type approvalSettings struct{}

func (approvalSettings) ExceptionTTL(context.Context, string) (time.Duration, error) {
	return time.Hour, nil
}
func (approvalSettings) PendingApprovalLimit(context.Context, string) (int, error) { return 10, nil }

// spendRules hold dear calls for approval and cap an app's day, in a
// policy file.
const spendRules = `policies:
  - id: dear-calls
    target: chat
    when: request.estimatedCostUsd > 0.5 && request.key == "key_1"
    effect: require_approval
    reason: calls over half a dollar need a person
  - id: app-day-cap
    target: chat
    when: spend.app.day.usd >= 5.0
    effect: deny
    reason: the app's daily cap
`

// TestRulesReadTheEstimateAndTheSpend runs the real governor's rules on
// what the gateway gathers.
func TestRulesReadTheEstimateAndTheSpend(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(spendRules), 0o600))
	engine, err := policy.NewEngine(dir)
	require.NoError(t, err)
	held := &heldApprovals{}
	logger := hclog.NewNullLogger()
	gov := governance.New(governance.Options{Policies: engine, Logger: logger,
		Approvals: approval.NewService(held, approvalSettings{}, time.Now),
		Audit:     audit.NewLog(&audittest.Memory{}, logger, time.Now)})

	for _, tc := range []struct {
		name   string
		usd    float64 // the estimate
		spent  float64 // the app's spend of the day
		status int
		code   string
	}{
		{"a cheap call under the cap", 0.1, 4.99, 200, ""},
		{"a dear call is held", 0.6, 0, 403, "approval_required"},
		{"the app at its cap", 0.1, 5, 403, "policy_denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMeter(spend.Amount{USD: tc.usd, Requests: 1}, policy.Spend{App: policy.SpendScope{Day: policy.SpendWindow{USD: tc.spent}}})
			f := newFixture(t, setup{governor: gov, spend: m, noCache: true})
			_, err := f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
			assert.Equal(t, tc.status, httpstatus.Of(err))
			if tc.code != "" {
				require.Error(t, err)
				assert.Equal(t, tc.code, errs.As(err).Code)
			}
			admissions, _, recordings := m.seen()
			require.Len(t, admissions, 1, "a rule reads spend: the call is decided on it")
			assert.Equal(t, tc.status == 200, admissions[0].admitted)
			require.Len(t, recordings, 1)
			assert.Equal(t, tc.status == 200, recordings[0].reservation != nil)
		})
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	require.Len(t, held.opened, 1)
	assert.Equal(t, "dear-calls", held.opened[0].Rules[0].ID)
}
