package store_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// zones is spend.Zones from a map (UTC for a tenant it lacks), counting
// the lookups.
type zones struct {
	m     map[string]*time.Location
	calls atomic.Int64
}

func (z *zones) Zone(_ context.Context, tenantID string) *time.Location {
	z.calls.Add(1)
	if loc := z.m[tenantID]; loc != nil {
		return loc
	}
	return time.UTC
}

// spendRun is a run of the tenant at at, routed route, of app, key, agent
// and subject, costing usd for tokens.
func spendRun(tenantID string, at time.Time, route, app, key, agent, subject string, usd float64, tokens int64) *ledger.Record {
	rec := newRun(tenantID, at, route, ledger.StatusOK, agent)
	r := rec.Run
	r.App, r.KeyID, r.Subject, r.CostUSD, r.TotalTokens = app, key, subject, usd, tokens
	return ledger.NewRecord(r, rec.Events, at)
}

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// listed is every counter of the tenant's scope and window starting at start.
func listed(t *testing.T, s *store.Store, tenantID string, sc spend.Scope, w spend.Window, start string) map[string]spend.Amount {
	t.Helper()
	got, err := s.ListCounters(context.Background(), tenantID, sc, w, ms(start))
	require.NoError(t, err)
	return got
}

// A batch of runs moves each counter it names by what each run counts (a
// live call its cost, tokens and one request; a cache or artifact answer
// one hit; a call blocked before the provider nothing), in the windows of the run's start in
// its tenant's zone, and no counter of a scope a run names no value of.
func TestSpendCountersMoveWithTheRunsTheyCount(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	india, err := s.CreateTenant(ctx, "India")
	require.NoError(t, err)
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	z := &zones{m: map[string]*time.Location{india.ID: kolkata}}
	s.SetSpend(z, "r1")

	d := tenant.DefaultID
	at := func(v string) time.Time { return time.UnixMilli(ms(v)).UTC() }
	last := at("2026-03-31T23:59:10Z") // the last minute of March, in UTC
	recs := []*ledger.Record{
		spendRun(d, last, ledger.RouteLive, "chat", "key_1", "bot", "u1", 0.5, 100),
		spendRun(d, last.Add(10*time.Second), ledger.RouteLive, "chat", "", "", "", 0.25, 50),
		spendRun(d, last, ledger.RouteExactCache, "chat", "key_1", "", "", 0.125, 30),
		spendRun(d, last, ledger.RouteArtifact, "chat", "", "bot", "", 0, 0),
		spendRun(d, last, ledger.RouteBlocked, "chat", "key_1", "bot", "u1", 0, 0), // blocked before the provider
		spendRun(d, at("2026-04-01T00:00:05Z"), ledger.RouteLive, "chat", "", "", "", 1, 10),
		// 00:15 on 11 March in Kolkata, and 23:45 on the 10th.
		spendRun(india.ID, at("2026-03-10T18:45:00Z"), ledger.RouteLive, "x", "", "", "", 2, 20),
		spendRun(india.ID, at("2026-03-10T18:15:00Z"), ledger.RouteLive, "x", "", "", "", 4, 40),
	}
	require.NoError(t, s.InsertRuns(ctx, recs))
	assert.EqualValues(t, 2, z.calls.Load(), "one zone lookup per tenant of the batch")

	march := spend.Amount{USD: 0.75, Tokens: 150, Requests: 2, Hits: 2}
	april := spend.Amount{USD: 1, Tokens: 10, Requests: 1}
	for _, w := range []struct {
		window       spend.Window
		march, april string
	}{
		{spend.Month, "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{spend.Day, "2026-03-31T00:00:00Z", "2026-04-01T00:00:00Z"},
		{spend.Hour, "2026-03-31T23:00:00Z", "2026-04-01T00:00:00Z"},
	} {
		for _, sc := range []spend.Scope{spend.Tenant, spend.App} {
			key := map[spend.Scope]string{spend.App: "chat"}[sc]
			assert.Equal(t, map[string]spend.Amount{key: march}, listed(t, s, d, sc, w.window, w.march), "%s %s", sc, w.window)
			assert.Equal(t, map[string]spend.Amount{key: april}, listed(t, s, d, sc, w.window, w.april), "%s %s", sc, w.window)
		}
		assert.Equal(t, map[string]spend.Amount{"key_1": {USD: 0.5, Tokens: 100, Requests: 1, Hits: 1}},
			listed(t, s, d, spend.Key, w.window, w.march), "the blocked call counts nothing; a run without a key no key's")
		assert.Equal(t, map[string]spend.Amount{"bot": {USD: 0.5, Tokens: 100, Requests: 1, Hits: 1}},
			listed(t, s, d, spend.Agent, w.window, w.march))
		assert.Equal(t, map[string]spend.Amount{"u1": {USD: 0.5, Tokens: 100, Requests: 1}},
			listed(t, s, d, spend.Subject, w.window, w.march))
		for _, sc := range []spend.Scope{spend.Key, spend.Agent, spend.Subject} {
			assert.Empty(t, listed(t, s, d, sc, w.window, w.april), "%s %s", sc, w.window)
		}
	}

	// Kolkata's windows start at 18:30 UTC the day before (its month too).
	late := spend.Amount{USD: 2, Tokens: 20, Requests: 1}
	early := spend.Amount{USD: 4, Tokens: 40, Requests: 1}
	both := spend.Amount{USD: 6, Tokens: 60, Requests: 2}
	for _, c := range []struct {
		window spend.Window
		start  string
		want   spend.Amount
	}{
		{spend.Hour, "2026-03-10T18:30:00Z", late},
		{spend.Hour, "2026-03-10T17:30:00Z", early},
		{spend.Day, "2026-03-10T18:30:00Z", late},
		{spend.Day, "2026-03-09T18:30:00Z", early},
		{spend.Month, "2026-02-28T18:30:00Z", both},
	} {
		assert.Equal(t, map[string]spend.Amount{"": c.want}, listed(t, s, india.ID, spend.Tenant, c.window, c.start), "%s %s", c.window, c.start)
		assert.Equal(t, map[string]spend.Amount{"x": c.want}, listed(t, s, india.ID, spend.App, c.window, c.start), "%s %s", c.window, c.start)
		assert.Empty(t, listed(t, s, d, spend.Tenant, c.window, c.start), "another tenant's counters")
	}
	assert.Empty(t, listed(t, s, india.ID, spend.Tenant, spend.Day, "2026-03-10T00:00:00Z"), "no UTC windows for Kolkata")

	// SumCounters reads the counters named, of this tenant only.
	counters := []spend.Counter{
		{Scope: spend.Tenant, Window: spend.Month, Start: ms("2026-03-01T00:00:00Z")},
		{Scope: spend.Key, Key: "key_1", Window: spend.Day, Start: ms("2026-03-31T00:00:00Z")},
		{Scope: spend.Key, Key: "key_2", Window: spend.Day, Start: ms("2026-03-31T00:00:00Z")},
		{Scope: spend.Tenant, Window: spend.Month, Start: ms("2026-02-28T18:30:00Z")},
	}
	sums, err := s.SumCounters(ctx, d, counters, "")
	require.NoError(t, err)
	assert.Equal(t, map[spend.Counter]spend.Amount{
		counters[0]: march,
		counters[1]: {USD: 0.5, Tokens: 100, Requests: 1, Hits: 1},
	}, sums)
	sums, err = s.SumCounters(ctx, india.ID, counters, "")
	require.NoError(t, err)
	assert.Equal(t, map[spend.Counter]spend.Amount{counters[3]: both}, sums)

	// A batch that fails moves no counter: they share its transaction.
	dup := spendRun(d, last, ledger.RouteLive, "chat", "", "", "", 16, 1)
	dup.Run.ID = recs[0].Run.ID
	require.Error(t, s.InsertRuns(ctx, []*ledger.Record{spendRun(d, last, ledger.RouteLive, "chat", "", "", "", 16, 1), dup}))
	assert.Equal(t, map[string]spend.Amount{"": march}, listed(t, s, d, spend.Tenant, spend.Month, "2026-03-01T00:00:00Z"))

	// The next batch adds to the rows there.
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{spendRun(d, last, ledger.RouteLive, "chat", "", "", "", 0.25, 50)}))
	assert.Equal(t, map[string]spend.Amount{"": {USD: 1, Tokens: 200, Requests: 3, Hits: 2}},
		listed(t, s, d, spend.Tenant, spend.Month, "2026-03-01T00:00:00Z"))
}

