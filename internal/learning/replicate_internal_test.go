package learning

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/changes/changestest"
	"github.com/svc-gateway/svc/internal/learning/synth"
)

// gatedStore counts the reloads' reads of artifacts and holds each until
// the gate opens or its context ends.
type gatedStore struct {
	Store
	started chan struct{}
	gate    chan struct{}

	mu       sync.Mutex
	reads    int
	inFlight int
}

func newGatedStore() *gatedStore {
	return &gatedStore{started: make(chan struct{}, 100), gate: make(chan struct{})}
}

func (g *gatedStore) ListArtifacts(ctx context.Context, _, _ string) ([]synth.Artifact, error) {
	g.mu.Lock()
	g.reads++
	g.inFlight++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	g.started <- struct{}{}
	select {
	case <-g.gate:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *gatedStore) counts() (reads, inFlight int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reads, g.inFlight
}

func followingService(st Store) (*Service, *changestest.Feed) {
	s := &Service{o: Options{Store: st, Logger: hclog.NewNullLogger()}, index: newIndex()}
	feed := changestest.New()
	s.Replicate(feed)
	return s, feed
}

func TestCloseStopsAndWaitsForTheReloadsNoticesStarted(t *testing.T) {
	st := newGatedStore()
	s, feed := followingService(st)
	feed.Publish(learningTopic, "t1")
	<-st.started // a reload reads the store, and hangs

	s.Close()
	_, inFlight := st.counts()
	assert.Zero(t, inFlight, "no reload outlives Close (it would read a closed store)")
	feed.Publish(learningTopic, "t2")
	reads, _ := st.counts()
	assert.Equal(t, 1, reads, "no reload starts after Close")
}

func TestNoticesDuringAReloadFoldIntoOneMore(t *testing.T) {
	st := newGatedStore()
	s, feed := followingService(st)
	defer s.Close()
	feed.Publish(learningTopic, "t1")
	<-st.started
	for range 5 {
		feed.Publish(learningTopic, "t1")
	}
	close(st.gate)
	<-st.started // the one more reload
	require.Eventually(t, func() bool {
		s.follow.mu.Lock()
		defer s.follow.mu.Unlock()
		return len(s.follow.queued) == 0
	}, 10*time.Second, time.Millisecond)
	reads, _ := st.counts()
	assert.Equal(t, 2, reads, "five notices during a reload make one more reload, not five")
}
