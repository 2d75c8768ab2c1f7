package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flakyStore keeps runs in memory and refuses every write while down.
type flakyStore struct {
	Store // the reads, which these tests do not use

	// While gate is set, InsertRuns says so on entered (buffered, so that
	// an attempt the test does not wait for never blocks there) and then
	// waits for a value on gate, or for open to close it.
	entered chan struct{}

	mu     sync.Mutex
	gate   chan struct{}
	down   bool
	writes map[string]int // run id → times stored
	order  []string
}

var errDown = errors.New("store down")

// gatedStore is a flakyStore whose every InsertRuns waits for release.
func gatedStore(down bool) *flakyStore {
	return &flakyStore{down: down, writes: map[string]int{}, entered: make(chan struct{}, 8), gate: make(chan struct{})}
}

// release lets one waiting InsertRuns go on.
func (s *flakyStore) release() { s.gate <- struct{}{} }

func (s *flakyStore) InsertRuns(_ context.Context, recs []*Record) error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		s.entered <- struct{}{}
		<-gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errDown
	}
	for _, rec := range recs {
		s.writes[rec.Run.ID]++
		s.order = append(s.order, rec.Run.ID)
	}
	return nil
}

func (s *flakyStore) RestoreRuns(ctx context.Context, recs []*Record) error {
	for _, rec := range recs {
		s.mu.Lock()
		stored := s.writes[rec.Run.ID] > 0
		s.mu.Unlock()
		if stored {
			continue
		}
		if err := s.InsertRuns(ctx, []*Record{rec}); err != nil {
			return err
		}
	}
	return nil
}

func (s *flakyStore) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// open lets writes through without waiting for the test, those already
// waiting included.
func (s *flakyStore) open() {
	s.mu.Lock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
	s.mu.Unlock()
}

// While the store is down, the runs held in memory stay under the limit;
// the rest wait in their journal segments, and every run reaches the store
// once, in order, when it is back.
func TestRunsWaitOnDiskWhileTheStoreIsDown(t *testing.T) {
	ctx := context.Background()
	store := &flakyStore{down: true, writes: map[string]int{}}
	dir := t.TempDir()
	r, err := NewRecorder(ctx, store, dir, hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()
	r.mu.Lock()
	r.holdLimit = 4 << 10 // a few runs
	r.mu.Unlock()

	ids := recordWhileDown(t, r, 3)
	r.mu.Lock()
	held, onDisk := 0, len(r.spilled)
	for _, rec := range r.pending {
		held += rec.size
	}
	r.mu.Unlock()
	assert.LessOrEqual(t, held, 4<<10, "runs held in memory")
	assert.Positive(t, onDisk, "segments whose runs wait on disk only")

	store.setDown(false)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, r.Sync(sctx))
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Equal(t, ids, store.order, "every run, once, in the order it came")
	segs, err := segments(dir)
	require.NoError(t, err)
	assert.Len(t, segs, 1, "only the open segment is left")
}

// journaledRuns counts the runs a replay of a segment would read: what a
// kill -9 would leave of it.
func journaledRuns(t *testing.T, dir string, seq uint64) int {
	t.Helper()
	n := 0
	require.NoError(t, readSegment(dir, seq, func(*Record) error { n++; return nil }))
	return n
}

// Runs that come one at a time do not cost a file each: once its runs are
// stored, the open segment is emptied and written on.
func TestQuietTrafficReusesOneSegment(t *testing.T) {
	ctx := context.Background()
	store := gatedStore(false)
	dir := t.TempDir()
	r, err := NewRecorder(ctx, store, dir, hclog.NewNullLogger())
	require.NoError(t, err)
	for i := range 20 {
		require.NoError(t, r.Record(ctx, sampleRecord(fmt.Sprintf("run_%02d", i), nil)))
		<-store.entered // the writer is storing it, and waits for the test
		assert.Equal(t, 1, journaledRuns(t, dir, 1), "journaled before it is stored")
		store.release()
		require.NoError(t, r.Sync(ctx))
		segs, err := segments(dir)
		require.NoError(t, err)
		assert.Equal(t, []uint64{1}, segs)
		assert.Zero(t, journaledRuns(t, dir, 1), "stored, so emptied")
	}
	assert.Len(t, store.order, 20)
	r.Close()
	segs, err := segments(dir)
	require.NoError(t, err)
	assert.Empty(t, segs, "nothing left to replay")
}

// A batch that is full is stored at once, not when the gather time is
// over: under load the writer's bursts of CPU stay small.
func TestAFullBatchEndsTheGather(t *testing.T) {
	ctx := context.Background()
	store := gatedStore(false)
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()
	defer store.open() // before Close, which stores what is pending
	r.mu.Lock()
	r.batchLimit, r.gatherTime = 3, time.Hour
	r.mu.Unlock()

	for i := range 3 {
		require.NoError(t, r.Record(ctx, sampleRecord(fmt.Sprintf("run_%d", i), nil)))
	}
	select {
	case <-store.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch waited for the gather time")
	}
	store.release()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.stored == 3
	}, 10*time.Second, time.Millisecond, "the batch is stored without a Sync")
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Equal(t, []string{"run_0", "run_1", "run_2"}, store.order)
}

