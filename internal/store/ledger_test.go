package store_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/pgtest"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// Every change to a tenant's runs writes its ledger entry, in its own
// transaction: a run stored (or restored from the journal), an event
// appended, a retention sweep. A change that fails writes none.
func TestLedgerEntriesFollowEveryChange(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	now := time.UnixMilli(1_800_000_000_000).UTC()
	s.Now = func() time.Time { return now }
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)

	old := newRun(tenant.DefaultID, now.Add(-40*24*time.Hour), ledger.RouteLive, ledger.StatusOK, "")
	fresh := newRun(tenant.DefaultID, now.Add(-time.Hour), ledger.RouteLive, ledger.StatusOK, "")
	theirs := newRun(other.ID, now.Add(-40*24*time.Hour), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{old, theirs}))
	restored := newRun(tenant.DefaultID, now.Add(-time.Minute), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.RestoreRuns(ctx, []*ledger.Record{old, restored}), "old is stored already: no second entry")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{fresh}))
	e, err := s.AppendEvent(ctx, tenant.DefaultID, fresh.Run.ID, "tool.called", now, json.RawMessage(`{}`))
	require.NoError(t, err)
	_, err = s.AppendEvent(ctx, tenant.DefaultID, theirs.Run.ID, "tool.called", now, json.RawMessage(`{}`))
	require.Error(t, err, "another tenant's run")
	n, err := ledger.NewRetention(s, retentionDays{tenant.DefaultID: 30}, func() time.Time { return now }).Sweep(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = ledger.NewRetention(s, retentionDays{tenant.DefaultID: 30}, func() time.Time { return now }).Sweep(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Zero(t, n, "a sweep that deletes nothing writes no entry")

	entries, err := s.Entries(ctx, tenant.DefaultID, 0, math.MaxInt64, 100)
	require.NoError(t, err)
	type leaf struct {
		kind, run string
		count     int
		head      ledger.Hash
		digest    ledger.Hash
		at        time.Time
	}
	var got []leaf
	for _, en := range entries {
		assert.Equal(t, tenant.DefaultID, en.TenantID)
		assert.Equal(t, now, en.CreatedAt)
		got = append(got, leaf{en.Kind, en.RunID, en.EventCount, en.Head, en.Digest, en.RunAt})
	}
	cutoff := now.Add(-30 * 24 * time.Hour)
	assert.Equal(t, []leaf{
		{ledger.EntryRun, old.Run.ID, 2, old.Head.Hash, old.Digest, old.Run.CreatedAt},
		{ledger.EntryRun, restored.Run.ID, 2, restored.Head.Hash, restored.Digest, restored.Run.CreatedAt},
		{ledger.EntryRun, fresh.Run.ID, 2, fresh.Head.Hash, fresh.Digest, fresh.Run.CreatedAt},
		{ledger.EntryEvent, fresh.Run.ID, 3, e.Hash, ledger.Hash{}, fresh.Run.CreatedAt},
		{ledger.EntryPrune, "", 0, ledger.Hash{}, ledger.Hash{}, cutoff},
	}, got)
	for i := 1; i < len(entries); i++ {
		assert.Greater(t, entries[i].Seq, entries[i-1].Seq)
	}

	theirEntries, err := s.Entries(ctx, other.ID, 0, math.MaxInt64, 100)
	require.NoError(t, err)
	require.Len(t, theirEntries, 1, "the other tenant's ledger holds its run only")
	assert.Equal(t, theirs.Run.ID, theirEntries[0].RunID)

	window, err := s.Entries(ctx, tenant.DefaultID, entries[1].Seq, entries[3].Seq, 100)
	require.NoError(t, err)
	assert.Equal(t, entries[2:4], window, "after < seq <= upTo")
}

// The ledger's tables refuse updates and deletes, against mistakes.
func TestLedgerEntriesAreAppendOnly(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	rec := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))
	for _, q := range []string{`UPDATE ledger_entries SET event_count = 9`, `DELETE FROM ledger_entries`} {
		_, err := s.DB().Exec(q)
		assert.ErrorContains(t, err, "append-only", q)
	}
}

// v1 is rec chained as a build before run digests chained it (what a
// journal it left holds when read back).
func v1(rec *ledger.Record) *ledger.Record {
	rec.Chain = ledger.ChainV1
	prev := ledger.Seed(ledger.ChainV1, rec.Run.TenantID, rec.Run.ID, ledger.Hash{})
	for i := range rec.Events {
		e := &rec.Events[i]
		e.PrevHash = prev
		e.Hash = ledger.Link(prev, e)
		prev = e.Hash
	}
	rec.Head.Hash = prev
	return rec
}

