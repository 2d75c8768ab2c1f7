package spend_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/audit/audittest"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/internal/spend/spendtest"
)

// zone is Zones that is always one location.
type zone struct{ loc *time.Location }

func (z zone) Zone(context.Context, string) *time.Location { return z.loc }

// notes records the webhook events sent.
type notes struct {
	mu     sync.Mutex
	events []map[string]any
}

func (n *notes) Notify(_ context.Context, tenantID, event string, data any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := data.(map[string]any)
	m["tenant"], m["event"] = tenantID, event
	n.events = append(n.events, m)
}

func (n *notes) list() []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]map[string]any(nil), n.events...)
}

var t0 = time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC)

// deciding is a decide that evaluates a compiled budget set, and keeps the
// spend it was shown last.
func deciding(c *spend.Compiled, req policy.Request, seen *policy.Spend) func(policy.Spend) (bool, error) {
	return func(sp policy.Spend) (bool, error) {
		if seen != nil {
			*seen = sp
		}
		if c == nil || c.Set == nil {
			return true, nil
		}
		in := policy.Input{Request: req, Spend: sp}
		return !c.Set.Evaluate(context.Background(), policy.Chat, &in).Blocks(), nil
	}
}

func allow(seen *policy.Spend) func(policy.Spend) (bool, error) {
	return deciding(nil, policy.Request{}, seen)
}

func liveRun(who spend.Who, at time.Time, usd float64, tokens int64) *ledger.Run {
	return &ledger.Run{TenantID: who.TenantID, App: who.App, KeyID: who.KeyID, Agent: who.Agent, Subject: who.Subject,
		CreatedAt: at, Route: ledger.RouteLive, Model: "m", CostUSD: usd, TotalTokens: tokens, PromptTokens: tokens / 2, CompletionTokens: tokens - tokens/2}
}

func TestABurstAdmitsExactlyTheLimit(t *testing.T) {
	ctx := context.Background()
	c := mustCompile(t, spend.Budget{Scope: spend.App, Match: "support", Window: spend.Day, LimitRequests: i64(10)})
	tr := spend.NewTracker(spend.TrackerOptions{Store: spendtest.NewStore(), Replica: "a"})
	who := spend.Who{TenantID: "t1", App: "support"}
	decide := deciding(c, policy.Request{App: "support"}, nil)

	var (
		wg       sync.WaitGroup
		admitted atomic.Int32
		mu       sync.Mutex
		held     []*spend.Reservation
		start    = make(chan struct{})
	)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := tr.Admit(ctx, who, spend.Amount{Requests: 1, Tokens: 10, USD: 0.01}, decide)
			if assert.NoError(t, err) && r != nil {
				admitted.Add(1)
				mu.Lock()
				held = append(held, r)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int32(10), admitted.Load(), "exactly the limit's calls pass together")

	// Three calls end without a run: room for three more, no more.
	for _, r := range held[:3] {
		r.Release()
		r.Release() // twice is once
	}
	var again int
	for range 5 {
		if r, _ := tr.Admit(ctx, who, spend.Amount{Requests: 1}, decide); r != nil {
			again++
		}
	}
	assert.Equal(t, 3, again)
	// Another app is not held by this app's budget.
	r, err := tr.Admit(ctx, spend.Who{TenantID: "t1", App: "billing"}, spend.Amount{Requests: 1}, deciding(c, policy.Request{App: "billing"}, nil))
	require.NoError(t, err)
	assert.NotNil(t, r)
}

