package governance_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/audit/audittest"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
)

// The in-memory stores below stand for internal/store, so that the
// governor's verdicts are tested without SQL or HTTP.

var (
	_ approval.Store         = (*memApprovals)(nil)
	_ approval.Settings      = (*fixedSettings)(nil)
	_ governance.AgentStore  = (*memAgents)(nil)
	_ governance.Notifier    = (*notes)(nil)
	_ governance.Runs        = (*memRuns)(nil)
	_ ledger.SideEffectStore = (*memEffects)(nil)
)

// memApprovals keeps approvals in memory the way the store does: one
// pending approval per fingerprint and tenant, at most limit pending per
// actor. failException and failOpen, when set, fail those calls.
type memApprovals struct {
	mu            sync.Mutex
	list          []approval.Approval
	failException error
	failOpen      error
}

func (m *memApprovals) OpenApproval(_ context.Context, a *approval.Approval, limit int) (approval.Approval, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failOpen != nil {
		return approval.Approval{}, false, m.failOpen
	}
	pending := 0
	for _, o := range m.list {
		if o.TenantID != a.TenantID || o.Status != approval.Pending {
			continue
		}
		if o.Fingerprint == a.Fingerprint {
			return o, false, nil
		}
		if o.RequestedBy.Actor == a.RequestedBy.Actor {
			pending++
		}
	}
	if pending >= limit {
		return approval.Approval{}, false, approval.ErrPendingLimit
	}
	m.list = append(m.list, *a)
	return *a, true, nil
}

func (m *memApprovals) Approval(_ context.Context, tenantID, id string) (approval.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.list {
		if a.TenantID == tenantID && a.ID == id {
			return a, nil
		}
	}
	return approval.Approval{}, errs.NotFoundf("approval not found")
}

func (m *memApprovals) ListApprovals(_ context.Context, tenantID string, f approval.Filter) ([]approval.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []approval.Approval
	for i := len(m.list) - 1; i >= 0; i-- {
		if a := m.list[i]; a.TenantID == tenantID && (f.Status == "" || a.Status == f.Status) {
			out = append(out, a)
		}
	}
	return out, nil
}

func (m *memApprovals) DecideApproval(_ context.Context, a *approval.Approval) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, o := range m.list {
		if o.TenantID == a.TenantID && o.ID == a.ID {
			if o.Status != approval.Pending {
				return errs.E(errs.Conflict, "already_decided", "decided")
			}
			m.list[i] = *a
			return nil
		}
	}
	return errs.NotFoundf("approval not found")
}

func (m *memApprovals) ApprovedException(_ context.Context, tenantID, fingerprint string, now time.Time) (*approval.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failException != nil {
		return nil, m.failException
	}
	for _, a := range m.list {
		if a.TenantID == tenantID && a.Fingerprint == fingerprint && a.Status == approval.Approved &&
			a.ExpiresAt != nil && a.ExpiresAt.After(now) {
			return &a, nil
		}
	}
	return nil, nil
}

// all returns every approval of every tenant, oldest first.
func (m *memApprovals) all() []approval.Approval {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]approval.Approval(nil), m.list...)
}

type fixedSettings struct {
	ttl     time.Duration
	pending int
}

func (f fixedSettings) ExceptionTTL(context.Context, string) (time.Duration, error) {
	return f.ttl, nil
}
func (f fixedSettings) PendingApprovalLimit(context.Context, string) (int, error) {
	return f.pending, nil
}

type agentKey struct{ tenantID, name string }

// memAgents keeps agents' standings and counts the reads; fail, when set,
// fails every call.
type memAgents struct {
	mu    sync.Mutex
	book  map[agentKey]ledger.Standing
	saved map[agentKey]ledger.Standing
	reads int
	moves int
	fail  error
}

func newMemAgents() *memAgents {
	return &memAgents{book: map[agentKey]ledger.Standing{}, saved: map[agentKey]ledger.Standing{}}
}

func (m *memAgents) AgentStanding(_ context.Context, tenantID, name string) (ledger.Standing, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.fail != nil {
		return ledger.Standing{}, false, m.fail
	}
	st, ok := m.book[agentKey{tenantID, name}]
	if !ok {
		return ledger.NewStanding(), false, nil
	}
	return st, true, nil
}

func (m *memAgents) SaveAgentStanding(_ context.Context, tenantID, name string, st ledger.Standing, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.saved[agentKey{tenantID, name}] = st
	return nil
}