// spendDSN is a database for stores opened one after another or side by
// side, replicas of one svc.
func spendDSN(t *testing.T) string {
	if storetest.Postgres() {
		return storetest.DSN(t)
	}
	return filepath.Join(t.TempDir(), "svc.db")
}

func openStore(t *testing.T, dsn string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	return s
}

// Each replica's counters are rows of its own: a read leaves out one
// replica's (what that process counts in memory) or none, and the counters
// are there after the database is opened again.
func TestSpendCountersByReplicaSurviveReopening(t *testing.T) {
	ctx := context.Background()
	dsn := spendDSN(t)
	at := time.UnixMilli(ms("2026-05-05T10:20:00Z")).UTC()
	month := spend.Counter{Scope: spend.App, Key: "chat", Window: spend.Month, Start: ms("2026-05-01T00:00:00Z")}

	a := openStore(t, dsn)
	a.SetSpend(spend.UTC{}, "a")
	require.NoError(t, a.InsertRuns(ctx, []*ledger.Record{spendRun(tenant.DefaultID, at, ledger.RouteLive, "chat", "", "", "", 1, 10)}))
	require.NoError(t, a.Close())

	b := openStore(t, dsn)
	defer func() { require.NoError(t, b.Close()) }()
	b.SetSpend(spend.UTC{}, "b")
	require.NoError(t, b.InsertRuns(ctx, []*ledger.Record{
		spendRun(tenant.DefaultID, at, ledger.RouteLive, "chat", "", "", "", 2, 20),
		spendRun(tenant.DefaultID, at, ledger.RouteExactCache, "chat", "", "", "", 0, 0),
	}))
	ofA := spend.Amount{USD: 1, Tokens: 10, Requests: 1}
	ofB := spend.Amount{USD: 2, Tokens: 20, Requests: 1, Hits: 1}
	all := spend.Amount{USD: 3, Tokens: 30, Requests: 2, Hits: 1}
	for except, want := range map[string]spend.Amount{"": all, "a": ofB, "b": ofA, "c": all} {
		got, err := b.SumCounters(ctx, tenant.DefaultID, []spend.Counter{month}, except)
		require.NoError(t, err)
		assert.Equal(t, map[spend.Counter]spend.Amount{month: want}, got, "except %q", except)
	}
	assert.Equal(t, map[string]spend.Amount{"chat": all}, listed(t, b, tenant.DefaultID, spend.App, spend.Month, "2026-05-01T00:00:00Z"),
		"a list sums every replica's")

	// Before SetSpend a store counts as the replica "" in UTC: runs a
	// journal restores at start are no process's in memory.
	c := openStore(t, dsn)
	defer func() { require.NoError(t, c.Close()) }()
	require.NoError(t, c.RestoreRuns(ctx, []*ledger.Record{spendRun(tenant.DefaultID, at, ledger.RouteLive, "chat", "", "", "", 4, 40)}))
	got, err := c.SumCounters(ctx, tenant.DefaultID, []spend.Counter{month}, "b")
	require.NoError(t, err)
	assert.Equal(t, map[spend.Counter]spend.Amount{month: {USD: 5, Tokens: 50, Requests: 2}}, got)
}