// Runs chained before run digests (stored by an older build, or restored
// from the journal it left) stay readable and verify: their chain by its
// own seed, their fields by their ledger entry. A run stored before the
// ledger existed is entered (kind legacy) with its digest and head when
// the database is upgraded, signed by the next checkpoint, and checked
// against that entry from then on.
func TestChainV1RunsStayReadable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "svc.db")
	s, err := store.Open(ctx, path)
	require.NoError(t, err)
	restored := v1(newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, ""))
	older := v1(newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, ""))
	require.NoError(t, s.RestoreRuns(ctx, []*ledger.Record{restored, older}))
	// older as stored before the ledger: no entry, and the migration that
	// enters such runs not applied yet.
	for _, q := range []string{`DROP TRIGGER ledger_entries_no_delete`, `DELETE FROM ledger_entries WHERE run_id = '` + older.Run.ID + `'`,
		`DELETE FROM schema_migrations WHERE name = 'migrations/0016_ledger_legacy_runs.sql'`} {
		_, err = s.DB().Exec(q)
		require.NoError(t, err, q)
	}
	require.NoError(t, s.Close())
	s, err = store.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	entries, err := s.Entries(ctx, tenant.DefaultID, 0, math.MaxInt64, 10)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	legacy := entries[1]
	assert.Equal(t, ledger.EntryLegacy, legacy.Kind)
	assert.Equal(t, older.Run.ID, legacy.RunID)
	assert.Equal(t, older.Head.Hash, legacy.Head)
	assert.Equal(t, older.Head.Count, legacy.EventCount)
	assert.Equal(t, older.Run.CreatedAt.UnixMilli(), legacy.RunAt.UnixMilli())

	for _, rec := range []*ledger.Record{restored, older} {
		c, err := s.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
		require.NoError(t, err)
		assert.Equal(t, ledger.ChainV1, c.Chain)
		assert.True(t, c.Verify().OK)
		if rec == older {
			assert.Equal(t, c.Digest(), legacy.Digest)
		}
	}

	key, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)
	_, err = ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: s, Key: key, Entries: 1, Interval: time.Minute}).Seal(ctx)
	require.NoError(t, err)
	verify := func() *ledger.Report {
		sn, err := s.LedgerSnapshot(ctx)
		require.NoError(t, err)
		defer sn.Close()
		r, err := ledger.VerifyLedger(ctx, sn, []ed25519.PublicKey{key.Public}, nil)
		require.NoError(t, err)
		return r
	}
	r := verify()
	assert.Empty(t, r.Problems)
	assert.Equal(t, 2, r.Runs)
	assert.Equal(t, 1, r.Legacy)
	assert.Empty(t, r.UncoveredRuns)

	for _, id := range []string{restored.Run.ID, older.Run.ID} {
		_, err = s.DB().Exec(`UPDATE runs SET cost_usd = 9 WHERE id = ?`, id)
		require.NoError(t, err)
	}
	r = verify()
	require.Len(t, r.Problems, 2)
	for _, p := range r.Problems {
		assert.Equal(t, ledger.ProblemRunMismatch, p.Reason, "the entry's digest binds a v1 run's fields too: %s", p)
	}

	// Entered once: a run inserted later without an entry gets none at
	// the next start.
	forged := v1(newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, ""))
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{forged}))
	_, err = s.DB().Exec(`DELETE FROM ledger_entries WHERE run_id = ?`, forged.Run.ID)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = store.Open(ctx, path)
	require.NoError(t, err)
	entries, err = s.Entries(ctx, tenant.DefaultID, 0, math.MaxInt64, 10)
	require.NoError(t, err)
	assert.Len(t, entries, 2)
	r = verify()
	require.NotEmpty(t, r.Problems)
	assert.Equal(t, ledger.ProblemRunInserted, r.Problems[len(r.Problems)-1].Reason)
}

