package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
)

// The backlog is what the store has not taken yet; each batch the writer
// stores is timed and sized, failed or not.
func TestBacklogAndBatchesAreMeasured(t *testing.T) {
	ctx := context.Background()
	store := &flakyStore{down: true, writes: map[string]int{}}
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()
	m := metrics.New(metrics.Options{})
	r.SetMetrics(m)
	m.ReadJournal(r.Backlog)

	var size int64
	for i := range 3 {
		rec := sampleRecord(fmt.Sprintf("run_%d", i), nil)
		require.NoError(t, r.Record(ctx, rec))
		size += int64(rec.size)
	}
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	require.ErrorIs(t, r.Sync(sctx), context.DeadlineExceeded, "the store is down")
	cancel()
	require.Eventually(t, func() bool {
		return metricstest.Samples(t, m, "svc_ledger_batch_write_duration_seconds")["error"] > 0
	}, 10*time.Second, time.Millisecond, "a failed store is timed")
	require.Eventually(t, func() bool {
		runs, bytes := r.Backlog()
		return runs == 3 && bytes == size
	}, 10*time.Second, time.Millisecond, "the runs the store refused wait, in memory")
	assert.Equal(t, map[string]float64{"": 3}, metricstest.Samples(t, m, "svc_ledger_journal_backlog_runs"))
	assert.Equal(t, map[string]float64{"": float64(size)}, metricstest.Samples(t, m, "svc_ledger_journal_backlog_bytes"))

	store.setDown(false)
	require.NoError(t, r.Sync(ctx))
	runs, bytes := r.Backlog()
	assert.Zero(t, runs)
	assert.Zero(t, bytes)
	assert.Equal(t, 1.0, metricstest.Samples(t, m, "svc_ledger_batch_write_duration_seconds")["ok"])
	assert.Equal(t, metricstest.Samples(t, m, "svc_ledger_batch_write_duration_seconds")["ok"]+
		metricstest.Samples(t, m, "svc_ledger_batch_write_duration_seconds")["error"],
		metricstest.Samples(t, m, "svc_ledger_batch_runs")[""], "a size per batch")
}

// Runs held on disk only count by their segments' bytes.
func TestBacklogCountsSpilledSegments(t *testing.T) {
	ctx := context.Background()
	store := &flakyStore{down: true, writes: map[string]int{}}
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()
	r.mu.Lock()
	r.holdLimit = 1 // every held run waits on disk
	r.mu.Unlock()
	var size int64
	for i := range 3 {
		rec := sampleRecord(fmt.Sprintf("run_%d", i), nil)
		require.NoError(t, r.Record(ctx, rec))
		size += int64(rec.size)
	}
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.spilled) > 0
	}, 10*time.Second, time.Millisecond, "the failed batch waits on disk")
	runs, bytes := r.Backlog()
	assert.Equal(t, int64(3), runs)
	assert.Equal(t, size, bytes, "a segment holds its runs' frames")
}