// Of concurrent claims of one alert, on any replica, exactly one wins; an
// alert of another window, percent, budget or tenant is a claim of its own.
func TestSpendClaimAlertOnce(t *testing.T) {
	ctx := context.Background()
	dsn := spendDSN(t)
	replicas := []*store.Store{openStore(t, dsn), openStore(t, dsn)}
	defer func() {
		for _, s := range replicas {
			require.NoError(t, s.Close())
		}
	}()
	s := replicas[0]
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	start := ms("2026-05-01T00:00:00Z")

	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := replicas[i%2].ClaimAlert(ctx, tenant.DefaultID, "monthly", start, 80)
			assert.NoError(t, err)
			if won {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, wins.Load())

	for _, c := range []struct {
		tenantID, budget string
		start            int64
		percent          int
	}{
		{tenant.DefaultID, "monthly", start, 100},
		{tenant.DefaultID, "monthly", ms("2026-06-01T00:00:00Z"), 80},
		{tenant.DefaultID, "daily", start, 80},
		{other.ID, "monthly", start, 80},
	} {
		won, err := s.ClaimAlert(ctx, c.tenantID, c.budget, c.start, c.percent)
		require.NoError(t, err)
		assert.True(t, won, "%+v", c)
		won, err = s.ClaimAlert(ctx, c.tenantID, c.budget, c.start, c.percent)
		require.NoError(t, err)
		assert.False(t, won, "%+v claimed twice", c)
	}
}

