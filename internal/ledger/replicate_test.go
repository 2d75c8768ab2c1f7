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

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/changes/changestest"
	"github.com/svc-gateway/svc/internal/errs"
)

// toldRuns collects what the OnStored hook is told, checking that the
// store has each run by then.
type toldRuns struct {
	t     *testing.T
	store *flakyStore

	mu      sync.Mutex
	batches [][]string
}

func (h *toldRuns) hook(recs []*Record) {
	var ids []string
	h.store.mu.Lock()
	for _, rec := range recs {
		assert.Positive(h.t, h.store.writes[rec.Run.ID], "told of %s before the store had it", rec.Run.ID)
		ids = append(ids, rec.Run.ID)
	}
	h.store.mu.Unlock()
	h.mu.Lock()
	h.batches = append(h.batches, ids)
	h.mu.Unlock()
}

func (h *toldRuns) told() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]string(nil), h.batches...)
}

// The hook hears of a batch once the store has it, not after the store
// refused it.
func TestOnStoredHearsOfStoredBatchesOnly(t *testing.T) {
	ctx := context.Background()
	store := gatedStore(true)
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer func() { store.open(); r.Close() }()
	h := &toldRuns{t: t, store: store}
	r.OnStored(h.hook)

	require.NoError(t, r.Record(ctx, sampleRecord("run_1", nil)))
	go func() { _ = r.Sync(ctx) }() // cuts the gathering short
	<-store.entered                 // the batch, refused
	store.release()
	<-store.entered // and the run alone, refused too
	store.release()
	<-store.entered // the next try: the refusals are behind
	store.setDown(false)
	store.open()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, r.Sync(sctx))
	assert.Equal(t, [][]string{{"run_1"}}, h.told(), "told once, once stored")
}

// refusingStore refuses, for what it holds, every batch with the run bad.
type refusingStore struct {
	*flakyStore
	bad string
}

func (s refusingStore) InsertRuns(ctx context.Context, recs []*Record) error {
	for _, rec := range recs {
		if rec.Run.ID == s.bad {
			return errs.Invalidf("run", "refused")
		}
	}
	return s.flakyStore.InsertRuns(ctx, recs)
}

// A batch stored run by run, around a run the store refuses, is told
// without that run.
func TestOnStoredHearsOfRunsStoredOneByOne(t *testing.T) {
	ctx := context.Background()
	store := gatedStore(false)
	r, err := NewRecorder(ctx, refusingStore{store, "run_bad"}, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer func() { store.open(); r.Close() }()
	h := &toldRuns{t: t, store: store}
	r.OnStored(h.hook)

	require.NoError(t, r.Record(ctx, sampleRecord("run_0", nil)))
	go func() { _ = r.Sync(ctx) }()
	<-store.entered // the writer stores run_0 while the next batch gathers
	for _, id := range []string{"run_1", "run_bad", "run_2"} {
		require.NoError(t, r.Record(ctx, sampleRecord(id, nil)))
	}
	store.open()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, r.Sync(sctx))
	assert.Equal(t, [][]string{{"run_0"}, {"run_1", "run_2"}}, h.told())
}

// Runs that waited on disk while the store was down are told too, once
// each, in order.
func TestOnStoredHearsOfRunsThatWaitedOnDisk(t *testing.T) {
	ctx := context.Background()
	store := &flakyStore{down: true, writes: map[string]int{}}
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()
	h := &toldRuns{t: t, store: store}
	r.OnStored(h.hook)
	r.mu.Lock()
	r.holdLimit = 4 << 10 // a few runs
	r.mu.Unlock()

	ids := recordWhileDown(t, r, 2)
	r.mu.Lock()
	require.NotEmpty(t, r.spilled, "runs wait on disk only")
	r.mu.Unlock()

	store.setDown(false)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, r.Sync(sctx))
	var told []string
	for _, b := range h.told() {
		told = append(told, b...)
	}
	assert.Equal(t, ids, told)
}

// A batch's runs are announced per tenant, their ids split so that each
// notice stays under the bound, and read back as they were.
func TestRunNoticesSplitPerTenant(t *testing.T) {
	var recs []*Record
	want := map[string][]string{}
	for i := range 600 {
		tenant := []string{"org_a", "org_b"}[i%3/2] // two of org_a, one of org_b
		id := fmt.Sprintf("run_%026d", i)
		recs = append(recs, &Record{Run: &Run{ID: id, TenantID: tenant}})
		want[tenant] = append(want[tenant], id)
	}
	notices := runNotices(recs)
	assert.Greater(t, len(notices), 2, "split")
	got := map[string][]string{}
	var order []string
	for _, n := range notices {
		assert.LessOrEqual(t, len(n), noticeBytes)
		tenant, ids := parseRunNotice(n)
		require.NotEmpty(t, ids)
		if len(order) == 0 || order[len(order)-1] != tenant {
			order = append(order, tenant)
		}
		got[tenant] = append(got[tenant], ids...)
	}
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"org_a", "org_b"}, order, "a tenant's notices together, in the order the tenants came")

	assert.Equal(t, []string{"org_a run_1"}, runNotices([]*Record{{Run: &Run{ID: "run_1", TenantID: "org_a"}}}))
	for _, payload := range []string{"", "org_a", "  "} {
		_, ids := parseRunNotice(payload)
		assert.Empty(t, ids, "%q names no run", payload)
	}
}