// Under steady traffic the open segment always holds a run not yet stored:
// once it is large it is sealed, and removed when those runs are stored.
func TestBusyJournalSealsLargeSegments(t *testing.T) {
	ctx := context.Background()
	store := gatedStore(false)
	dir := t.TempDir()
	r, err := NewRecorder(ctx, store, dir, hclog.NewNullLogger())
	require.NoError(t, err)
	r.mu.Lock()
	r.segmentLimit = 1
	r.mu.Unlock()

	require.NoError(t, r.Record(ctx, sampleRecord("run_a", nil)))
	<-store.entered // the writer is storing run_a
	require.NoError(t, r.Record(ctx, sampleRecord("run_b", nil)))
	store.release()
	<-store.entered // and now run_b: segment 1 was sealed with both
	segs, err := segments(dir)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2}, segs)

	// A crash now would replay run_a, stored already: a replay skips runs
	// the store has (Store.RestoreRuns).
	var inSegment []string
	require.NoError(t, readSegment(dir, 1, func(rec *Record) error {
		inSegment = append(inSegment, rec.Run.ID)
		return nil
	}))
	assert.Equal(t, []string{"run_a", "run_b"}, inSegment)
	store.release()
	require.NoError(t, r.Sync(ctx))
	segs, err = segments(dir)
	require.NoError(t, err)
	assert.Equal(t, []uint64{2}, segs, "the sealed segment goes once its runs are stored")
	assert.Zero(t, journaledRuns(t, dir, 2))
	r.Close()
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Equal(t, map[string]int{"run_a": 1, "run_b": 1}, store.writes)
}

// Runs journaled while a store fails join the held batch: once the held
// runs wait on disk, they are stored from there, each once.
func TestRunsArrivingDuringAFailedStoreAreStoredOnce(t *testing.T) {
	ctx := context.Background()
	store := gatedStore(true)
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()
	r.mu.Lock()
	r.holdLimit = 1 // every held run waits on disk
	r.mu.Unlock()

	require.NoError(t, r.Record(ctx, sampleRecord("run_a", nil)))
	<-store.entered // the writer tries run_a
	require.NoError(t, r.Record(ctx, sampleRecord("run_b", nil)))
	store.release()
	<-store.entered // and run_a alone
	store.release()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.spilled) > 0
	}, 10*time.Second, time.Millisecond, "the failed batch waits on disk")
	r.mu.Lock()
	assert.Empty(t, r.pending, "run_b waits on disk with run_a, not in memory too")
	r.mu.Unlock()

	store.open()
	store.setDown(false)
	require.NoError(t, r.Sync(ctx))
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Equal(t, []string{"run_a", "run_b"}, store.order)
}

// Runs that come while a write is under way do not queue behind it one by
// one: they gather into one group, written together once it ends, and none
// returns before its run is in the journal.
func TestRunsWaitingOnAWriteAreWrittenTogether(t *testing.T) {
	ctx := context.Background()
	store := &flakyStore{writes: map[string]int{}}
	dir := t.TempDir()
	r, err := NewRecorder(ctx, store, dir, hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()

	r.mu.Lock()
	r.acquire() // a write under way
	r.mu.Unlock()
	const n = 5
	done := make(chan error, n)
	for i := range n {
		go func() { done <- r.Record(ctx, sampleRecord(fmt.Sprintf("run_%d", i), nil)) }()
	}
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.group != nil && len(r.group.recs) == n
	}, 10*time.Second, time.Millisecond, "every run joins the group waiting for the write")
	assert.Empty(t, done, "no run is acknowledged before it is written")
	assert.Zero(t, journaledRuns(t, dir, 1))

	r.mu.Lock()
	r.release()
	r.mu.Unlock()
	for range n {
		require.NoError(t, <-done)
	}
	var journaled []string
	require.NoError(t, readSegment(dir, 1, func(rec *Record) error {
		journaled = append(journaled, rec.Run.ID)
		return nil
	}))
	assert.Len(t, journaled, n)
	r.mu.Lock()
	assert.Equal(t, uint64(n), r.appended)
	r.mu.Unlock()
	require.NoError(t, r.Sync(ctx))
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Len(t, store.writes, n)
}

// Closing waits for a group being written, so that its runs are stored
// too; runs recorded after are refused.
func TestCloseStoresTheGroupBeingWritten(t *testing.T) {
	ctx := context.Background()
	store := &flakyStore{writes: map[string]int{}}
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	r.mu.Lock()
	r.acquire()
	r.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- r.Record(ctx, sampleRecord("run_a", nil)) }()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.group != nil
	}, 10*time.Second, time.Millisecond)
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.closed
	}, 10*time.Second, time.Millisecond)
	r.mu.Lock()
	r.release()
	r.mu.Unlock()
	require.NoError(t, <-done)
	<-closed
	assert.ErrorIs(t, r.Record(ctx, sampleRecord("run_b", nil)), ErrClosed)
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Equal(t, map[string]int{"run_a": 1}, store.writes)
}

// recordWhileDown records rounds of 20 runs on r, whose store is down,
// each round's Sync making the writer try and fail; it returns their ids
// in order.
func recordWhileDown(t *testing.T, r *Recorder, rounds int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for round := range rounds {
		for i := range 20 {
			rec := sampleRecord(fmt.Sprintf("run_%d_%02d", round, i), nil)
			require.NoError(t, r.Record(ctx, rec))
			ids = append(ids, rec.Run.ID)
		}
		sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		require.ErrorIs(t, r.Sync(sctx), context.DeadlineExceeded)
		cancel()
	}
	return ids
}
