package ledger_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// replicaRecord is a run of the tenant with one event, as a replica's
// recorder stores it.
func replicaRecord(tenantID string, at time.Time) *ledger.Record {
	run := &ledger.Run{ID: ids.Ordered("run", at), TenantID: tenantID, CreatedAt: at, Route: ledger.RouteLive,
		Status: ledger.StatusOK, HTTPStatus: 200, Model: "gpt-4o-mini", Mode: "optimize", Provider: "mock",
		Explanation: ledger.RouteExplanation{Route: ledger.RouteLive, Rejected: []ledger.Alternative{},
			Policy: ledger.Verdict{Decision: "allow"}},
		Request: json.RawMessage(`{"model":"gpt-4o-mini"}`)}
	return ledger.NewRecord(run, []ledger.Event{{Type: "request.received", Payload: json.RawMessage(`{}`)}}, at)
}

// Several replicas store batches of runs and append events at once, while
// a reader follows the ledger by seq (as the checkpointer does) and two
// checkpointers, one per replica, sign: the reader misses no entry, every
// entry is covered by one chain of checkpoints per tenant, and svc verify
// finds the database whole.
func TestLedgerWithSeveralWriters(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	replicas := []*store.Store{storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)}
	other, err := replicas[0].CreateTenant(ctx, "Other")
	require.NoError(t, err)
	tenants := []string{tenant.DefaultID, other.ID}
	key, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)

	var (
		writers sync.WaitGroup
		done    atomic.Bool
		since   = time.Now().UTC().Truncate(time.Millisecond)
	)
	const batches = 40
	for i, s := range replicas {
		writers.Go(func() {
			for b := range batches {
				at := since.Add(time.Duration(b*10+i) * time.Millisecond)
				recs := []*ledger.Record{replicaRecord(tenants[b%2], at), replicaRecord(tenants[(b+1)%2], at)}
				if !assert.NoError(t, s.InsertRuns(ctx, recs)) {
					return
				}
				if b%4 == 0 {
					_, err := s.AppendEvent(ctx, recs[0].Run.TenantID, recs[0].Run.ID, "feedback.added", at, json.RawMessage(`{}`))
					assert.NoError(t, err)
				}
			}
		})
	}

	// The reader: entries after the last seq it saw, again and again.
	seen := map[int64]bool{}
	var reader sync.WaitGroup
	reader.Go(func() {
		last := map[string]int64{}
		for {
			finished := done.Load()
			for _, id := range tenants {
				es, err := replicas[2].Entries(ctx, id, last[id], math.MaxInt64, 1000)
				if !assert.NoError(t, err) {
					return
				}
				for _, e := range es {
					seen[e.Seq] = true
					last[id] = e.Seq
				}
			}
			if finished {
				return
			}
		}
	})

	// Two checkpointers, one per replica, take turns as their ticks come.
	var signers sync.WaitGroup
	for _, s := range replicas[:2] {
		c := ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: s, Key: key, Entries: 1, Locker: s})
		signers.Go(func() {
			for !done.Load() {
				assert.NoError(t, c.Tick(ctx))
			}
			_, err := c.Seal(ctx)
			assert.NoError(t, err)
		})
	}
	writers.Wait()
	done.Store(true)
	reader.Wait()
	signers.Wait()

	var stored int
	for _, id := range tenants {
		es, err := replicas[0].Entries(ctx, id, 0, math.MaxInt64, 10_000)
		require.NoError(t, err)
		stored += len(es)
		for _, e := range es {
			assert.True(t, seen[e.Seq], "entry %d was committed after the reader had read past it", e.Seq)
		}
		// One chain per tenant: numbered 1, 2, …, each after the last.
		cps, total, err := replicas[0].ListCheckpoints(ctx, id, 1000, 0)
		require.NoError(t, err)
		require.NotZero(t, total)
		for i, cp := range cps {
			assert.Equal(t, int64(total-i), cp.Number)
		}
		assert.Equal(t, es[len(es)-1].Seq, cps[0].LastSeq, "the last seal covers every entry")
	}
	assert.Equal(t, 3*batches*2+3*batches/4, stored)

	sn, err := store.OpenLedgerSnapshot(ctx, dsn)
	require.NoError(t, err)
	defer sn.Close()
	r, err := ledger.VerifyLedger(ctx, sn, []ed25519.PublicKey{key.Public}, nil)
	require.NoError(t, err)
	assert.True(t, r.OK(), "%+v", r.Problems)
	assert.Equal(t, 3*batches*2, r.Runs)
}

// A replica whose key is not the one another replica has signed with
// since it started signs nothing, and says why; the replica with the
// shared key goes on signing.
func TestCheckpointerRefusesAnotherReplicasKey(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	a, b := storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)
	dir := t.TempDir()
	shared, _, err := ledger.LoadOrCreateKey(filepath.Join(dir, "shared.key"))
	require.NoError(t, err)
	stray, _, err := ledger.LoadOrCreateKey(filepath.Join(dir, "stray.key"))
	require.NoError(t, err)
	good := ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: a, Key: shared, Entries: 1, Locker: a})
	bad := ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: b, Key: stray, Entries: 1, Locker: b})

	at := time.Now().UTC()
	require.NoError(t, a.InsertRuns(ctx, []*ledger.Record{replicaRecord(tenant.DefaultID, at)}))
	made, err := good.Seal(ctx)
	require.NoError(t, err)
	require.Len(t, made, 1)

	require.NoError(t, b.InsertRuns(ctx, []*ledger.Record{replicaRecord(tenant.DefaultID, at.Add(time.Millisecond))}))
	_, err = bad.Seal(ctx)
	require.True(t, errors.Is(err, ledger.ErrKeyDiffers), "%v", err)
	assert.ErrorContains(t, err, "SVC_LEDGER_KEY_FILE")
	made, err = good.Seal(ctx)
	require.NoError(t, err)
	require.Len(t, made, 1)
	assert.Equal(t, shared.ID, made[0].KeyID)
	assert.Equal(t, int64(2), made[0].Number)
}
