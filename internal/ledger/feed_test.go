package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ledger"
)

func feedRun(id, tenantID, app string) *ledger.Run {
	return &ledger.Run{ID: id, TenantID: tenantID, Route: ledger.RouteLive, Status: ledger.StatusOK, App: app,
		Model: "gpt-4o-mini", Request: []byte(`{}`)}
}

// received drains what a subscription holds now.
func received(s *ledger.Subscription) []string {
	var ids []string
	for {
		select {
		case r := <-s.Runs():
			ids = append(ids, r.ID)
		default:
			return ids
		}
	}
}

func TestFeedIsPerTenantAndFiltered(t *testing.T) {
	f := ledger.NewFeed()
	a, err := f.Subscribe("t_a", ledger.Filter{}, 0)
	require.NoError(t, err)
	defer a.Close()
	support, err := f.Subscribe("t_a", ledger.Filter{App: "support", Route: ledger.RouteLive}, 0)
	require.NoError(t, err)
	defer support.Close()
	b, err := f.Subscribe("t_b", ledger.Filter{}, 0)
	require.NoError(t, err)
	defer b.Close()

	f.Publish(feedRun("run_1", "t_a", "support"))
	f.Publish(feedRun("run_2", "t_a", "billing"))
	f.Publish(feedRun("run_3", "t_b", "support"))
	blocked := feedRun("run_4", "t_a", "support")
	blocked.Route = ledger.RouteBlocked
	f.Publish(blocked)

	assert.Equal(t, []string{"run_1", "run_2", "run_4"}, received(a))
	assert.Equal(t, []string{"run_1"}, received(support))
	assert.Equal(t, []string{"run_3"}, received(b), "a tenant sees only its own runs")
}

func TestFeedSubscribeRefusesWhatOnlyAListHas(t *testing.T) {
	f := ledger.NewFeed()
	for param, filter := range map[string]ledger.Filter{
		"route": {Route: "teleport"}, "status": {Status: "meh"}, "q": {Q: "x"}, "limit": {Limit: 5},
		"offset": {Offset: 5}, "since": {Since: time.Unix(1, 0)}, "until": {Until: time.Unix(1, 0)},
	} {
		_, err := f.Subscribe("t_a", filter, 0)
		assert.Equal(t, errs.Invalid, errs.KindOf(err), param)
		assert.Equal(t, param, errs.As(err).Param, param)
	}
}

// A subscriber that does not read is dropped once its buffer is full; the
// publisher never waits for it, and the others still get every run.
func TestFeedDropsASlowSubscriberWithoutWaiting(t *testing.T) {
	f := ledger.NewFeed()
	slow, err := f.Subscribe("t_a", ledger.Filter{}, 2)
	require.NoError(t, err)
	defer slow.Close()
	fast, err := f.Subscribe("t_a", ledger.Filter{}, 100)
	require.NoError(t, err)
	defer fast.Close()

	for _, id := range []string{"run_1", "run_2", "run_3", "run_4"} {
		f.Publish(feedRun(id, "t_a", "")) // would block here, were it to wait
	}
	select {
	case <-slow.Done():
	default:
		t.Fatal("the slow subscriber was not dropped")
	}
	assert.True(t, slow.Dropped())
	assert.Equal(t, []string{"run_1", "run_2"}, received(slow), "what it had stays readable")
	assert.Equal(t, []string{"run_1", "run_2", "run_3", "run_4"}, received(fast))
	assert.False(t, fast.Dropped())
}

func TestFeedCloseEndsEverySubscription(t *testing.T) {
	f := ledger.NewFeed()
	s, err := f.Subscribe("t_a", ledger.Filter{}, 0)
	require.NoError(t, err)
	f.Close()
	<-s.Done()
	assert.False(t, s.Dropped())
	s.Close()
	s.Close()
	later, err := f.Subscribe("t_a", ledger.Filter{}, 0)
	require.NoError(t, err)
	<-later.Done()
	later.Close()
	f.Publish(feedRun("run_1", "t_a", ""))
	assert.Empty(t, received(later))
}

func TestFeedForgetTenantEndsItsSubscriptions(t *testing.T) {
	f := ledger.NewFeed()
	gone, err := f.Subscribe("t_a", ledger.Filter{}, 0)
	require.NoError(t, err)
	alsoGone, err := f.Subscribe("t_a", ledger.Filter{App: "support"}, 0)
	require.NoError(t, err)
	stays, err := f.Subscribe("t_b", ledger.Filter{}, 0)
	require.NoError(t, err)
	defer stays.Close()
	require.Equal(t, 3, f.Subscribers())

	f.ForgetTenant("t_a")
	<-gone.Done()
	<-alsoGone.Done()
	assert.False(t, gone.Dropped(), "it did not fall behind")
	assert.Equal(t, 1, f.Subscribers(), "the tenant's subscriptions are off the feed")
	gone.Close()
	alsoGone.Close()
	assert.Equal(t, 1, f.Subscribers(), "closing them after counts nothing twice")
	select {
	case <-stays.Done():
		t.Fatal("another tenant's subscription ended")
	default:
	}
	f.Publish(feedRun("run_1", "t_a", "support"))
	f.Publish(feedRun("run_2", "t_b", ""))
	assert.Empty(t, received(gone))
	assert.Equal(t, []string{"run_2"}, received(stays))
}

func TestFeedPublishesNothingAfterClose(t *testing.T) {
	f := ledger.NewFeed()
	s, err := f.Subscribe("t_a", ledger.Filter{}, 0)
	require.NoError(t, err)
	s.Close()
	f.Publish(feedRun("run_1", "t_a", ""))
	assert.Empty(t, received(s), "a closed subscription is off the feed")
}

// With nobody listening, publishing costs no allocation.
func TestFeedPublishAllocatesNothingUnheard(t *testing.T) {
	f := ledger.NewFeed()
	run := feedRun("run_1", "t_a", "")
	assert.Zero(t, testing.AllocsPerRun(100, func() { f.Publish(run) }))
	other, err := f.Subscribe("t_b", ledger.Filter{}, 0)
	require.NoError(t, err)
	defer other.Close()
	assert.Zero(t, testing.AllocsPerRun(100, func() { f.Publish(run) }), "nor with only other tenants listening")
}

func TestListedRunHasNoBodies(t *testing.T) {
	r := feedRun("run_1", "t_a", "")
	r.Response = []byte(`{}`)
	l := r.Listed()
	assert.Nil(t, l.Request)
	assert.Nil(t, l.Response)
	assert.NotNil(t, r.Request, "the run itself is left as it was")
}

// Streams says whether a tenant has a subscription, until it is closed.
func TestFeedStreamsByTenant(t *testing.T) {
	f := ledger.NewFeed()
	assert.False(t, f.Streams("t_1"))
	sub, err := f.Subscribe("t_1", ledger.Filter{}, 0)
	require.NoError(t, err)
	assert.True(t, f.Streams("t_1"))
	assert.False(t, f.Streams("t_2"))
	sub.Close()
	assert.False(t, f.Streams("t_1"))
}
