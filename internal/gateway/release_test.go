package gateway

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// budgeted decides every chat request on its spend, and allows it.
type budgeted struct{}

func (budgeted) Has(policy.Target) bool                  { return false }
func (budgeted) NeedsSpend(context.Context, string) bool { return true }
func (budgeted) Decide(context.Context, governance.Call, *policy.Input) (governance.Decision, error) {
	return governance.Decision{Evaluated: true, Verdict: policy.Verdict{Decision: policy.Allow, Rules: []policy.RuleResult{}}}, nil
}
func (b budgeted) Prepare(context.Context, governance.Call, *policy.Input) {}
func (b budgeted) Judge(ctx context.Context, c governance.Call, in *policy.Input) (governance.Judgment, error) {
	d, err := b.Decide(ctx, c, in)
	return governance.Judgment{Decision: d}, err
}
func (budgeted) Settle(_ context.Context, j governance.Judgment) (governance.Decision, error) {
	return j.Decision, nil
}
func (budgeted) JudgeProviders(context.Context, *auth.Identity, string, policy.Request, []policy.Candidate) ([]governance.ProviderVerdict, error) {
	return nil, nil
}
func (budgeted) BudgetError(context.Context, *auth.Identity, policy.Verdict, *policy.Spend) *errs.Error {
	return nil
}

// admitting admits every call with one reservation, and keeps the
// reservations its runs ended.
type admitting struct {
	r        *spend.Reservation
	recorded []*spend.Reservation
}

func (a *admitting) Admit(_ context.Context, _ spend.Who, _ spend.Amount, decide func(policy.Spend) (bool, error)) (*spend.Reservation, error) {
	if ok, err := decide(policy.Spend{}); !ok || err != nil {
		return nil, err
	}
	return a.r, nil
}
func (a *admitting) Recorded(_ *ledger.Run, r *spend.Reservation) { a.recorded = append(a.recorded, r) }
func (a *admitting) Estimate(string, int, int64, func(int64, int64) (float64, bool)) spend.Amount {
	return spend.Amount{Requests: 1}
}

// panicking answers, or panics when told to.
type panicking struct{ panics bool }

func (p *panicking) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if p.panics {
		panic("the provider broke")
	}
	return pluginapi.ChatResponse{Body: []byte(`{"choices":[]}`), Usage: pluginapi.Usage{PromptTokens: 1, TotalTokens: 1}}, nil
}
func (p *panicking) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}
func (p *panicking) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

type runs struct{ n int }

func (r *runs) Record(context.Context, *ledger.Record) error { r.n++; return nil }

// A call that ends without a run (a panic on its way) releases its
// reservation; one whose run is recorded ends it there instead.
func TestAReservationIsReleasedWhenNoRunIsRecorded(t *testing.T) {
	p, a, rec := &panicking{}, &admitting{r: &spend.Reservation{}}, &runs{}
	gw := New(Options{Provider: p, ProviderName: "p", Recorder: rec, Governor: budgeted{}, Spend: a})
	var released []*spend.Reservation
	gw.release = func(r *spend.Reservation) { released = append(released, r) }
	req, err := ParseRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	id := &auth.Identity{TenantID: "t", Mode: auth.Optimize}

	_, err = gw.Complete(context.Background(), id, req)
	require.NoError(t, err)
	assert.Equal(t, []*spend.Reservation{a.r}, a.recorded, "the run ends the reservation")
	assert.Empty(t, released, "nothing left to release")

	p.panics = true
	func() {
		defer func() { require.NotNil(t, recover()) }()
		_, _ = gw.Complete(context.Background(), id, req)
	}()
	assert.Equal(t, 1, rec.n, "no run was recorded")
	assert.Equal(t, []*spend.Reservation{a.r}, released, "the reservation is released")
}