func TestRecordedReplacesTheEstimate(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(t0)
	tr := spend.NewTracker(spend.TrackerOptions{Store: spendtest.NewStore(), Replica: "a", Now: clock.Now})
	who := spend.Who{TenantID: "t1", App: "support", KeyID: "key_1"}
	var seen policy.Spend

	r, err := tr.Admit(ctx, who, spend.Amount{USD: 1, Tokens: 500, Requests: 1}, allow(&seen))
	require.NoError(t, err)
	require.NotNil(t, r)
	_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, policy.SpendWindow{USD: 1, Tokens: 500, Requests: 1}, seen.App.Day, "a call in flight counts at its estimate")
	assert.Equal(t, policy.SpendWindow{USD: 1, Tokens: 500, Requests: 1}, seen.Key.Month)
	assert.Equal(t, policy.SpendWindow{}, seen.Agent.Day, "the call names no agent")

	tr.Recorded(liveRun(who, clock.Now(), 0.2, 50), r)
	_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, policy.SpendWindow{USD: 0.2, Tokens: 50, Requests: 1}, seen.Tenant.Hour, "the run replaced the estimate")
	assert.Equal(t, policy.SpendWindow{USD: 0.2, Tokens: 50, Requests: 1}, seen.App.Month)
	r.Release() // after Recorded: nothing more
	_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, policy.SpendWindow{USD: 0.2, Tokens: 50, Requests: 1}, seen.App.Day)

	hit := &ledger.Run{TenantID: "t1", App: "support", CreatedAt: clock.Now(), Route: ledger.RouteExactCache}
	tr.Recorded(hit, nil)
	blocked := &ledger.Run{TenantID: "t1", App: "support", CreatedAt: clock.Now(), Route: ledger.RouteBlocked}
	tr.Recorded(blocked, nil)
	_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, policy.SpendWindow{USD: 0.2, Tokens: 50, Requests: 1, Hits: 1}, seen.App.Day, "a hit counts apart, a blocked call not at all")
}

func TestReleaseRacesRecorded(t *testing.T) {
	ctx := context.Background()
	tr := spend.NewTracker(spend.TrackerOptions{Store: spendtest.NewStore(), Replica: "a"})
	who := spend.Who{TenantID: "t1"}
	for range 50 {
		r, err := tr.Admit(ctx, who, spend.Amount{Requests: 1, USD: 1}, allow(nil))
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); r.Release() }()
		go func() {
			defer wg.Done()
			tr.Recorded(&ledger.Run{TenantID: "t1", CreatedAt: time.Now(), Route: ledger.RouteBlocked}, r)
		}()
		wg.Wait()
	}
	var seen policy.Spend
	_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, policy.SpendWindow{}, seen.Tenant.Day, "every estimate was taken off once")
}

func TestOtherReplicasRowsCount(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(t0)
	st := spendtest.NewStore()
	who := spend.Who{TenantID: "t1", App: "support"}
	st.Stored("b", time.UTC, liveRun(who, t0, 1, 10))
	st.Stored("a", time.UTC, liveRun(who, t0, 100, 1000)) // this process's own, counted in its memory
	st.Stored("b", time.UTC, liveRun(spend.Who{TenantID: "t2", App: "support"}, t0, 7, 70))

	shared := spend.NewTracker(spend.TrackerOptions{Store: st, Replica: "a", Shared: true, Now: clock.Now})
	var seen policy.Spend
	_, err := shared.Admit(ctx, who, spend.Amount{}, allow(&seen))
	require.NoError(t, err)
	assert.Equal(t, policy.SpendWindow{USD: 1, Tokens: 10, Requests: 1}, seen.App.Day, "other replicas' rows, not its own nor another tenant's")

	st.Stored("b", time.UTC, liveRun(who, t0, 2, 20))
	shared.Recorded(liveRun(who, t0, 0.5, 5), nil)
	_, _ = shared.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, policy.SpendWindow{USD: 3.5, Tokens: 35, Requests: 3}, seen.App.Day, "on a shared database each admission reads the others")

	// One process (SQLite): other replicas' rows are read once per counter.
	single := spend.NewTracker(spend.TrackerOptions{Store: st, Replica: "a", Now: clock.Now})
	before := st.Sums()
	_, _ = single.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, policy.SpendWindow{USD: 3, Tokens: 30, Requests: 2}, seen.App.Day)
	_, _ = single.Admit(ctx, who, spend.Amount{}, allow(&seen))
	_, _ = single.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, before+1, st.Sums(), "the rows are cached")

	st.Fail(errors.New("database gone"))
	_, err = shared.Admit(ctx, who, spend.Amount{}, allow(nil))
	assert.Error(t, err, "a store that fails fails the admission")
	r, err := single.Admit(ctx, who, spend.Amount{}, allow(nil))
	assert.NoError(t, err, "cached counters need no store")
	assert.NotNil(t, r)
}

