package ledger

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A group of runs whose write is cut short (the file size limit here;
// ENOSPC or EIO alike) tells each of them it failed, and then none of them
// may come back from the journal after a crash: the frames that reached the
// file whole are cut from it too. (Not parallel: the size limit is the
// process's.)
func TestAGroupWriteCutShortLeavesNoneOfItsRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r, err := NewRecorder(ctx, &flakyStore{writes: map[string]int{}}, dir, hclog.NewNullLogger())
	require.NoError(t, err)
	t.Cleanup(r.Close)
	frame, err := encodeFrame(sampleRecord("run_x", nil))
	require.NoError(t, err)
	size := int64(len(*frame))

	// Hold the journal so that the runs gather into one group. The group
	// goes by pwrite, which the size limit cuts short; a copy into the
	// mapped segment that faults part-way is
	// TestAMappedGroupThatFaultsLeavesNoneOfItsRuns's.
	r.mu.Lock()
	r.acquire()
	r.mu.Unlock()
	unmap(r.journal.m)
	r.journal.m = nil
	const n = 5
	results := make(chan error, n)
	for i := range n {
		go func() { results <- r.Record(ctx, sampleRecord(fmt.Sprintf("run_%d", i), nil)) }()
	}
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.group != nil && len(r.group.recs) == n
	}, 10*time.Second, time.Millisecond)

	// Room for two and a half frames: the group's write stops part-way.
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) }) // whatever fails below
	limit := syscall.Rlimit{Cur: uint64(size*2 + size/2), Max: old.Max}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit))
	r.mu.Lock()
	r.release()
	r.mu.Unlock()
	failed := 0
	for range n {
		if <-results != nil {
			failed++
		}
	}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old))
	require.Equal(t, n, failed, "every run of the group is told it failed")

	// As after kill -9: a new process restores the folder.
	after := &flakyStore{writes: map[string]int{}}
	require.NoError(t, restore(ctx, after, dir, hclog.NewNullLogger()))
	assert.Empty(t, after.order, "a run told it failed is never stored")
}
