package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func newRun(tenantID string, at time.Time, route, status, agent string) *ledger.Record {
	run := &ledger.Run{
		ID: ids.New("run"), TenantID: tenantID, CreatedAt: at, Route: route, Status: status, HTTPStatus: 200,
		Model: "gpt-4o-mini", App: "app", Agent: agent, Mode: "optimize", Provider: "mock",
		PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CostUSD: 0.0001, LatencyMS: 1.5,
		Explanation: ledger.RouteExplanation{Route: route, Reason: "r", Rejected: []ledger.Alternative{}, Policy: ledger.Verdict{Decision: "allow"}},
		Request:     json.RawMessage(`{"model":"gpt-4o-mini","messages":[]}`), Response: json.RawMessage(`{"id":"x"}`),
	}
	events := []ledger.Event{{Type: "request.received", Payload: json.RawMessage(`{"a":1}`)}, {Type: "provider.completed", Payload: json.RawMessage(`{}`)}}
	return ledger.NewRecord(run, events, at)
}

func TestRunsRoundTripAndIntegrity(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	rec := newRun(tenant.DefaultID, time.UnixMilli(1_700_000_000_000).UTC(), ledger.RouteLive, ledger.StatusOK, "bot")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))

	got, err := s.Run(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	want := *rec.Run
	assert.Equal(t, want, got)

	c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	assert.Equal(t, want, c.Run)
	assert.Equal(t, rec.Events, c.Events)
	assert.Equal(t, ledger.ChainV2, c.Chain)
	assert.True(t, c.Verify().OK)

	// An event altered directly in SQLite is found at its index.
	_, err = s.DB().Exec(`UPDATE run_events SET payload = '{"a":2}' WHERE run_id = $1 AND seq = 0`, rec.Run.ID)
	require.NoError(t, err)
	c, err = s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	res := c.Verify()
	assert.False(t, res.OK)
	assert.Equal(t, 0, *res.BrokenAt)
}

// A database whose run events still carry their foreign key (a build
// before it was dropped) keeps every event through the upgrade, and a run
// deleted after it takes its events with it, as the key's cascade did.
func TestRunEventsKeepTheirRowsAndCascadeWithoutTheirKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "svc.db")
	s, err := store.Open(ctx, path)
	require.NoError(t, err)
	recs := []*ledger.Record{
		newRun(tenant.DefaultID, time.UnixMilli(1_700_000_000_000).UTC(), ledger.RouteLive, ledger.StatusOK, ""),
		newRun(tenant.DefaultID, time.UnixMilli(1_700_000_000_001).UTC(), ledger.RouteLive, ledger.StatusOK, ""),
	}
	require.NoError(t, s.InsertRuns(ctx, recs))
	for _, q := range []string{
		`DROP TRIGGER runs_delete_events`,
		`CREATE TABLE run_events_keyed (
			run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL, tenant_id TEXT NOT NULL,
			at INTEGER NOT NULL, type TEXT NOT NULL, payload BLOB NOT NULL, prev_hash BLOB NOT NULL, hash BLOB NOT NULL,
			PRIMARY KEY (run_id, seq)) WITHOUT ROWID`,
		`INSERT INTO run_events_keyed SELECT * FROM run_events`,
		`DROP TABLE run_events`,
		`ALTER TABLE run_events_keyed RENAME TO run_events`,
		`DELETE FROM schema_migrations WHERE name = 'migrations/0027_run_events_unchecked.sql'`,
	} {
		_, err = s.DB().Exec(q)
		require.NoError(t, err, q)
	}
	require.Equal(t, 1, count(t, s, `SELECT COUNT(*) FROM pragma_foreign_key_list('run_events')`), "the key is back")
	require.NoError(t, s.Close())

	s, err = store.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM pragma_foreign_key_list('run_events')`))
	for _, rec := range recs {
		c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
		require.NoError(t, err)
		assert.Equal(t, rec.Events, c.Events)
		assert.True(t, c.Verify().OK)
	}
	_, err = s.DB().Exec(`DELETE FROM runs WHERE id = $1`, recs[0].Run.ID)
	require.NoError(t, err)
	assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM run_events WHERE run_id = '`+recs[0].Run.ID+`'`))
	assert.Equal(t, len(recs[1].Events), count(t, s, `SELECT COUNT(*) FROM run_events WHERE run_id = '`+recs[1].Run.ID+`'`))
}