func TestWindowsRollOver(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(t0) // 10:30 UTC on Thursday, November 26th
	tr := spend.NewTracker(spend.TrackerOptions{Store: spendtest.NewStore(), Replica: "a", Now: clock.Now})
	who := spend.Who{TenantID: "t1", App: "support"}
	tr.Recorded(liveRun(who, clock.Now(), 1, 10), nil)
	var seen policy.Spend
	check := func(hour, day, month int64) {
		t.Helper()
		_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
		assert.Equal(t, []int64{hour, day, month}, []int64{seen.App.Hour.Requests, seen.App.Day.Requests, seen.App.Month.Requests}, clock.Now())
	}
	check(1, 1, 1)
	clock.Set(time.Date(2026, 11, 26, 10, 59, 59, 0, time.UTC))
	check(1, 1, 1)
	clock.Set(time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC))
	check(0, 1, 1)
	clock.Set(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	check(0, 0, 1)
	clock.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	check(0, 0, 0)
}

func TestWindowsInTheTenantsZone(t *testing.T) {
	ctx := context.Background()
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	// 18:29 UTC is 23:59 in Kolkata, on November 30th: the last minute of
	// the month there.
	clock := fakeclock.New(time.Date(2026, 11, 30, 18, 29, 0, 0, time.UTC))
	st := spendtest.NewStore()
	tr := spend.NewTracker(spend.TrackerOptions{Store: st, Zones: zone{kolkata}, Replica: "a", Now: clock.Now})
	who := spend.Who{TenantID: "t1"}
	tr.Recorded(liveRun(who, clock.Now(), 1, 10), nil)
	var seen policy.Spend
	_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, int64(1), seen.Tenant.Month.Requests)

	clock.Set(time.Date(2026, 11, 30, 18, 30, 0, 0, time.UTC)) // midnight, December 1st, in Kolkata; still November in UTC
	_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, policy.SpendScope{}, seen.Tenant, "a new hour, day and month began in Kolkata")

	// The report's window is Kolkata's too.
	st.Stored("a", kolkata, liveRun(who, clock.Now(), 2, 20))
	rep, err := tr.Report(ctx, "t1", spend.Tenant, spend.Day)
	require.NoError(t, err)
	assert.Equal(t, "Asia/Kolkata", rep.Timezone)
	assert.True(t, rep.WindowStart.Equal(time.Date(2026, 11, 30, 18, 30, 0, 0, time.UTC)), rep.WindowStart)
	assert.True(t, rep.ResetsAt.Equal(time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC)), rep.ResetsAt)
	require.Len(t, rep.Items, 1)
	assert.InDelta(t, 2, rep.Items[0].USD, 0)
}

// alerting is two replicas of one database sharing its budgets, each with
// its own tracker.
type alerting struct {
	st     *spendtest.Store
	a, b   *spend.Tracker
	notes  *notes
	audits *audittest.Memory
	clock  *fakeclock.Clock
}

func newAlerting(t *testing.T, list ...spend.Budget) *alerting {
	t.Helper()
	st := spendtest.NewStore()
	budgets := spend.NewBudgets(spend.BudgetsOptions{Store: st})
	_, err := budgets.Replace(context.Background(), "t1", "user:u1", list)
	require.NoError(t, err)
	x := &alerting{st: st, notes: &notes{}, audits: &audittest.Memory{}, clock: fakeclock.New(t0)}
	log := audit.NewLog(x.audits, nil, x.clock.Now)
	mk := func(replica string) *spend.Tracker {
		return spend.NewTracker(spend.TrackerOptions{Store: st, Budgets: budgets, Replica: replica, Shared: true,
			Now: x.clock.Now, Notifier: x.notes, Audit: log})
	}
	x.a, x.b = mk("a"), mk("b")
	return x
}

// record records n runs on the tracker of replica, stores them as the
// recorder would, and waits for the soft budgets' check.
func (x *alerting) record(tr *spend.Tracker, replica string, who spend.Who, n int, usd float64) {
	for range n {
		run := liveRun(who, x.clock.Now(), usd, 10)
		tr.Recorded(run, nil)
		x.st.Stored(replica, time.UTC, run)
	}
	tr.Wait()
}

