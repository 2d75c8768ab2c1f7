package ledger

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each run is published once journaled, before the store has it, and a
// subscriber that does not read never holds Record up.
func TestRecordPublishesJournaledRuns(t *testing.T) {
	ctx := context.Background()
	store := gatedStore(false) // the store takes nothing until released
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer func() { store.open(); r.Close() }()

	live, err := r.Feed().Subscribe("t_1", Filter{}, 0)
	require.NoError(t, err)
	defer live.Close()
	stuck, err := r.Feed().Subscribe("t_1", Filter{}, 1)
	require.NoError(t, err)
	defer stuck.Close()
	other, err := r.Feed().Subscribe("t_2", Filter{}, 0)
	require.NoError(t, err)
	defer other.Close()

	for _, id := range []string{"run_1", "run_2", "run_3"} {
		require.NoError(t, r.Record(ctx, sampleRecord(id, json.RawMessage(`{}`))))
	}
	for _, id := range []string{"run_1", "run_2", "run_3"} {
		got := <-live.Runs()
		assert.Equal(t, id, got.ID)
	}
	store.mu.Lock()
	assert.Empty(t, store.writes, "published before the store had them")
	store.mu.Unlock()
	<-stuck.Done()
	assert.True(t, stuck.Dropped(), "the reader that fell behind is dropped")
	select {
	case run := <-other.Runs():
		t.Fatalf("another tenant's stream got %s", run.ID)
	default:
	}

	store.open()
	r.Close()
	<-live.Done() // Close ends the streams
	assert.False(t, live.Dropped())
}
