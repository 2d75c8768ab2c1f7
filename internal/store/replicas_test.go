package store_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// Two replicas on one PostgreSQL database write at once, storing runs and
// appending to the same runs: every run keeps its chain, every change its
// one ledger entry, a run's entries come in the order of its chain (what
// the ledger's reader takes), the agent counts every run, and the whole
// ledger verifies once sealed.
func TestTwoStoresOnOneDatabaseKeepEveryChain(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	replicas := []*store.Store{storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)}
	shared := []*ledger.Record{}
	for range 4 {
		shared = append(shared, newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "bot"))
	}
	require.NoError(t, replicas[0].InsertRuns(ctx, shared))
	firstEvents := len(shared[0].Events)

	const batches, perBatch, appends = 8, 4, 6
	var wg sync.WaitGroup
	for _, s := range replicas {
		wg.Go(func() {
			for range batches {
				recs := make([]*ledger.Record, perBatch)
				for i := range recs {
					recs[i] = newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "bot")
				}
				assert.NoError(t, s.InsertRuns(ctx, recs))
			}
		})
		wg.Go(func() {
			for range appends {
				for _, r := range shared {
					_, err := s.AppendEvent(ctx, tenant.DefaultID, r.Run.ID, "tool.called", time.Now(), json.RawMessage(`{}`))
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()

	runs := len(shared) + len(replicas)*batches*perBatch
	_, total, err := replicas[1].ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, runs, total)
	for _, r := range shared {
		c, err := replicas[1].RunChain(ctx, tenant.DefaultID, r.Run.ID)
		require.NoError(t, err)
		assert.Len(t, c.Events, firstEvents+len(replicas)*appends)
		assert.True(t, c.Verify().OK, "the chain of %s", r.Run.ID)
	}
	agents, err := replicas[0].ListAgents(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, agents, 1)
	assert.EqualValues(t, runs, agents[0].RunCount)

	entries, err := replicas[0].Entries(ctx, tenant.DefaultID, 0, math.MaxInt64, 10*runs*appends)
	require.NoError(t, err)
	assert.Len(t, entries, runs+len(replicas)*appends*len(shared), "one entry per change")
	counts := map[string]int{}
	for i, e := range entries {
		if i > 0 {
			assert.Greater(t, e.Seq, entries[i-1].Seq)
		}
		assert.Greater(t, e.EventCount, counts[e.RunID], "the entries of %s follow its chain", e.RunID)
		counts[e.RunID] = e.EventCount
	}

	key, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)
	_, err = ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: replicas[1], Key: key, Entries: 1, Interval: time.Minute}).Seal(ctx)
	require.NoError(t, err)
	sn, err := replicas[0].LedgerSnapshot(ctx)
	require.NoError(t, err)
	defer sn.Close()
	rep, err := ledger.VerifyLedger(ctx, sn, []ed25519.PublicKey{key.Public}, nil)
	require.NoError(t, err)
	assert.Empty(t, rep.Problems)
	assert.Equal(t, runs, rep.Runs)
}