func (x *alerting) percents() []int {
	var out []int
	for _, e := range x.notes.list() {
		out = append(out, e["percent"].(int))
	}
	return out
}

func TestSoftBudgetsAlertOncePerThreshold(t *testing.T) {
	x := newAlerting(t, spend.Budget{ID: "day-requests", Scope: spend.Tenant, Window: spend.Day, Kind: spend.Soft, LimitRequests: i64(10)})
	who := spend.Who{TenantID: "t1"}

	x.record(x.a, "a", who, 5, 0)
	x.record(x.b, "b", who, 2, 0)
	assert.Empty(t, x.notes.list(), "7 of 10: below 80%")

	x.record(x.b, "b", who, 1, 0) // 8 of 10, seen by b
	assert.Equal(t, []int{80}, x.percents())
	x.record(x.a, "a", who, 1, 0) // 9: a sees 80% reached, already claimed by b
	x.record(x.b, "b", who, 1, 0) // 10
	x.record(x.a, "a", who, 3, 0) // 13
	x.record(x.b, "b", who, 1, 0)
	assert.Equal(t, []int{80, 100}, x.percents(), "each threshold once, across both replicas")
	claims := x.st.Claims()
	x.record(x.a, "a", who, 2, 0)
	x.record(x.b, "b", who, 2, 0)
	assert.Equal(t, claims, x.st.Claims(), "a threshold known to be claimed is not claimed again")

	ev := x.notes.list()[1]
	assert.Equal(t, spend.EventThreshold, ev["event"])
	assert.Equal(t, "t1", ev["tenant"])
	assert.Equal(t, "day-requests", ev["budget"])
	assert.Equal(t, "2026-11-27T00:00:00Z", ev["resetsAt"])
	assert.Equal(t, "2026-11-26T00:00:00Z", ev["windowStart"])
	assert.Equal(t, int64(10), ev["spent"].(spend.Amount).Requests)

	var audits []audit.Event
	for _, e := range x.audits.Events() {
		if e.Action == spend.EventThreshold {
			audits = append(audits, e)
		}
	}
	require.Len(t, audits, 2)
	assert.Equal(t, 80, audits[0].Details["percent"])
	assert.Equal(t, "budget:day-requests", audits[0].Target)

	// The next day is a new window: its thresholds alert again.
	x.clock.Set(t0.Add(24 * time.Hour))
	x.record(x.a, "a", who, 8, 0)
	assert.Equal(t, []int{80, 100, 80}, x.percents())
}

func TestSoftBudgetsPerValueAndMoney(t *testing.T) {
	x := newAlerting(t,
		spend.Budget{ID: "each-app", Scope: spend.App, Window: spend.Month, Kind: spend.Soft, LimitUSD: f64(1)},
		spend.Budget{ID: "hard-one", Scope: spend.Tenant, Window: spend.Month, LimitUSD: f64(1)},
	)
	of := func(id string) (out []map[string]any) {
		for _, e := range x.notes.list() {
			if e["budget"] == id {
				out = append(out, e)
			}
		}
		return out
	}
	x.record(x.a, "a", spend.Who{TenantID: "t1", App: "one"}, 4, 0.2) // $0.80
	x.record(x.a, "a", spend.Who{TenantID: "t1", App: "two"}, 3, 0.2) // $0.60
	x.record(x.a, "a", spend.Who{TenantID: "t1"}, 10, 0.2)            // no app: no app budget
	apps := of("each-app")
	require.Len(t, apps, 1, "only app one reached 80%%")
	assert.Equal(t, "one", apps[0]["match"])
	x.record(x.a, "a", spend.Who{TenantID: "t1", App: "two"}, 1, 0.2)
	apps = of("each-app")
	require.Len(t, apps, 2, "each app's threshold is its own")
	assert.Equal(t, "two", apps[1]["match"])
	assert.Equal(t, 80, apps[1]["percent"])

	// A hard budget tells too: at 80%, that it will refuse; at 100%, that
	// it refuses.
	hard := of("hard-one")
	require.Len(t, hard, 2)
	assert.Equal(t, []any{80, 100}, []any{hard[0]["percent"], hard[1]["percent"]})
	assert.Equal(t, spend.Hard, hard[1]["kind"])
}