// On either engine a run's events carry no foreign key (each insert would
// look their run up), and a deleted run still takes its events with it.
func TestRunEventsHaveNoForeignKeyButFollowTheirRun(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	q := `SELECT COUNT(*) FROM pragma_foreign_key_list('run_events')`
	if storetest.Postgres() {
		q = `SELECT COUNT(*) FROM pg_constraint WHERE conrelid = 'run_events'::regclass AND contype = 'f'`
	}
	assert.Zero(t, count(t, s, q))
	rec := newRun(tenant.DefaultID, time.UnixMilli(1_700_000_000_000).UTC(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))
	_, err := s.DB().Exec(`DELETE FROM runs WHERE id = $1`, rec.Run.ID)
	require.NoError(t, err)
	assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM run_events WHERE run_id = '`+rec.Run.ID+`'`))
}

// A run's digest, recomputed from what the store reads back, is the one
// its record was chained with: every field round-trips exactly (times in
// milliseconds, floats by their bits, the explanation's bytes, a missing
// or empty answer).
// A run's trace id is stored and read back by the detail and the list;
// the run's chain, which binds its digest, still verifies.
func TestRunTraceIDRoundTrips(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	rec := newRun(tenant.DefaultID, time.UnixMilli(1_700_000_000_000).UTC(), ledger.RouteLive, ledger.StatusOK, "")
	rec.Run.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	rec = ledger.NewRecord(rec.Run, rec.Events, rec.Run.CreatedAt)
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))

	got, err := s.Run(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	assert.Equal(t, rec.Run.TraceID, got.TraceID)
	runs, _, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, rec.Run.TraceID, runs[0].TraceID)
	c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	assert.True(t, c.Verify().OK)
}

func TestRunDigestRoundTrips(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	at := time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("x", 3600))
	var recs []*ledger.Record
	for i, response := range []json.RawMessage{json.RawMessage(`{"id":"x"}`), nil, {}} {
		rec := newRun(tenant.DefaultID, at, ledger.RouteLive, ledger.StatusOK, "bot")
		r := rec.Run
		r.CostUSD, r.LatencyMS, r.SavedUSD, r.SavedMS, r.GhostSavedUSD = 0.1+0.2, 1e-9*float64(i+1), math.Copysign(0, -1), 120, 1.0/3
		r.Stream, r.UsageUnknown, r.PriceUnknown = i == 0, i == 1, i == 2
		r.Response = response
		r.Explanation.Cache = map[string]any{"z": 1, "a": []any{"<&>", 12345678901234}, "m": "é\u2028"}
		r.Explanation.EstimatedSavingsUSD = 0.000123
		r.Error = "upstream said \"no\"\n"
		rec = ledger.NewRecord(r, rec.Events, at) // the fields are final: record them again
		recs = append(recs, rec)
	}
	require.NoError(t, s.InsertRuns(ctx, recs))
	for _, rec := range recs {
		c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
		require.NoError(t, err)
		assert.Equal(t, rec.Digest, c.Digest(), "response %q", rec.Run.Response)
		assert.True(t, c.Verify().OK)
	}
}

// What editing a stopped svc's database showed going unnoticed is now
// reported by the run's integrity: an edited answer or cost, and a run
// whose events were all deleted.
func TestIntegrityDetectsEditedFieldsAndDeletedEvents(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	for _, edit := range []string{
		`UPDATE runs SET response = $2 WHERE id = $1`,
		`UPDATE runs SET cost_usd = 0 WHERE id = $1`,
		`UPDATE runs SET explanation = '{"route":"live","reason":"forged"}' WHERE id = $1`,
		`UPDATE runs SET created_at = created_at + 1 WHERE id = $1`,
	} {
		rec := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
		require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))
		args := []any{rec.Run.ID}
		if strings.Contains(edit, "$2") {
			args = append(args, []byte(`{"id":"forged"}`))
		}
		_, err := s.DB().Exec(edit, args...)
		require.NoError(t, err)
		c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
		require.NoError(t, err)
		res := c.Verify()
		assert.False(t, res.OK, edit)
		assert.Equal(t, ledger.ReasonRunMismatch, res.Reason, edit)
	}

	rec := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))
	_, err := s.DB().Exec(`DELETE FROM run_events WHERE run_id = $1`, rec.Run.ID)
	require.NoError(t, err)
	_, err = s.DB().Exec(`UPDATE runs SET event_count = 0 WHERE id = $1`, rec.Run.ID)
	require.NoError(t, err)
	c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	res := c.Verify()
	assert.False(t, res.OK)
	assert.Equal(t, ledger.ReasonNoEvents, res.Reason)
}

func TestRunsAreTenantScoped(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	theirs := newRun(other.ID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{theirs}))

	_, err = s.Run(ctx, tenant.DefaultID, theirs.Run.ID)
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	_, _, err = s.RunEvents(ctx, tenant.DefaultID, theirs.Run.ID)
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	_, err = s.AppendEvent(ctx, tenant.DefaultID, theirs.Run.ID, "x", time.Now(), json.RawMessage(`{}`))
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	runs, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, runs)
	assert.Zero(t, total)

	require.NoError(t, s.AddFeedback(ctx, &ledger.Feedback{ID: "fb_x", TenantID: tenant.DefaultID, RunID: theirs.Run.ID, Rating: 1, CreatedAt: time.Now()}))
	var n int
	require.NoError(t, s.DB().QueryRow(`SELECT COUNT(*) FROM feedback`).Scan(&n))
	assert.Zero(t, n, "feedback on another tenant's run stores nothing")
}

func TestListRunsFiltersAndPages(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	base := time.UnixMilli(1_700_000_000_000).UTC()
	var recs []*ledger.Record
	for i := range 7 {
		route, status := ledger.RouteLive, ledger.StatusOK
		if i%3 == 0 {
			route = ledger.RouteExactCache
		}
		if i == 4 {
			status = ledger.StatusError
		}
		recs = append(recs, newRun(tenant.DefaultID, base.Add(time.Duration(i)*time.Second), route, status, ""))
	}
	require.NoError(t, s.InsertRuns(ctx, recs))

	runs, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, 7, total)
	require.Len(t, runs, 3)
	assert.Equal(t, recs[6].Run.ID, runs[0].ID, "newest first")
	assert.Nil(t, runs[0].Request, "lists do not carry bodies")

	runs, _, err = s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 3, Offset: 6})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, recs[0].Run.ID, runs[0].ID)

	_, total, err = s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Route: ledger.RouteExactCache, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 3, total)
	runs, total, err = s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Status: ledger.StatusError, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, recs[4].Run.ID, runs[0].ID)
}

// RunsByID reads the tenant's runs among the ids, oldest first and as a
// listing shows them; another tenant's run, or an unknown id, reads
// nothing.
func TestRunsByIDReadsTheTenantsRunsOnly(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	base := time.UnixMilli(1_700_000_000_000).UTC()
	first := newRun(tenant.DefaultID, base, ledger.RouteLive, ledger.StatusOK, "bot")
	first.Run.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	second := newRun(tenant.DefaultID, base.Add(time.Second), ledger.RouteExactCache, ledger.StatusOK, "")
	unasked := newRun(tenant.DefaultID, base.Add(2*time.Second), ledger.RouteLive, ledger.StatusOK, "")
	theirs := newRun(other.ID, base, ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{second, first, unasked, theirs}))

	runs, err := s.RunsByID(ctx, tenant.DefaultID, []string{second.Run.ID, theirs.Run.ID, "run_none", first.Run.ID})
	require.NoError(t, err)
	listed, _, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, listed, 3)
	assert.Equal(t, []ledger.Run{listed[2], listed[1]}, runs, "oldest first, as the list shows them")
	assert.Equal(t, first.Run.TraceID, runs[0].TraceID)
	assert.Nil(t, runs[0].Request, "no bodies")

	runs, err = s.RunsByID(ctx, other.ID, []string{first.Run.ID, second.Run.ID})
	require.NoError(t, err)
	assert.Empty(t, runs, "another tenant's ids read nothing")
}

// Concurrent appends to one run serialize: the chain still verifies.
func TestConcurrentAppendsKeepTheChain(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	rec := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, err := s.AppendEvent(ctx, tenant.DefaultID, rec.Run.ID, "tool.called", time.Now(), json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	assert.Len(t, c.Events, 52)
	assert.True(t, c.Verify().OK)
}

func TestAgentsCounted(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	t0 := time.UnixMilli(1_700_000_000_000).UTC()
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{
		newRun(tenant.DefaultID, t0, ledger.RouteLive, ledger.StatusOK, "triage-bot"),
		newRun(tenant.DefaultID, t0.Add(time.Minute), ledger.RouteLive, ledger.StatusOK, "triage-bot"),
		newRun(tenant.DefaultID, t0.Add(2*time.Minute), ledger.RouteLive, ledger.StatusOK, "other"),
	}))
	agents, err := s.ListAgents(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, agents, 2)
	assert.Equal(t, "other", agents[0].Name)
	assert.Equal(t, ledger.Agent{Name: "triage-bot", FirstSeen: t0, LastSeen: t0.Add(time.Minute), RunCount: 2, Trust: ledger.DefaultTrust}, agents[1])
}

// Standings reach the store by two paths, a run's batch and a traced tool
// call's verdict at once, and not always in the order they were reached:
// the one that counts more decisions stays, whichever arrives last.
func TestAgentKeepsItsLaterStanding(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	t0 := time.UnixMilli(1_700_000_000_000).UTC()
	run := func(at time.Time, st ledger.Standing) *ledger.Record {
		rec := newRun(tenant.DefaultID, at, ledger.RouteLive, ledger.StatusOK, "bot")
		rec.Standing = &st
		return rec
	}
	allowed := ledger.NewStanding().After("allow")              // the first decision
	denied := allowed.After("deny").After("deny").After("deny") // three later ones
	standing := func() ledger.Standing {
		st, ok, err := s.AgentStanding(ctx, tenant.DefaultID, "bot")
		require.NoError(t, err)
		require.True(t, ok)
		return st
	}

	require.NoError(t, s.SaveAgentStanding(ctx, tenant.DefaultID, "bot", denied, t0.Add(time.Second)))
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{run(t0, allowed)}), "the earlier run's batch lands after")
	assert.Equal(t, denied, standing(), "the run's earlier standing is not stored over the later one")
	assert.Equal(t, ledger.TrustRestricted, standing().Trust)

	require.NoError(t, s.SaveAgentStanding(ctx, tenant.DefaultID, "bot", allowed, t0), "nor is an earlier traced one")
	assert.Equal(t, denied, standing())

	later := denied.After("allow")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{run(t0.Add(2*time.Second), later)}))
	assert.Equal(t, later, standing(), "a later run's standing is stored")

	agents, err := s.ListAgents(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, agents, 1)
	assert.Equal(t, int64(2), agents[0].RunCount, "every run is counted, whichever standing stays")
	assert.Equal(t, t0.Add(2*time.Second), agents[0].LastSeen)
}

func newRecorder(t *testing.T, s ledger.Store, dir string) *ledger.Recorder {
	t.Helper()
	r, err := ledger.NewRecorder(context.Background(), s, dir, hclog.NewNullLogger())
	require.NoError(t, err)
	return r
}

func TestRecorderStoresConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	dir := t.TempDir()
	r := newRecorder(t, s, dir)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			assert.NoError(t, r.Record(ctx, newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "bot")))
		})
	}
	wg.Wait()
	require.NoError(t, r.Sync(ctx))
	_, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, 100, total, "every acknowledged run is readable after Sync")
	agents, err := s.ListAgents(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.EqualValues(t, 100, agents[0].RunCount)

	r.Close()
	assert.ErrorIs(t, r.Record(ctx, newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")), ledger.ErrClosed)
	left, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	assert.Empty(t, left, "a clean stop leaves no journal segment behind")
}

func TestOneRecorderPerJournal(t *testing.T) {
	s := storetest.Open(t)
	dir := t.TempDir()
	first := newRecorder(t, s, dir)
	_, err := ledger.NewRecorder(context.Background(), s, dir, hclog.NewNullLogger())
	require.Error(t, err, "a second process on the same database would replay and delete the first one's journal")
	assert.Contains(t, err.Error(), "another svc process is using this database")
	first.Close()
	second := newRecorder(t, s, dir)
	second.Close()
}

func TestRecorderDropsOnlyTheRunTheStoreRefuses(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	r := newRecorder(t, s, t.TempDir())
	defer r.Close()
	good := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	bad := newRun("t_missing", time.Now(), ledger.RouteLive, ledger.StatusOK, "") // foreign key fails
	require.NoError(t, r.Record(ctx, bad))
	require.NoError(t, r.Record(ctx, good))
	require.NoError(t, r.Sync(ctx), "a refused run must not hold back Sync")
	_, err := s.Run(ctx, tenant.DefaultID, good.Run.ID)
	assert.NoError(t, err)
	_, total, err := s.ListRuns(ctx, "t_missing", ledger.Filter{Limit: 1})
	require.NoError(t, err)
	assert.Zero(t, total)
}

// holdStore refuses every write until released, as a store that is down.
type holdStore struct {
	ledger.Store
	mu   sync.Mutex
	down bool
}

func (h *holdStore) InsertRuns(ctx context.Context, recs []*ledger.Record) error {
	h.mu.Lock()
	down := h.down
	h.mu.Unlock()
	if down {
		return errors.New("disk I/O error")
	}
	return h.Store.InsertRuns(ctx, recs)
}

func TestJournaledRunsSurviveACrashBeforeTheyAreStored(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "svc.db")
	dir := path + ".runlog"
	s, err := store.Open(ctx, path)
	require.NoError(t, err)
	down := &holdStore{Store: s, down: true}
	r := newRecorder(t, down, dir)
	t.Cleanup(r.Close)
	var recs []*ledger.Record
	for i := range 5 {
		rec := newRun(tenant.DefaultID, time.UnixMilli(1_700_000_000_000+int64(i)).UTC(), ledger.RouteLive, ledger.StatusOK, "bot")
		require.NoError(t, r.Record(ctx, rec))
		recs = append(recs, rec)
	}
	// A run the store refuses must not stop the next start.
	require.NoError(t, r.Record(ctx, newRun("t_missing", time.Now(), ledger.RouteLive, ledger.StatusOK, "")))
	// One run reached the database before the crash: the replay must not
	// store it twice nor count its agent twice.
	require.NoError(t, s.InsertRuns(ctx, recs[:1]))
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, r.Sync(sctx), context.DeadlineExceeded, "runs the store refused are not stored")
	// The process dies: nothing more reaches the database, and its lock on
	// the journal goes with it.
	require.NoError(t, s.Close())
	r.Close()

	s, err = store.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	r2 := newRecorder(t, s, dir)
	defer r2.Close()
	_, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 5, total)
	for _, rec := range recs {
		got, err := s.Run(ctx, tenant.DefaultID, rec.Run.ID)
		require.NoError(t, err)
		assert.Equal(t, *rec.Run, got)
		c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
		require.NoError(t, err)
		assert.True(t, c.Verify().OK)
	}
	agents, err := s.ListAgents(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.EqualValues(t, 5, agents[0].RunCount)
}

func TestRecorderRetriesAStoreThatWasDown(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	down := &holdStore{Store: s, down: true}
	r := newRecorder(t, down, t.TempDir())
	defer r.Close()
	rec := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, r.Record(ctx, rec))
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, r.Sync(sctx), context.DeadlineExceeded, "the first try fails")
	down.mu.Lock()
	down.down = false
	down.mu.Unlock()
	sctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, r.Sync(sctx))
	_, err := s.Run(ctx, tenant.DefaultID, rec.Run.ID)
	assert.NoError(t, err)
}

type retentionDays map[string]float64

func (r retentionDays) RetentionDays(_ context.Context, tenantID string) (float64, error) {
	return r[tenantID], nil
}

func TestRetentionDeletesOnlyOldRunsOfTheTenant(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	now := time.UnixMilli(1_800_000_000_000).UTC()
	var recs []*ledger.Record
	for _, age := range []time.Duration{40 * 24 * time.Hour, 31 * 24 * time.Hour, 29 * 24 * time.Hour, time.Hour} {
		recs = append(recs, newRun(tenant.DefaultID, now.Add(-age), ledger.RouteLive, ledger.StatusOK, ""))
	}
	theirs := newRun(other.ID, now.Add(-40*24*time.Hour), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, append(recs, theirs)))
	old := recs[0].Run.ID
	_, err = s.AppendEvent(ctx, tenant.DefaultID, old, "tool.called", now, json.RawMessage(`{}`))
	require.NoError(t, err)
	require.NoError(t, s.AddSideEffect(ctx, ledger.NewSideEffect(tenant.DefaultID, old, "optimize", ledger.Event{At: now}, "x", 3, json.RawMessage(`{}`))))

	for i, at := range []time.Time{now.Add(-40 * 24 * time.Hour), now.Add(-time.Hour)} {
		for _, tid := range []string{tenant.DefaultID, other.ID} {
			snap := browse.Snapshot{ID: fmt.Sprintf("snap_%s_%d", tid, i), TenantID: tid, URL: "https://example.com/", Source: browse.SourceBuiltin,
				SOM: json.RawMessage(`{}`), CreatedAt: at}
			require.NoError(t, s.SaveSnapshot(ctx, snap))
			require.NoError(t, s.RecordFetch(ctx, tid, snap.ID, false, 10, at))
		}
	}
	r := ledger.NewRetention(s, retentionDays{tenant.DefaultID: 30, other.ID: 60}, func() time.Time { return now })
	n, err := r.Sweep(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	runs, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 2, total)
	assert.Equal(t, recs[3].Run.ID, runs[0].ID)
	assert.Equal(t, recs[2].Run.ID, runs[1].ID)
	for _, table := range []string{"run_events", "side_effects"} {
		var left int
		require.NoError(t, s.DB().QueryRow(`SELECT COUNT(*) FROM `+table+` WHERE run_id = $1`, old).Scan(&left))
		assert.Zero(t, left, "the deleted run's %s go with it", table)
	}
	_, total, err = s.ListRuns(ctx, other.ID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, total, "another tenant's runs follow its own retention")
	for tid, want := range map[string]int{tenant.DefaultID: 1, other.ID: 2} {
		_, n, err := s.ListSnapshots(ctx, tid, "", 10, 0)
		require.NoError(t, err)
		assert.Equal(t, want, n, "web snapshots follow the tenant's retention")
		var fetches int
		require.NoError(t, s.DB().QueryRow(`SELECT COUNT(*) FROM web_fetches WHERE tenant_id = $1`, tid).Scan(&fetches))
		assert.Equal(t, want, fetches)
	}
}

func TestListRunsFiltersByFieldsTimeAndSearch(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	base := time.UnixMilli(1_700_000_000_000).UTC()
	mk := func(i int, app, agent, model, text string) *ledger.Record {
		rec := newRun(tenant.DefaultID, base.Add(time.Duration(i)*time.Minute), ledger.RouteLive, ledger.StatusOK, agent)
		rec.Run.App, rec.Run.Model = app, model
		rec.Run.Request = json.RawMessage(`{"messages":[{"role":"user","content":"` + text + `"}]}`)
		return ledger.NewRecord(rec.Run, rec.Events, rec.Run.CreatedAt)
	}
	recs := []*ledger.Record{
		mk(0, "support", "triage", "gpt-4o-mini", "Refund for ORDER 42"),
		mk(1, "support", "", "gpt-4o", "100% sure"),
		mk(2, "billing", "triage", "gpt-4o-mini", "a_b c"),
		mk(3, "billing", "", "claude", "plain"),
	}
	theirs := newRun(other.ID, base, ledger.RouteLive, ledger.StatusOK, "triage")
	theirs.Run.App = "support"
	require.NoError(t, s.InsertRuns(ctx, append(recs, ledger.NewRecord(theirs.Run, theirs.Events, base))))

	ids := func(f ledger.Filter) []string {
		t.Helper()
		f.Limit = 10
		runs, total, err := s.ListRuns(ctx, tenant.DefaultID, f)
		require.NoError(t, err)
		require.Len(t, runs, total)
		out := []string{}
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	id := func(i ...int) []string {
		out := []string{}
		for j := len(i) - 1; j >= 0; j-- {
			out = append(out, recs[i[j]].Run.ID)
		}
		return out
	}
	assert.Equal(t, id(0, 1), ids(ledger.Filter{App: "support"}), "another tenant's run never matches")
	assert.Equal(t, id(0, 2), ids(ledger.Filter{Agent: "triage"}))
	assert.Equal(t, id(0, 2), ids(ledger.Filter{Model: "gpt-4o-mini"}))
	assert.Equal(t, id(2), ids(ledger.Filter{App: "billing", Agent: "triage"}))
	assert.Equal(t, id(1, 2, 3), ids(ledger.Filter{Since: base.Add(time.Minute)}), "since is included")
	assert.Equal(t, id(0, 1), ids(ledger.Filter{Until: base.Add(2 * time.Minute)}), "until is not")
	assert.Equal(t, id(1), ids(ledger.Filter{Since: base.Add(time.Minute), Until: base.Add(2 * time.Minute)}))

	assert.Equal(t, id(0), ids(ledger.Filter{Q: "order 42"}), "the request's text, in any case")
	assert.Equal(t, id(3), ids(ledger.Filter{Q: "CLAUDE"}), "the model")
	assert.Equal(t, id(2, 3), ids(ledger.Filter{Q: "bill"}), "the app")
	assert.Equal(t, id(1), ids(ledger.Filter{Q: recs[1].Run.ID}), "the run's id")
	assert.Equal(t, id(1), ids(ledger.Filter{Q: "100%"}), "% is matched literally")
	assert.Empty(t, ids(ledger.Filter{Q: "1%s"}), "% is no wildcard")
	assert.Equal(t, id(2), ids(ledger.Filter{Q: "a_b"}), "_ is matched literally")
	assert.Empty(t, ids(ledger.Filter{Q: "r_er"}), "_ is no wildcard")
	assert.Empty(t, ids(ledger.Filter{Q: `\`}))
	assert.Equal(t, id(0), ids(ledger.Filter{Q: "refund", App: "support"}), "a search narrows the other fields")
	assert.Empty(t, ids(ledger.Filter{Q: "refund", App: "billing"}))

	page, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Q: "bill", Limit: 1})
	require.NoError(t, err)
	assert.Len(t, page, 1)
	assert.Equal(t, 2, total, "a search's total counts every match, not the page")
	page, total, err = s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Q: "bill", Limit: 1, Offset: 5})
	require.NoError(t, err)
	assert.Empty(t, page)
	assert.Equal(t, 2, total, "also past the last page")
}

// A search reads at most ledger.SearchWindow runs, the newest that match
// the other filters: a match older than that is not found, unless the other
// filters leave it within reach.
func TestSearchReadsABoundedWindow(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	base := time.UnixMilli(1_700_000_000_000).UTC()
	old := newRun(tenant.DefaultID, base, ledger.RouteLive, ledger.StatusOK, "")
	old.Run.App = "rare"
	old.Run.Request = json.RawMessage(`{"messages":[{"role":"user","content":"needle"}]}`)
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{ledger.NewRecord(old.Run, old.Events, base)}))
	// SearchWindow newer runs without it, copied in SQL from the first.
	_, err := s.DB().ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
		INSERT INTO runs (id, tenant_id, created_at, route, status, http_status, model, app, agent, subject, mode, key_id,
			provider, stream, prompt_tokens, completion_tokens, total_tokens, usage_unknown, cost_usd, price_unknown,
			latency_ms, explanation, error, request, response, event_count, head_hash)
		SELECT 'run_copy' || i, tenant_id, created_at + i, route, status, http_status, model, 'common', agent, subject, mode,
			key_id, provider, stream, prompt_tokens, completion_tokens, total_tokens, usage_unknown, cost_usd, price_unknown,
			latency_ms, explanation, error, '{}', response, event_count, head_hash
		FROM runs, n WHERE runs.id = $2`, ledger.SearchWindow, old.Run.ID)
	require.NoError(t, err)

	_, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Q: "needle", Limit: 10})
	require.NoError(t, err)
	assert.Zero(t, total, "the match is past the window")
	runs, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Q: "needle", App: "rare", Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, total, "within the window of the runs that match the other filters")
	require.Len(t, runs, 1)
	assert.Equal(t, old.Run.ID, runs[0].ID)
}

