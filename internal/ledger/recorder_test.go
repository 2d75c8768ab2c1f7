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

	mu     sync.Mutex
	down   bool
	writes map[string]int // run id → times stored
	order  []string
}

var errDown = errors.New("store down")

func (s *flakyStore) InsertRuns(_ context.Context, recs []*Record) error {
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

	var ids []string
	for round := range 3 {
		for i := range 20 {
			rec := sampleRecord(fmt.Sprintf("run_%d_%02d", round, i), nil)
			require.NoError(t, r.Record(ctx, rec))
			ids = append(ids, rec.Run.ID)
		}
		// Each Sync makes the writer try, and fail.
		sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		require.ErrorIs(t, r.Sync(sctx), context.DeadlineExceeded)
		cancel()
	}
	r.mu.Lock()
	held, onDisk := r.pendingBytes, len(r.spilled)
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