// Budgets come back as set, in their order, and a tenant sees only its own.
func TestSpendBudgetsRoundTripPerTenant(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	usd, tokens, requests := 50.0, int64(1_000_000), int64(10)
	list := []spend.Budget{
		{ID: "zeta", Scope: spend.App, Match: "chat", Window: spend.Day, Kind: spend.Hard, LimitUSD: &usd, Description: "chat's day"},
		{ID: "alpha", Scope: spend.Key, Window: spend.Month, Kind: spend.Soft, LimitTokens: &tokens},
		{ID: "mid", Scope: spend.Tenant, Window: spend.Hour, Kind: spend.Hard, LimitUSD: &usd, LimitRequests: &requests},
	}
	got, err := s.Budgets(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, []spend.Budget{}, got, "none yet")

	require.NoError(t, s.ReplaceBudgets(ctx, tenant.DefaultID, list))
	require.NoError(t, s.ReplaceBudgets(ctx, other.ID, list[2:]))
	got, err = s.Budgets(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, list, got)
	got, err = s.Budgets(ctx, other.ID)
	require.NoError(t, err)
	assert.Equal(t, list[2:], got)

	// A replacement takes the place of the whole list, of this tenant only.
	require.NoError(t, s.ReplaceBudgets(ctx, tenant.DefaultID, []spend.Budget{list[1], list[0]}))
	got, err = s.Budgets(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, []spend.Budget{list[1], list[0]}, got)
	require.NoError(t, s.ReplaceBudgets(ctx, tenant.DefaultID, nil))
	got, err = s.Budgets(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Empty(t, got)
	got, err = s.Budgets(ctx, other.ID)
	require.NoError(t, err)
	assert.Equal(t, list[2:], got)

	// A list with an id twice is refused whole.
	require.Error(t, s.ReplaceBudgets(ctx, other.ID, []spend.Budget{list[0], list[0]}))
	got, err = s.Budgets(ctx, other.ID)
	require.NoError(t, err)
	assert.Equal(t, list[2:], got)
}

// The daily retention sweep deletes the tenant's counters and alerts of
// windows that started more than 70 days ago, whatever the tenant keeps of
// its runs, and nothing else.
func TestSpendRetentionDeletesOnlyOldWindows(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	now := time.UnixMilli(ms("2026-06-15T12:00:00Z")).UTC() // 70 days before: 6 April, 12:00
	s.Now = func() time.Time { return now }
	at := func(v string) time.Time { return time.UnixMilli(ms(v)).UTC() }
	var recs []*ledger.Record
	for _, tid := range []string{tenant.DefaultID, other.ID} {
		for _, v := range []string{"2026-04-05T10:00:00Z", "2026-04-07T10:00:00Z", "2026-06-14T10:00:00Z"} {
			recs = append(recs, spendRun(tid, at(v), ledger.RouteLive, "chat", "", "", "", 1, 1))
		}
	}
	require.NoError(t, s.InsertRuns(ctx, recs))
	for _, tid := range []string{tenant.DefaultID, other.ID} {
		for _, v := range []string{"2026-04-05T00:00:00Z", "2026-04-07T00:00:00Z"} {
			won, err := s.ClaimAlert(ctx, tid, "b", ms(v), 80)
			require.NoError(t, err)
			require.True(t, won)
		}
	}

	// Runs are kept 365 days: only the spend retention deletes here.
	_, err = ledger.NewRetention(s, retentionDays{tenant.DefaultID: 365}, func() time.Time { return now }).Sweep(ctx, tenant.DefaultID)
	require.NoError(t, err)

	one := spend.Amount{USD: 1, Tokens: 1, Requests: 1}
	for _, c := range []struct {
		window spend.Window
		start  string
		kept   bool
	}{
		{spend.Hour, "2026-04-05T10:00:00Z", false},
		{spend.Day, "2026-04-05T00:00:00Z", false},
		{spend.Hour, "2026-04-07T10:00:00Z", true},
		{spend.Day, "2026-04-07T00:00:00Z", true},
		{spend.Month, "2026-04-01T00:00:00Z", false}, // April's, begun 75 days ago
		{spend.Hour, "2026-06-14T10:00:00Z", true},
		{spend.Day, "2026-06-14T00:00:00Z", true},
		{spend.Month, "2026-06-01T00:00:00Z", true},
	} {
		want := map[string]spend.Amount{}
		if c.kept {
			want["chat"] = one
		}
		assert.Equal(t, want, listed(t, s, tenant.DefaultID, spend.App, c.window, c.start), "%s %s", c.window, c.start)
		assert.NotEmpty(t, listed(t, s, other.ID, spend.App, c.window, c.start), "another tenant's %s %s", c.window, c.start)
	}
	_, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 3, total)

	// The old window's alert is gone (a claim wins again), the newer one's kept.
	for v, again := range map[string]bool{"2026-04-05T00:00:00Z": true, "2026-04-07T00:00:00Z": false} {
		won, err := s.ClaimAlert(ctx, tenant.DefaultID, "b", ms(v), 80)
		require.NoError(t, err)
		assert.Equal(t, again, won, v)
		won, err = s.ClaimAlert(ctx, other.ID, "b", ms(v), 80)
		require.NoError(t, err)
		assert.False(t, won, "another tenant's alert of %s", v)
	}
}