// Runs are found by their trace id, in their own tenant only, through the
// index on it.
func TestListRunsByTraceID(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	var recs []*ledger.Record
	for i, tid := range []string{tenant.DefaultID, tenant.DefaultID, other.ID} {
		rec := newRun(tid, at, ledger.RouteLive, ledger.StatusOK, "")
		if i != 1 {
			rec.Run.TraceID = traceID
		}
		recs = append(recs, ledger.NewRecord(rec.Run, rec.Events, at))
	}
	require.NoError(t, s.InsertRuns(ctx, recs))

	runs, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{TraceID: traceID, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	require.Len(t, runs, 1)
	assert.Equal(t, recs[0].Run.ID, runs[0].ID, "the tenant's run only")

	if storetest.Postgres() {
		return // the plan below is SQLite's; PostgreSQL's planner picks by table size
	}
	var plan string
	rows, err := s.DB().Query(`EXPLAIN QUERY PLAN SELECT id FROM runs WHERE tenant_id = ? AND trace_id = ? AND trace_id <> ''`, tenant.DefaultID, traceID)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan += detail + "\n"
	}
	require.NoError(t, rows.Err())
	assert.Contains(t, plan, "runs_by_trace_id")
}

// A stored body that is not valid UTF-8 neither breaks the tenant's
// search nor hides its run; text beyond ASCII is found as stored.
func TestRunSearchReadsBodiesThatAreNotUTF8(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	base := time.UnixMilli(1_700_000_000_000).UTC()
	bad := newRun(tenant.DefaultID, base, ledger.RouteLive, ledger.StatusOK, "")
	bad.Run.Request = json.RawMessage("{\"q\":\"Needle \xff\xfe in bytes\"}")
	bad = ledger.NewRecord(bad.Run, bad.Events, base)
	accented := newRun(tenant.DefaultID, base.Add(time.Minute), ledger.RouteLive, ledger.StatusOK, "")
	accented.Run.Response = json.RawMessage(`{"a":"Café \\ NEEDLE"}`)
	accented = ledger.NewRecord(accented.Run, accented.Events, base.Add(time.Minute))
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{bad, accented}))

	search := func(q string) []string {
		t.Helper()
		runs, _, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Q: q, Limit: 10})
		require.NoError(t, err, "search %q", q)
		out := []string{}
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	assert.Equal(t, []string{accented.Run.ID, bad.Run.ID}, search("needle"))
	assert.Equal(t, []string{bad.Run.ID}, search("in bytes"))
	assert.Equal(t, []string{accented.Run.ID}, search("café"))
	assert.Equal(t, []string{accented.Run.ID}, search(`\ needle`))
	assert.Empty(t, search("caf\\303"), "an escape is no byte")
}
