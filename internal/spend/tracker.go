package spend

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
)

// Tracker is what this process knows of spend on top of the store: the
// calls it has in flight (their estimates), the runs it recorded since it
// started (the store's rows of this replica are left out of its reads, so
// nothing counts twice), and how long each model's answers run, for the
// estimates.
type Tracker struct {
	o TrackerOptions

	mu      sync.Mutex
	tenants map[string]*tenantSpend

	models estimator

	claimedMu sync.Mutex
	claimed   map[alertKey]struct{} // thresholds known to be claimed, on any replica
	alerting  sync.WaitGroup
}

// TrackerOptions are what a Tracker is built from.
type TrackerOptions struct {
	Store   Store
	Zones   Zones    // nil: UTC
	Budgets *Budgets // nil: no soft budget is watched
	// Replica is the id the store tags this process's counter rows with
	// (Store.SetSpend): those rows are left out of its reads, since this
	// process counts them in memory.
	Replica string
	// Shared says other replicas write to the store as this one runs
	// (PostgreSQL): their rows are read at each admission. Otherwise
	// (SQLite) the rows of other replicas (runs a journal restored at
	// start) cannot change, and are read once per counter.
	Shared bool
	// Sync waits until the runs recorded so far are stored (the
	// recorder's Sync), so that Report reads them.
	Sync     func(ctx context.Context) error
	Now      func() time.Time
	Notifier Notifier   // nil: no webhook events
	Audit    *audit.Log // nil: no audit entries
	Logger   hclog.Logger
}

// Notifier sends a tenant's webhook events (webhook.Notifier).
type Notifier interface {
	Notify(ctx context.Context, tenantID, eventType string, data any)
}