// runsByID is a RunsReader over runs in memory, by tenant.
type runsByID struct {
	mu    sync.Mutex
	runs  map[string][]Run
	asked []string // tenants asked for
	err   error
}

func (s *runsByID) RunsByID(_ context.Context, tenantID string, ids []string) ([]Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, tenantID)
	var out []Run
	for _, r := range s.runs[tenantID] {
		for _, id := range ids {
			if r.ID == id {
				out = append(out, r)
			}
		}
	}
	return out, s.err
}

// A replica announces the runs it stored, and streams the runs another
// announces, only for a tenant someone streams, read by that tenant.
func TestReplicateAnnouncesAndStreamsRuns(t *testing.T) {
	ctx := context.Background()
	store := &flakyStore{writes: map[string]int{}}
	r, err := NewRecorder(ctx, store, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()
	feed := changestest.New()
	reader := &runsByID{runs: map[string][]Run{
		"t_1": {{ID: "run_a", TenantID: "t_1", Status: StatusOK}, {ID: "run_b", TenantID: "t_1", Status: StatusError}},
		"t_2": {{ID: "run_c", TenantID: "t_2"}},
	}}
	r.Replicate(feed, reader, hclog.NewNullLogger())

	feed.Fail(errors.New("notify down")) // a failed notice fails nothing
	require.NoError(t, r.Record(ctx, sampleRecord("run_1", nil)))
	require.NoError(t, r.Sync(ctx))
	require.Len(t, feed.Notices(), 1)
	assert.Equal(t, "runs", feed.Notices()[0].Topic)
	assert.Equal(t, "t_1 run_1", feed.Notices()[0].Payload)

	sub, err := r.Feed().Subscribe("t_1", Filter{Status: StatusError}, 0)
	require.NoError(t, err)
	defer sub.Close()
	feed.Publish("runs", "t_2 run_c") // nobody streams t_2 here
	feed.Publish("runs", "t_1 run_c run_a run_b")
	select {
	case run := <-sub.Runs():
		assert.Equal(t, "run_b", run.ID, "the stream's filter holds")
	case <-time.After(10 * time.Second):
		t.Fatal("the run another replica stored was not streamed")
	}
	reader.mu.Lock()
	assert.Equal(t, []string{"t_1"}, reader.asked, "read only for a tenant streamed, by that tenant")
	reader.mu.Unlock()
}

// runsGate is a RunsReader that waits for its gate before each read.
type runsGate struct {
	entered chan string
	gate    chan struct{}
}

func (g *runsGate) RunsByID(ctx context.Context, tenantID string, _ []string) ([]Run, error) {
	g.entered <- tenantID
	<-g.gate
	return nil, nil
}

// A replica that cannot tell which runs its streams missed drops them, for
// their clients to reload the list: when its backlog of the other
// replicas' notices overflows, as when the feed reconnects.
func TestAnOverflowingBacklogDropsTheStreams(t *testing.T) {
	ctx := context.Background()
	r, err := NewRecorder(ctx, &flakyStore{writes: map[string]int{}}, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	reader := &runsGate{entered: make(chan string, 1), gate: make(chan struct{})}
	defer r.Close()
	defer close(reader.gate)
	feed := changestest.New()
	r.Replicate(feed, reader, hclog.NewNullLogger())
	sub, err := r.Feed().Subscribe("t_1", Filter{}, 0)
	require.NoError(t, err)
	defer sub.Close()
	other, err := r.Feed().Subscribe("t_2", Filter{}, 0)
	require.NoError(t, err)
	defer other.Close()

	feed.Publish("runs", "t_1 run_0")
	<-reader.entered // the follower reads, and is held
	for i := range heardBacklog {
		feed.Publish("runs", fmt.Sprintf("t_1 run_%d", i+1))
	}
	select {
	case <-sub.Done():
		t.Fatal("a full backlog is not yet a lost notice")
	default:
	}
	feed.Publish("runs", "t_1 run_overflow")
	for _, s := range []*Subscription{sub, other} {
		select {
		case <-s.Done():
			assert.True(t, s.Dropped(), "ended as fallen behind")
		default:
			t.Fatal("a stream goes on, with runs missing")
		}
	}
}

// A reconnected feed drops the streams the same way.
func TestAReconnectedFeedDropsTheStreams(t *testing.T) {
	ctx := context.Background()
	r, err := NewRecorder(ctx, &flakyStore{writes: map[string]int{}}, t.TempDir(), hclog.NewNullLogger())
	require.NoError(t, err)
	defer r.Close()
	feed := changestest.New()
	r.Replicate(feed, &runsByID{}, hclog.NewNullLogger())
	sub, err := r.Feed().Subscribe("t_1", Filter{}, 0)
	require.NoError(t, err)
	defer sub.Close()
	feed.Publish("runs", changes.Everything)
	select {
	case <-sub.Done():
		assert.True(t, sub.Dropped())
	default:
		t.Fatal("the stream goes on, with the runs announced meanwhile missing")
	}
	after, err := r.Feed().Subscribe("t_1", Filter{}, 0)
	require.NoError(t, err)
	defer after.Close()
	select {
	case <-after.Done():
		t.Fatal("a stream opened after the reconnect is live")
	default:
	}
}
