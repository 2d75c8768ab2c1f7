package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// replicas builds n Apps on one PostgreSQL database, sharing the ledger
// key, each with its own journal: n replicas, not started.
func replicas(t *testing.T, n int, env map[string]string) []*app.App {
	t.Helper()
	dsn := storetest.DSN(t)
	dir := t.TempDir()
	out := make([]*app.App, n)
	for i := range out {
		e := map[string]string{"SVC_DB": dsn, "SVC_LEDGER_KEY_FILE": filepath.Join(dir, "ledger.key"),
			"SVC_JOURNAL_DIR": filepath.Join(dir, "journal", string(rune('a'+i)))}
		for k, v := range env {
			e[k] = v
		}
		a, err := app.New(context.Background(), app.Options{Config: configFor(t, e), Provider: &heldProvider{}, Mailer: noMail{}})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, a.Close()) })
		out[i] = a
	}
	return out
}

// The timers of every replica run their rounds; each period's jobs are
// queued once for each tenant all the same.
func TestPeriodicWorkIsQueuedOncePerPeriodAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	apps := replicas(t, 3, map[string]string{"SVC_LEARNING_INTERVAL": "1h"})
	other, err := apps[0].Store.CreateTenant(ctx, "Other")
	require.NoError(t, err)

	var wg sync.WaitGroup
	for range 3 {
		for _, a := range apps {
			wg.Go(a.Sweep)
			wg.Go(a.QueueLearning)
		}
	}
	wg.Wait()
	for _, id := range []string{tenant.DefaultID, other.ID} {
		l, err := apps[1].Jobs.List(ctx, id, jobs.Filter{})
		require.NoError(t, err)
		count := map[string]int{}
		for _, j := range l.Jobs {
			count[j.Type]++
		}
		assert.Equal(t, map[string]int{ledger.RetentionJob: 1, learning.JobType: 1}, count, "tenant %s", id)
	}

	// The day's sweep is queued once however often the round runs again
	// that day.
	apps[2].Sweep()
	l, err := apps[2].Jobs.List(ctx, tenant.DefaultID, jobs.Filter{})
	require.NoError(t, err)
	assert.Len(t, l.Jobs, 2)
	assert.Equal(t, ledger.RetentionJob+"/"+time.Now().UTC().Format(time.DateOnly), app.RetentionKey(time.Now()))
}

// A replica on PostgreSQL that made itself a new ledger key, for a database
// whose checkpoints another key signed, does not start, and keeps no key
// that would let it start next time; a key file that differs is a
// replaced key, and starts.
func TestReplicaWithoutTheLedgerKeyIsRefused(t *testing.T) {
	ctx := context.Background()
	s := storetest.OpenPostgres(t)
	dir := t.TempDir()
	shared, _, err := ledger.LoadOrCreateKey(filepath.Join(dir, "shared.key"))
	require.NoError(t, err)
	at := time.Now().UTC()
	rec := ledger.NewRecord(&ledger.Run{ID: "run_" + strings.Repeat("a", 20), TenantID: tenant.DefaultID, CreatedAt: at,
		Request: []byte(`{}`)}, []ledger.Event{{Type: "request.received", Payload: []byte(`{}`)}}, at)
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))
	_, err = ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: s, Key: shared, Locker: s}).Seal(ctx)
	require.NoError(t, err)
	log := hclog.NewNullLogger()

	require.NoError(t, app.CheckLedgerKey(ctx, s, shared, false, filepath.Join(dir, "shared.key"), log))
	fresh := filepath.Join(dir, "fresh.key")
	made, created, err := ledger.LoadOrCreateKey(fresh)
	require.NoError(t, err)
	require.True(t, created)
	err = app.CheckLedgerKey(ctx, s, made, created, fresh, log)
	require.ErrorContains(t, err, "SVC_LEDGER_KEY_FILE")
	assert.ErrorContains(t, err, shared.ID)
	assert.NoFileExists(t, fresh)

	replaced, _, err := ledger.LoadOrCreateKey(filepath.Join(dir, "replaced.key"))
	require.NoError(t, err)
	assert.NoError(t, app.CheckLedgerKey(ctx, s, replaced, false, filepath.Join(dir, "replaced.key"), log))
}

// On SQLite, one process, each round of the daily sweep queues a
// retention sweep, as every start did before replicas shared a database.
func TestSweepOnSQLiteQueuesEachRound(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := app.New(ctx, app.Options{Config: configFor(t, map[string]string{"SVC_DB": filepath.Join(dir, "svc.db")}),
		Provider: &heldProvider{}, Mailer: noMail{}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	a.Sweep()
	a.Sweep()
	l, err := a.Jobs.List(ctx, tenant.DefaultID, jobs.Filter{})
	require.NoError(t, err)
	assert.Len(t, l.Jobs, 2, "a retention sweep each round")
}