// NewTracker returns a tracker.
func NewTracker(o TrackerOptions) *Tracker {
	if o.Zones == nil {
		o.Zones = UTC{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Tracker{o: o, tenants: map[string]*tenantSpend{}, models: estimator{m: map[string]*modelStats{}},
		claimed: map[alertKey]struct{}{}}
}

// tenantSpend is one tenant's counters in this process, under its lock.
type tenantSpend struct {
	mu    sync.Mutex
	cells map[Counter]*cell
	// sweepAt is when the soonest window of a cell ends (Unix ms): then
	// the cells of ended windows are dropped.
	sweepAt int64

	pending  []softCheck // recorded runs whose soft budgets are still to check
	checking bool        // a goroutine works through pending
}

// cell is one counter of this process: the runs it recorded, the calls it
// has in flight and, when not Shared, the other replicas' rows, read once.
type cell struct {
	recorded Amount
	inflight Amount
	calls    int // the calls in flight inflight counts (its sums may keep a float's residue)
	others   Amount
	loaded   bool  // others was read
	end      int64 // when the window ends, Unix ms
}

// maxCounters is how many counters one call moves.
const maxCounters = 5 * 3

// counterSet is the counters of one call, without allocating.
type counterSet struct {
	c   [maxCounters]Counter
	end [maxCounters]int64
	n   int
}

// fill sets the counters of who at t in loc.
func (cs *counterSet) fill(who Who, t time.Time, loc *time.Location) {
	cs.n = 0
	var starts, ends [3]int64
	for i, w := range Windows {
		st := w.Start(t, loc)
		starts[i], ends[i] = st.UnixMilli(), w.End(st, loc).UnixMilli()
	}
	for _, s := range Scopes {
		if !who.Counts(s) {
			continue
		}
		for i, w := range Windows {
			cs.c[cs.n] = Counter{Scope: s, Key: who.Value(s), Window: w, Start: starts[i]}
			cs.end[cs.n] = ends[i]
			cs.n++
		}
	}
}

func (cs *counterSet) list() []Counter { return cs.c[:cs.n] }

// tenant returns the tenant's state, made on first use.
func (t *Tracker) tenant(id string) *tenantSpend {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := t.tenants[id]
	if ts == nil {
		ts = &tenantSpend{cells: map[Counter]*cell{}}
		t.tenants[id] = ts
	}
	return ts
}

// ForgetTenant drops what this process counts of a tenant (a deleted
// organization).
func (t *Tracker) ForgetTenant(tenantID string) {
	t.mu.Lock()
	delete(t.tenants, tenantID)
	t.mu.Unlock()
}

// Reservation is a call in flight, counted at its estimate until its run
// is recorded (Recorded) or it ends without one (Release).
type Reservation struct {
	ts       *tenantSpend
	cells    [maxCounters]*cell // the call's counters, kept while they count it
	n        int
	estimate Amount
	done     atomic.Bool
}

// Admit decides on a call of who with its spend in hand: the counters of
// each scope, with the calls in flight, are passed to decide, and when
// decide admits the call its estimate is counted as in flight until its
// run is recorded. Calls of one tenant are decided one at a time, so that
// a burst cannot all pass a limit together. A nil Reservation is returned
// with decide's refusal.
func (t *Tracker) Admit(ctx context.Context, who Who, estimate Amount, decide func(policy.Spend) (admit bool, err error)) (*Reservation, error) {
	loc := t.o.Zones.Zone(ctx, who.TenantID)
	now := t.o.Now()
	var cs counterSet
	cs.fill(who, now, loc)
	counters := cs.list()
	ts := t.tenant(who.TenantID)
	// The store is read before the tenant's lock is taken: on a shared
	// database the other replicas' rows at each admission; otherwise once
	// per counter, when a cell has not read them yet.
	var others map[Counter]Amount
	if t.o.Shared {
		var err error
		// (a copy: the store may keep what it is given, the set stays on the stack)
		if others, err = t.o.Store.SumCounters(ctx, who.TenantID, slices.Clone(counters), t.o.Replica); err != nil {
			return nil, err
		}
	}
	r := &Reservation{estimate: estimate, n: len(counters)}
	ts.mu.Lock()
	ts.sweep(now.UnixMilli())
	missing := false
	for i, c := range counters {
		r.cells[i] = ts.cell(c, cs.end[i])
		missing = missing || (!t.o.Shared && !r.cells[i].loaded)
	}
	if missing {
		ts.mu.Unlock()
		if err := t.loadOthers(ctx, who.TenantID, ts, counters, cs.end[:]); err != nil {
			return nil, err
		}
		ts.mu.Lock()
		for i, c := range counters { // again: a sweep may have run meanwhile
			r.cells[i] = ts.cell(c, cs.end[i])
		}
	}
	defer ts.mu.Unlock()
	var sp policy.Spend
	for i, c := range counters {
		ce := r.cells[i]
		a := ce.others
		if others != nil {
			a = others[c]
		}
		a.Add(ce.recorded)
		a.Add(ce.inflight)
		*spendWindow(spendScope(&sp, c.Scope), c.Window) = policy.SpendWindow{USD: a.USD, Tokens: a.Tokens, Requests: a.Requests, Hits: a.Hits}
	}
	admit, err := decide(sp)
	if err != nil || !admit {
		return nil, err
	}
	r.ts = ts
	for _, ce := range r.cells[:r.n] {
		ce.inflight.Add(estimate)
		ce.calls++
	}
	return r, nil
}

// cell returns the counter's cell, made when absent; ts.mu is held.
func (ts *tenantSpend) cell(c Counter, end int64) *cell {
	ce := ts.cells[c]
	if ce == nil {
		ce = &cell{end: end}
		ts.cells[c] = ce
		if ts.sweepAt == 0 || end < ts.sweepAt {
			ts.sweepAt = end
		}
	}
	return ce
}

// sweep drops the cells of windows that ended by now, but those that
// still count a call in flight; ts.mu is held.
func (ts *tenantSpend) sweep(now int64) {
	if ts.sweepAt == 0 || now < ts.sweepAt {
		return
	}
	ts.sweepAt = 0
	for c, ce := range ts.cells {
		if ce.end <= now && ce.calls == 0 {
			delete(ts.cells, c)
			continue
		}
		if ts.sweepAt == 0 || ce.end < ts.sweepAt {
			ts.sweepAt = ce.end
		}
	}
}

// loadOthers reads, once, the other replicas' rows of the counters (ends:
// when their windows end) whose cells have not read them yet; their
// absence counts as zero.
func (t *Tracker) loadOthers(ctx context.Context, tenantID string, ts *tenantSpend, counters []Counter, ends []int64) error {
	ts.mu.Lock()
	var missing []Counter
	for i, c := range counters {
		if !ts.cell(c, ends[i]).loaded {
			missing = append(missing, c)
		}
	}
	ts.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	got, err := t.o.Store.SumCounters(ctx, tenantID, missing, t.o.Replica)
	if err != nil {
		return err
	}
	ts.mu.Lock()
	for i, c := range counters {
		if ce := ts.cell(c, ends[i]); !ce.loaded {
			ce.others, ce.loaded = got[c], true
		}
	}
	ts.mu.Unlock()
	return nil
}

// Recorded counts a run just recorded (before the recorder stores it) and
// ends its call's reservation, which may be nil.
func (t *Tracker) Recorded(run *ledger.Run, r *Reservation) {
	a := AmountOf(run)
	ts := t.tenant(run.TenantID)
	var cs counterSet
	if !a.Zero() {
		cs.fill(WhoOf(run), run.CreatedAt, t.o.Zones.Zone(context.Background(), run.TenantID))
	}
	soft := t.watchesSoft(run.TenantID)
	now := t.o.Now().UnixMilli()

	ts.mu.Lock()
	if r != nil && r.ts == ts {
		r.release()
	}
	for i, c := range cs.list() {
		ts.cell(c, cs.end[i]).recorded.Add(a)
	}
	ts.sweep(now)
	if soft && !a.Zero() {
		ts.pending = append(ts.pending, softCheck{who: WhoOf(run), at: run.CreatedAt})
		if !ts.checking {
			ts.checking = true
			t.alerting.Add(1)
			go t.checkSoft(run.TenantID, ts)
		}
	}
	ts.mu.Unlock()
	if r != nil && r.ts != ts { // a tenant forgotten meanwhile
		r.Release()
	}
	t.models.learn(run)
}

// Release ends a reservation whose call ends without a run; a nil or
// ended one is nothing.
func (r *Reservation) Release() {
	if r == nil || r.ts == nil {
		return
	}
	r.ts.mu.Lock()
	r.release()
	r.ts.mu.Unlock()
}

// release takes the reservation's estimate off its counters, once; the
// tenant's lock is held.
func (r *Reservation) release() {
	if !r.done.CompareAndSwap(false, true) {
		return
	}
	for _, ce := range r.cells[:r.n] {
		ce.inflight.Sub(r.estimate)
		if ce.calls--; ce.calls == 0 {
			ce.inflight = Amount{} // no residue of the float sums outlives the calls
		}
	}
}

// Estimate is what a call is expected to add to its counters before it is
// made (one request; its tokens and cost): prompt tokens from the request
// body's size (bodyBytes) at the model's learned tokens per byte,
// completion tokens maxTokens or, when 0, the model's recent answers'
// average, priced by cost (false: the price is unknown, USD 0).
func (t *Tracker) Estimate(model string, bodyBytes int, maxTokens int64, cost func(prompt, completion int64) (float64, bool)) Amount {
	ratio, completion := t.models.get(model)
	prompt := int64(math.Ceil(float64(bodyBytes) * ratio))
	if maxTokens > 0 {
		completion = maxTokens
	}
	out := Amount{Tokens: prompt + completion, Requests: 1}
	if cost != nil {
		if usd, ok := cost(prompt, completion); ok {
			out.USD = usd
		}
	}
	return out
}

// estimator learns, per model, the prompt tokens per byte of request body
// and the length of answers, from this process's live runs.
type estimator struct {
	mu sync.Mutex
	m  map[string]*modelStats
}

type modelStats struct {
	ratio      float64 // prompt tokens per request byte
	completion float64 // completion tokens, moving average
}

// Estimator constants: the ratio before a model's first run (about four
// bytes a token), the weight of each new run, and how many models are
// remembered.
const (
	defaultRatio = 0.25
	ewmaWeight   = 0.2
	maxModels    = 1024
)

// get returns the model's tokens per byte and average completion tokens.
func (e *estimator) get(model string) (float64, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.m[model]; s != nil {
		return s.ratio, int64(math.Round(s.completion))
	}
	return defaultRatio, 0
}

// learn takes a live run whose usage is known into its model's averages.
func (e *estimator) learn(run *ledger.Run) {
	if run.Route != ledger.RouteLive || run.UsageUnknown || run.Model == "" || run.PromptTokens <= 0 || len(run.Request) == 0 {
		return
	}
	ratio := float64(run.PromptTokens) / float64(len(run.Request))
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[run.Model]
	if s == nil {
		if len(e.m) >= maxModels {
			for k := range e.m { // forget one, any
				delete(e.m, k)
				break
			}
		}
		e.m[run.Model] = &modelStats{ratio: ratio, completion: float64(run.CompletionTokens)}
		return
	}
	s.ratio += ewmaWeight * (ratio - s.ratio)
	s.completion += ewmaWeight * (float64(run.CompletionTokens) - s.completion)
}

// Report is one scope's counters over one window, as GET /api/v1/spend
// answers them.
type Report struct {
	Scope       Scope        `json:"scope"`
	Window      Window       `json:"window"`
	Timezone    string       `json:"timezone"`
	WindowStart time.Time    `json:"windowStart"`
	ResetsAt    time.Time    `json:"resetsAt"`
	Items       []ReportItem `json:"items"`
}

// ReportItem is one value of the scope (its key: an app's name, a key's
// id, …; "" for the tenant) and its counters.
type ReportItem struct {
	Key string `json:"key"`
	Amount
}

// Report reads the tenant's counters of scope s over the current window w
// from the store, every replica's, after the runs recorded here are
// stored (sync), sorted by cost, highest first.
func (t *Tracker) Report(ctx context.Context, tenantID string, s Scope, w Window) (Report, error) {
	if t.o.Sync != nil {
		if err := t.o.Sync(ctx); err != nil {
			return Report{}, err
		}
	}
	loc := t.o.Zones.Zone(ctx, tenantID)
	start := w.Start(t.o.Now(), loc)
	rows, err := t.o.Store.ListCounters(ctx, tenantID, s, w, start.UnixMilli())
	if err != nil {
		return Report{}, err
	}
	items := make([]ReportItem, 0, len(rows))
	for k, a := range rows {
		items = append(items, ReportItem{Key: k, Amount: a})
	}
	slices.SortFunc(items, func(a, b ReportItem) int {
		switch {
		case a.USD > b.USD:
			return -1
		case a.USD < b.USD:
			return 1
		}
		if c := cmp.Compare(b.Requests, a.Requests); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return Report{Scope: s, Window: w, Timezone: loc.String(), WindowStart: start, ResetsAt: w.End(start, loc), Items: items}, nil
}
