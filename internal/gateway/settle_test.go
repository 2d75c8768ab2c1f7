package gateway_test

import (
	"context"
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
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/spend"
)

// noCounters is a spend store with nothing counted on another replica.
type noCounters struct{ spend.Store }

func (noCounters) SumCounters(context.Context, string, []spend.Counter, string) (map[spend.Counter]spend.Amount, error) {
	return nil, nil
}

// heldAudit holds its first write until release is closed, having closed
// entered.
type heldAudit struct {
	audittest.Memory
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (h *heldAudit) AppendAudit(ctx context.Context, e *audit.Event) error {
	h.once.Do(func() {
		close(h.entered)
		<-h.release
	})
	return h.Memory.AppendAudit(ctx, e)
}

// fixedBudgets gives every tenant the same budgets.
type fixedBudgets struct{ c *spend.Compiled }

func (b fixedBudgets) Compiled(context.Context, string) (*spend.Compiled, error) { return b.c, nil }

// spendGovernor is the real governor over rules (a policy file's text,
// or none) and budgets, auditing into log.
func spendGovernor(t *testing.T, rules string, budgets governance.Budgets, log audit.Store) *governance.Governor {
	t.Helper()
	dir := t.TempDir()
	if rules != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(rules), 0o600))
	}
	engine, err := policy.NewEngine(dir)
	require.NoError(t, err)
	logger := hclog.NewNullLogger()
	return governance.New(governance.Options{Policies: engine, Logger: logger, Budgets: budgets,
		Approvals: approval.NewService(&heldApprovals{}, approvalSettings{}, time.Now),
		Audit:     audit.NewLog(log, logger, time.Now)})
}

// TestARefusalsAuditDoesNotHoldTheTenantsOtherCalls: what a decision
// writes is written after the tracker's admission, outside the tenant's
// lock, so that a slow write for one refused call does not queue the
// tenant's other calls behind it.
func TestARefusalsAuditDoesNotHoldTheTenantsOtherCalls(t *testing.T) {
	const rules = `policies:
  - id: capped-subject
    target: chat
    when: request.subject == "cust-x" && spend.tenant.day.usd >= 0.0
    effect: deny
    reason: this subject spent enough
`
	log := &heldAudit{entered: make(chan struct{}), release: make(chan struct{})}
	gov := spendGovernor(t, rules, nil, log)
	tracker := spend.NewTracker(spend.TrackerOptions{Store: noCounters{}})
	f := newFixture(t, setup{governor: gov, spend: tracker, noCache: true})

	refused := make(chan error, 1)
	go func() {
		id := teamCaller()
		id.Subject = "cust-x"
		_, err := f.gw.Complete(context.Background(), id, question(t, ""))
		refused <- err
	}()
	<-log.entered // the refusal's audit write has started, and waits

	admitted := make(chan error, 1)
	go func() {
		_, err := f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
		admitted <- err
	}()
	select {
	case err := <-admitted:
		require.NoError(t, err)
	case <-time.After(10 * time.Second): // a deadline to fail by, not a wait: the call is done at once
		close(log.release)
		<-refused
		<-admitted
		t.Fatal("the tenant's next call waited on the refused call's audit write")
	}
	close(log.release)
	err := <-refused
	require.Error(t, err)
	assert.Equal(t, 403, httpstatus.Of(err))
	events := log.Events()
	require.Len(t, events, 1)
	assert.Equal(t, "deny", events[0].Decision)
	assert.Equal(t, 1, f.provider.called(), "the refused call reaches no provider")
}

// TestABudgetsRefusalSaysWhatWasSpent: the 429 names what the call was
// judged with, in its message and beside it.
func TestABudgetsRefusalSaysWhatWasSpent(t *testing.T) {
	limit := 0.00001 // one call costs 0.000014 (10 prompt and 2 completion tokens)
	compiled, err := spend.Compile([]spend.Budget{{ID: "billing-daily", Scope: spend.App, Match: "billing",
		Window: spend.Day, Kind: spend.Hard, LimitUSD: &limit}})
	require.NoError(t, err)
	gov := spendGovernor(t, "", fixedBudgets{compiled}, &audittest.Memory{})
	var f *fixture
	// The tracker's windows on the fixture's clock, that its runs are made at.
	tracker := spend.NewTracker(spend.TrackerOptions{Store: noCounters{}, Now: func() time.Time { return f.clock.Now() }})
	f = newFixture(t, setup{governor: gov, spend: tracker, noCache: true})

	_, err = f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
	require.NoError(t, err, "the first call of the day is under the limit")
	_, err = f.gw.Complete(context.Background(), teamCaller(), question(t, ""))
	require.Error(t, err)
	e := errs.As(err)
	require.NotNil(t, e)
	assert.Equal(t, 429, httpstatus.Of(err))
	assert.Equal(t, spend.CodeExceeded, e.Code)
	assert.Contains(t, e.Public, `budget "billing-daily"`)
	assert.Contains(t, e.Public, "its limit of $0.00001 (spent $0.000014)")
	budgets, ok := e.Beside["budgets"].([]map[string]any)
	require.True(t, ok, "budgets beside the error: %#v", e.Beside)
	require.Len(t, budgets, 1)
	spent, ok := budgets[0]["spent"].(spend.Amount)
	require.True(t, ok, "what was spent is beside the error: %#v", budgets[0])
	assert.InDelta(t, 0.000014, spent.USD, 1e-12)
	assert.Equal(t, int64(1), spent.Requests)
	assert.Equal(t, 1, f.provider.called())
}