// A retention sweep that deletes runs in several batches writes a prune
// entry in each, so that a sweep stopped between batches leaves no
// deleted run unaccounted for.
func TestEveryPruneBatchWritesItsEntry(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	now := time.UnixMilli(1_800_000_000_000).UTC()
	var recs []*ledger.Record
	for i := range 1001 {
		recs = append(recs, newRun(tenant.DefaultID, now.Add(-40*24*time.Hour+time.Duration(i)*time.Millisecond),
			ledger.RouteLive, ledger.StatusOK, ""))
	}
	require.NoError(t, s.InsertRuns(ctx, recs))
	n, err := s.DeleteRunsBefore(ctx, tenant.DefaultID, now.Add(-30*24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1001, n)
	var prunes int
	require.NoError(t, s.DB().QueryRow(`SELECT COUNT(*) FROM ledger_entries WHERE kind = 'prune'`).Scan(&prunes))
	assert.Equal(t, 2, prunes, "a thousand runs a batch: two batches")
}

// racingSource records a run just before the verifier lists the runs, as
// a serving svc might.
type racingSource struct {
	*store.LedgerSnapshot
	record func()
}

func (r racingSource) EachRun(ctx context.Context, tenantID string, fn func(string) error) error {
	r.record()
	return r.LedgerSnapshot.EachRun(ctx, tenantID, fn)
}

// svc verify reads a live database through one snapshot: a run recorded
// while it reads is not mistaken for one inserted without its entry.
func TestLedgerSnapshotIsOneMoment(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")}))
	key, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)
	_, err = ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: s, Key: key, Entries: 1, Interval: time.Minute}).Seal(ctx)
	require.NoError(t, err)

	sn, err := s.LedgerSnapshot(ctx)
	require.NoError(t, err)
	defer sn.Close()
	src := racingSource{sn, func() {
		require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")}))
	}}
	r, err := ledger.VerifyLedger(ctx, src, []ed25519.PublicKey{key.Public}, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	assert.Equal(t, 1, r.Runs)
	_, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 2, total, "the run was recorded meanwhile")
}

// svc verify reads a database as it finds it: one svc last ran on before
// runs had a trace id reads its runs without one.
func TestLedgerSnapshotReadsRunsWithoutTraceID(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "svc.db")
	s, err := store.Open(ctx, path)
	require.NoError(t, err)
	rec := newRun(tenant.DefaultID, time.UnixMilli(1_700_000_000_000).UTC(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))
	key, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)
	_, err = ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: s, Key: key, Entries: 1, Interval: time.Minute}).Seal(ctx)
	require.NoError(t, err)
	// The database as migration 0019 left it.
	rows, err := s.DB().Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' AND sql LIKE '%trace_id%'`)
	require.NoError(t, err)
	var indexes []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		indexes = append(indexes, name)
	}
	require.NoError(t, rows.Err())
	for _, name := range indexes {
		_, err = s.DB().Exec(`DROP INDEX ` + name)
		require.NoError(t, err)
	}
	_, err = s.DB().Exec(`ALTER TABLE runs DROP COLUMN trace_id`)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	sn, err := store.OpenLedgerSnapshot(ctx, path)
	require.NoError(t, err)
	defer sn.Close()
	c, err := sn.RunChain(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	assert.Equal(t, rec.Run.ID, c.Run.ID)
	assert.Empty(t, c.Run.TraceID)
	assert.True(t, c.Verify().OK)
	r, err := ledger.VerifyLedger(ctx, sn, []ed25519.PublicKey{key.Public}, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	assert.Equal(t, 1, r.Runs)
}

// svc verify -db postgres://… reads a PostgreSQL database through one
// read-only snapshot, as it finds it: it migrates nothing and writes
// nothing, and a run recorded while it reads is not in what it reads.
func TestOpenLedgerSnapshotOfAPostgreSQLAddress(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	s := storetest.OpenAt(t, dsn)
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")}))
	key, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)
	_, err = ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: s, Key: key, Entries: 1, Interval: time.Minute}).Seal(ctx)
	require.NoError(t, err)

	sn, err := store.OpenLedgerSnapshot(ctx, dsn)
	require.NoError(t, err)
	defer sn.Close()
	assert.Equal(t, s.Path(), sn.Source())
	ok, err := sn.HasLedger(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	src := racingSource{sn, func() {
		require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")}))
	}}
	r, err := ledger.VerifyLedger(ctx, src, []ed25519.PublicKey{key.Public}, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	assert.Equal(t, 1, r.Runs)

	// A database svc never ran on stays empty.
	empty := pgtest.DSN(t)
	sn, err = store.OpenLedgerSnapshot(ctx, empty)
	require.NoError(t, err)
	ok, err = sn.HasLedger(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, sn.Close())
	db, err := sql.Open("pgx", empty)
	require.NoError(t, err)
	defer db.Close()
	var tables int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&tables))
	assert.Zero(t, tables, "nothing migrated")
}
