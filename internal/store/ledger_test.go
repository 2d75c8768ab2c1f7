package store_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
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