// Batches stored at once, by two replicas and two writers of each (whose
// rows are the same), add up: every run counted once, each replica's
// counters its own runs'.
func TestSpendCountersAddUpUnderConcurrentBatches(t *testing.T) {
	ctx := context.Background()
	dsn := spendDSN(t)
	replicas := []*store.Store{openStore(t, dsn), openStore(t, dsn)}
	defer func() {
		for _, s := range replicas {
			require.NoError(t, s.Close())
		}
	}()
	replicas[0].SetSpend(spend.UTC{}, "a")
	replicas[1].SetSpend(spend.UTC{}, "b")
	at := time.UnixMilli(ms("2026-05-05T10:20:00Z")).UTC()
	const writers, batches, perBatch = 2, 6, 6
	var wg sync.WaitGroup
	for _, s := range replicas {
		for range writers {
			wg.Go(func() {
				for range batches {
					recs := make([]*ledger.Record, perBatch)
					for i := range recs {
						recs[i] = spendRun(tenant.DefaultID, at, ledger.RouteLive, "chat", "key_1", "bot", []string{"u1", "u2"}[i%2], 0.5, 10)
					}
					assert.NoError(t, s.InsertRuns(ctx, recs))
				}
			})
		}
	}
	wg.Wait()

	per := int64(writers * batches * perBatch)
	ofOne := spend.Amount{USD: 0.5 * float64(per), Tokens: 10 * per, Requests: per}
	all := spend.Amount{USD: 2 * ofOne.USD, Tokens: 2 * ofOne.Tokens, Requests: 2 * ofOne.Requests}
	for _, sc := range []spend.Scope{spend.Tenant, spend.App, spend.Key, spend.Agent} {
		key := map[spend.Scope]string{spend.App: "chat", spend.Key: "key_1", spend.Agent: "bot"}[sc]
		c := spend.Counter{Scope: sc, Key: key, Window: spend.Day, Start: ms("2026-05-05T00:00:00Z")}
		for except, want := range map[string]spend.Amount{"": all, "a": ofOne, "b": ofOne} {
			got, err := replicas[0].SumCounters(ctx, tenant.DefaultID, []spend.Counter{c}, except)
			require.NoError(t, err)
			assert.Equal(t, map[spend.Counter]spend.Amount{c: want}, got, "%s except %q", sc, except)
		}
	}
	half := spend.Amount{USD: all.USD / 2, Tokens: all.Tokens / 2, Requests: all.Requests / 2}
	assert.Equal(t, map[string]spend.Amount{"u1": half, "u2": half},
		listed(t, replicas[1], tenant.DefaultID, spend.Subject, spend.Hour, "2026-05-05T10:00:00Z"))
}