func TestEstimate(t *testing.T) {
	tr := spend.NewTracker(spend.TrackerOptions{Store: spendtest.NewStore(), Replica: "a"})
	var prompt, completion int64
	cost := func(p, c int64) (float64, bool) { prompt, completion = p, c; return float64(p+c) / 1000, true }

	e := tr.Estimate("m", 400, 50, cost)
	assert.Equal(t, spend.Amount{USD: 0.15, Tokens: 150, Requests: 1}, e, "a quarter token a byte, and max_tokens")
	assert.Equal(t, []int64{100, 50}, []int64{prompt, completion})
	e = tr.Estimate("m", 400, 0, cost)
	assert.Equal(t, int64(100), e.Tokens, "no answer seen yet: no completion tokens")
	e = tr.Estimate("m", 400, 0, func(int64, int64) (float64, bool) { return 9, false })
	assert.Equal(t, spend.Amount{Tokens: 100, Requests: 1}, e, "an unknown price costs nothing")

	learn := func(route string, unknown bool, bytes int, p, c int64) {
		tr.Recorded(&ledger.Run{TenantID: "t1", CreatedAt: time.Now(), Route: route, Model: "m", UsageUnknown: unknown,
			Request: make([]byte, bytes), PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}, nil)
	}
	learn(ledger.RouteExactCache, false, 1000, 900, 900)
	learn(ledger.RouteLive, true, 1000, 900, 900)
	assert.Equal(t, int64(100), tr.Estimate("m", 400, 0, nil).Tokens, "cache hits and unknown usage teach nothing")

	learn(ledger.RouteLive, false, 1000, 500, 80) // half a token a byte, 80-token answers
	_ = tr.Estimate("m", 400, 0, cost)
	assert.Equal(t, []int64{200, 80}, []int64{prompt, completion})
	for range 30 {
		learn(ledger.RouteLive, false, 1000, 250, 200)
	}
	_ = tr.Estimate("m", 400, 0, cost)
	assert.InDelta(t, 100, prompt, 1, "the ratio follows recent runs")
	assert.InDelta(t, 200, completion, 1, "so does the answers' length")
	_ = tr.Estimate("other", 400, 0, cost)
	assert.Equal(t, []int64{100, 0}, []int64{prompt, completion}, "each model learns apart")
}

func TestReport(t *testing.T) {
	ctx := context.Background()
	st := spendtest.NewStore()
	clock := fakeclock.New(t0)
	var synced int
	tr := spend.NewTracker(spend.TrackerOptions{Store: st, Replica: "a", Now: clock.Now,
		Sync: func(context.Context) error {
			synced++
			st.Stored("a", time.UTC, liveRun(spend.Who{TenantID: "t1", App: "late"}, t0, 0.5, 5)) // the recorder's last runs
			return nil
		}})
	st.Stored("a", time.UTC, liveRun(spend.Who{TenantID: "t1", App: "cheap"}, t0, 0.1, 1))
	st.Stored("b", time.UTC, liveRun(spend.Who{TenantID: "t1", App: "dear"}, t0, 3, 30), liveRun(spend.Who{TenantID: "t1", App: "dear"}, t0, 1, 10))
	st.Stored("b", time.UTC, liveRun(spend.Who{TenantID: "t1", App: "old"}, t0.Add(-24*time.Hour), 9, 9))
	st.Stored("b", time.UTC, liveRun(spend.Who{TenantID: "t2", App: "theirs"}, t0, 5, 5))

	rep, err := tr.Report(ctx, "t1", spend.App, spend.Day)
	require.NoError(t, err)
	assert.Equal(t, 1, synced, "the recorder's runs are stored before the read")
	assert.Equal(t, spend.App, rep.Scope)
	assert.Equal(t, spend.Day, rep.Window)
	assert.Equal(t, "UTC", rep.Timezone)
	assert.Equal(t, time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), rep.WindowStart)
	assert.Equal(t, time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), rep.ResetsAt)
	var keys []string
	for _, it := range rep.Items {
		keys = append(keys, it.Key)
	}
	assert.Equal(t, []string{"dear", "late", "cheap"}, keys, "by cost, highest first; every replica; this window; this tenant")
	assert.Equal(t, spend.Amount{USD: 4, Tokens: 40, Requests: 2}, rep.Items[0].Amount)

	empty, err := tr.Report(ctx, "t3", spend.Key, spend.Hour)
	require.NoError(t, err)
	assert.NotNil(t, empty.Items)
	assert.Empty(t, empty.Items)

	failing := spend.NewTracker(spend.TrackerOptions{Store: st, Sync: func(context.Context) error { return errors.New("disk full") }})
	_, err = failing.Report(ctx, "t1", spend.App, spend.Day)
	assert.Error(t, err)
}