// MoveAgentStanding moves the standing in the book, as the store does in
// its database.
func (m *memAgents) MoveAgentStanding(_ context.Context, tenantID, name, decision string, _ time.Time) (ledger.Standing, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.moves++
	if m.fail != nil {
		return ledger.Standing{}, m.fail
	}
	k := agentKey{tenantID, name}
	st, ok := m.book[k]
	if !ok {
		st = ledger.NewStanding()
	}
	st = st.After(decision)
	m.book[k] = st
	return st, nil
}

// note is one webhook event the governor sent.
type note struct {
	tenantID, event string
	data            map[string]any
}

type notes struct {
	mu   sync.Mutex
	sent []note
}

func (n *notes) Notify(_ context.Context, tenantID, event string, data any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, note{tenantID, event, data.(map[string]any)})
}

func (n *notes) all() []note {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]note(nil), n.sent...)
}

// world is a governor over in-memory stores, on a fake clock.
type world struct {
	gov       *governance.Governor
	approvals *memApprovals
	audit     *audittest.Memory
	agents    *memAgents
	notes     *notes
	clock     *fakeclock.Clock
}

// exceptionTTL and pendingLimit are the settings of every world.
const (
	exceptionTTL = 2 * time.Hour
	pendingLimit = 3
)

func newWorld(t *testing.T, rules string) *world {
	t.Helper()
	w := &world{approvals: &memApprovals{}, audit: &audittest.Memory{}, agents: newMemAgents(), notes: &notes{},
		clock: fakeclock.New(time.UnixMilli(1_800_000_000_000).UTC())}
	logger := hclog.NewNullLogger()
	w.gov = governance.New(governance.Options{
		Policies:  engine(t, rules),
		Approvals: approval.NewService(w.approvals, fixedSettings{ttl: exceptionTTL, pending: pendingLimit}, w.clock.Now),
		Audit:     audit.NewLog(w.audit, logger, w.clock.Now),
		Notifier:  w.notes,
		Agents:    w.agents,
		Logger:    logger,
	})
	return w
}

// engine loads rules, the text of one policy file.
func engine(t testing.TB, rules string) *policy.Engine {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(rules), 0o600))
	e, err := policy.NewEngine(dir)
	require.NoError(t, err)
	return e
}

// memRuns is the runs service in memory: runs by tenant and id, and each
// run's trace.
type memRuns struct {
	mu     sync.Mutex
	runs   map[agentKey]ledger.Run
	events map[agentKey][]ledger.Event
	clock  *fakeclock.Clock
	fail   error // fails Trace
}

func newMemRuns(c *fakeclock.Clock) *memRuns {
	return &memRuns{runs: map[agentKey]ledger.Run{}, events: map[agentKey][]ledger.Event{}, clock: c}
}

func (m *memRuns) add(r ledger.Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[agentKey{r.TenantID, r.ID}] = r
}

func (m *memRuns) Run(_ context.Context, tenantID, id string) (ledger.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[agentKey{tenantID, id}]
	if !ok {
		return ledger.Run{}, errs.NotFoundf("run not found")
	}
	return r, nil
}

func (m *memRuns) Trace(_ context.Context, tenantID, runID, typ string, payload json.RawMessage) (ledger.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return ledger.Event{}, m.fail
	}
	k := agentKey{tenantID, runID}
	if _, ok := m.runs[k]; !ok {
		return ledger.Event{}, errs.NotFoundf("run not found")
	}
	e := ledger.Event{Seq: len(m.events[k]) + 1, Type: typ, At: m.clock.Now(), Payload: payload}
	m.events[k] = append(m.events[k], e)
	return e, nil
}

func (m *memRuns) trace(tenantID, runID string) []ledger.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ledger.Event(nil), m.events[agentKey{tenantID, runID}]...)
}

// memEffects keeps side-effect records, and the executions asked for.
type memEffects struct {
	mu       sync.Mutex
	list     []*ledger.SideEffect
	executed []string // tenant/run/tool of each ExecuteSideEffect
}

func (m *memEffects) AddSideEffect(_ context.Context, e *ledger.SideEffect) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.list = append(m.list, e)
	return nil
}

func (m *memEffects) SideEffects(_ context.Context, tenantID, runID string) ([]ledger.SideEffect, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.SideEffect
	for _, e := range m.list {
		if e.TenantID == tenantID && e.RunID == runID {
			out = append(out, *e)
		}
	}
	return out, nil
}

func (m *memEffects) ExecuteSideEffect(_ context.Context, tenantID, runID, toolName string, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.executed = append(m.executed, tenantID+"/"+runID+"/"+toolName)
	for _, e := range m.list {
		if e.TenantID == tenantID && e.RunID == runID && e.ToolName == toolName && e.State == ledger.EffectPlanned {
			e.State, e.UpdatedAt = ledger.EffectExecuted, at
			return true, nil
		}
	}
	return false, nil
}
