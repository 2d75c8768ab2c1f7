package app_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

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