func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	c, _ := spend.Compile([]spend.Budget{{ID: "cap", Scope: spend.App, Match: "support", Window: spend.Day, Kind: spend.Hard, LimitUSD: f64(1e9)}})
	tr := spend.NewTracker(spend.TrackerOptions{Store: spendtest.NewStore(), Replica: "a"})
	who := spend.Who{TenantID: "t1", App: "support", KeyID: "key_1"}
	decide := deciding(c, policy.Request{App: "support"}, nil)
	est := spend.Amount{USD: 0.01, Tokens: 100, Requests: 1}
	b.ReportAllocs()
	for b.Loop() {
		r, _ := tr.Admit(ctx, who, est, decide)
		r.Release()
	}
}

func BenchmarkAdmitCounters(b *testing.B) {
	ctx := context.Background()
	tr := spend.NewTracker(spend.TrackerOptions{Store: spendtest.NewStore(), Replica: "a"})
	who := spend.Who{TenantID: "t1", App: "support", KeyID: "key_1"}
	decide := func(policy.Spend) (bool, error) { return true, nil }
	est := spend.Amount{USD: 0.01, Tokens: 100, Requests: 1}
	b.ReportAllocs()
	for b.Loop() {
		r, _ := tr.Admit(ctx, who, est, decide)
		r.Release()
	}
}

func BenchmarkRecorded(b *testing.B) {
	tr := spend.NewTracker(spend.TrackerOptions{Store: spendtest.NewStore(), Replica: "a"})
	run := liveRun(spend.Who{TenantID: "t1", App: "support", KeyID: "key_1"}, time.Now(), 0.01, 100)
	run.Request = make([]byte, 400)
	b.ReportAllocs()
	for b.Loop() {
		tr.Recorded(run, nil)
	}
}

func TestTheStoreIsReadOutsideTheTenantsLock(t *testing.T) {
	ctx := context.Background()
	st := spendtest.NewStore()
	tr := spend.NewTracker(spend.TrackerOptions{Store: st, Replica: "a", Shared: true})
	who := spend.Who{TenantID: "t1"}
	inner := make(chan error, 1)
	st.AfterSum(func() {
		st.AfterSum(nil)
		// Another call of the tenant, while the first one reads the store.
		go func() {
			_, err := tr.Admit(ctx, who, spend.Amount{Requests: 1}, allow(nil))
			inner <- err
		}()
		select {
		case err := <-inner:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second): // a guard against a deadlock, not a wait
			t.Error("an admission waited for another's store read")
		}
	})
	r, err := tr.Admit(ctx, who, spend.Amount{Requests: 1}, allow(nil))
	require.NoError(t, err)
	require.NotNil(t, r)

	boom := errors.New("no")
	r, err = tr.Admit(ctx, who, spend.Amount{Requests: 1}, func(policy.Spend) (bool, error) { return true, boom })
	assert.ErrorIs(t, err, boom, "decide's error is the admission's")
	assert.Nil(t, r)
	var seen policy.Spend
	_, _ = tr.Admit(ctx, who, spend.Amount{}, allow(&seen))
	assert.Equal(t, int64(2), seen.Tenant.Day.Requests, "a call that failed to be decided reserves nothing")
}
