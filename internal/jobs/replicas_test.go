package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// replicaQueues returns n shared queues, each on its own store on one
// PostgreSQL database: n replicas.
func replicaQueues(t *testing.T, n int, c *fakeclock.Clock, opts jobs.Options) []*jobs.Queue {
	t.Helper()
	clocks := make([]*fakeclock.Clock, n)
	for i := range clocks {
		clocks[i] = c
	}
	return replicaQueuesOn(t, clocks, opts)
}

// replicaQueuesOn is replicaQueues with each replica on its own clock.
func replicaQueuesOn(t *testing.T, clocks []*fakeclock.Clock, opts jobs.Options) []*jobs.Queue {
	t.Helper()
	dsn := storetest.DSN(t)
	qs := make([]*jobs.Queue, len(clocks))
	for i := range qs {
		o := opts
		o.Shared = true
		o.Owner = fmt.Sprintf("replica-%d", i)
		qs[i] = newQueue(t, storetest.OpenAt(t, dsn), clocks[i], o)
	}
	return qs
}

func TestEachJobRunsOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	qs := replicaQueues(t, 3, c, jobs.Options{Workers: 4, PollInterval: 5 * time.Millisecond, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Error})})
	var (
		mu    sync.Mutex
		calls = map[string]int{}
		by    = map[string]bool{}
	)
	for _, q := range qs {
		q.Register("test.count", func(_ context.Context, j jobs.Job) error {
			mu.Lock()
			defer mu.Unlock()
			calls[j.ID]++
			by[j.Owner] = true
			return nil
		})
	}
	const n = 120
	want := make([]string, 0, n)
	for i := range n {
		j, err := qs[i%len(qs)].Enqueue(ctx, tenant.DefaultID, "test.count", map[string]int{"i": i})
		require.NoError(t, err)
		want = append(want, j.ID)
	}
	for _, q := range qs {
		require.NoError(t, q.Start(ctx))
	}
	var last jobs.Stats
	require.Eventually(t, func() bool {
		l, err := qs[0].List(ctx, tenant.DefaultID, jobs.Filter{})
		last = l.Stats
		return err == nil && l.Stats.Succeeded == n
	}, 60*time.Second, 10*time.Millisecond, "every job succeeds: %+v", &last)
	for _, q := range qs {
		q.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range want {
		assert.Equal(t, 1, calls[id], "job %s runs once", id)
	}
	assert.Len(t, calls, n)
	for _, id := range want {
		assert.Equal(t, 1, get(t, qs[0], tenant.DefaultID, id).Attempts, "no attempt of %s was lost", id)
	}
}

// blocking registers on q a handler that reports each job it starts on
// started and returns once release closes.
func blocking(q *jobs.Queue, started chan<- jobs.Job, release <-chan struct{}) {
	q.Register("test.slow", func(_ context.Context, j jobs.Job) error {
		started <- j
		<-release
		return nil
	})
}

// slowRun is a test.slow job the first of its queues runs, its handler
// waiting on release: every queue's starts are sent on started, and the
// first queue's run ends on outcome.
type slowRun struct {
	job     jobs.Job
	started chan jobs.Job
	release chan struct{}
	outcome chan error
}

// startSlowJob registers test.slow on every queue, enqueues one, and has
// qs[0] run it; it returns once the job started.
func startSlowJob(t *testing.T, qs ...*jobs.Queue) slowRun {
	t.Helper()
	ctx := context.Background()
	r := slowRun{started: make(chan jobs.Job, 2), release: make(chan struct{}), outcome: make(chan error, 1)}
	for _, q := range qs {
		blocking(q, r.started, r.release)
	}
	j, err := qs[0].Enqueue(ctx, tenant.DefaultID, "test.slow", nil)
	require.NoError(t, err)
	r.job = j
	go func() { _, err := qs[0].RunDue(ctx); r.outcome <- err }()
	got := <-r.started
	require.Equal(t, j.ID, got.ID)
	return r
}

// A lease is measured by the database's clock: a replica whose clock runs
// hours ahead does not take a live replica's job, and takes it once the
// lease lapsed in real time.
func TestLapsedLeaseIsRecoveredByAnotherReplica(t *testing.T) {
	ctx := context.Background()
	ahead := newClock()
	ahead.Advance(3 * time.Hour)
	const lease = 2 * time.Second
	qs := replicaQueuesOn(t, []*fakeclock.Clock{newClock(), ahead}, jobs.Options{PollInterval: time.Hour, Lease: lease})
	a, b := qs[0], qs[1]
	// a claims the job, then "dies": its handler hangs and its heartbeat
	// stops.
	run := startSlowJob(t, a, b)
	j, started, release, outcome := run.job, run.started, run.release, run.outcome
	assert.Equal(t, "replica-0", get(t, b, tenant.DefaultID, j.ID).Owner)

	// While a renews its lease the job stays a's, whatever b's clock says.
	require.NoError(t, a.Heartbeat(ctx))
	require.NoError(t, b.Heartbeat(ctx))
	assert.Equal(t, jobs.Running, get(t, b, tenant.DefaultID, j.ID).Status, "a live lease is not taken")

	// a misses its renewals: b queues the job again and runs it.
	require.Eventually(t, func() bool {
		require.NoError(t, b.Heartbeat(ctx))
		return get(t, b, tenant.DefaultID, j.ID).Status == jobs.Queued
	}, 10*lease, 10*time.Millisecond, "the lapsed lease is taken")
	requeued := get(t, b, tenant.DefaultID, j.ID)
	assert.Contains(t, requeued.LastError, "interrupted")
	done := make(chan int, 1)
	go func() { n, _ := b.RunDue(ctx); done <- n }()
	again := <-started
	assert.Equal(t, 2, again.Attempts, "the lapsed attempt counts")
	assert.Equal(t, "replica-1", again.Owner)
	close(release)
	assert.Equal(t, 1, <-done)
	assert.Equal(t, jobs.Succeeded, get(t, b, tenant.DefaultID, j.ID).Status)

	// a's late outcome is refused, not recorded over b's.
	assert.ErrorContains(t, <-outcome, "lease lapsed")
	final := get(t, a, tenant.DefaultID, j.ID)
	assert.Equal(t, jobs.Succeeded, final.Status)
	assert.Equal(t, 2, final.Attempts)
}

// A replica whose clock runs far ahead, or far behind, of another's takes
// none of its live jobs, however often it looks.
func TestSkewedClocksLeaveLiveJobs(t *testing.T) {
	ctx := context.Background()
	ahead, behind := newClock(), newClock()
	ahead.Advance(24 * time.Hour)
	behind.Advance(-24 * time.Hour)
	qs := replicaQueuesOn(t, []*fakeclock.Clock{behind, ahead}, jobs.Options{PollInterval: time.Hour})
	a, b := qs[0], qs[1]
	run := startSlowJob(t, a, b)
	j, release, outcome := run.job, run.release, run.outcome

	for range 3 {
		require.NoError(t, a.Heartbeat(ctx))
		require.NoError(t, b.Heartbeat(ctx))
		requeued, failed, err := b.Recover(ctx)
		require.NoError(t, err)
		assert.Zero(t, requeued+failed)
		got := get(t, b, tenant.DefaultID, j.ID)
		assert.Equal(t, jobs.Running, got.Status, "a's lease is live")
		assert.Equal(t, "replica-0", got.Owner)
	}
	close(release)
	require.NoError(t, <-outcome)
	assert.Equal(t, jobs.Succeeded, get(t, a, tenant.DefaultID, j.ID).Status)
	assert.Equal(t, 1, get(t, a, tenant.DefaultID, j.ID).Attempts)
}

func TestStartingReplicaLeavesALiveReplicasJobs(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	qs := replicaQueues(t, 2, c, jobs.Options{PollInterval: 5 * time.Millisecond})
	a, b := qs[0], qs[1]
	run := startSlowJob(t, a, b)
	j, started, release, outcome := run.job, run.started, run.release, run.outcome

	// b starts (as a replica restarting would) while a runs the job.
	requeued, failed, err := b.Recover(ctx)
	require.NoError(t, err)
	assert.Zero(t, requeued+failed)
	require.NoError(t, b.Start(ctx))
	_, err = b.Enqueue(ctx, tenant.DefaultID, "test.slow", nil) // b's workers are awake and polling
	require.NoError(t, err)
	other := <-started
	assert.NotEqual(t, j.ID, other.ID, "b runs other jobs, not a's")
	got := get(t, b, tenant.DefaultID, j.ID)
	assert.Equal(t, jobs.Running, got.Status)
	assert.Equal(t, "replica-0", got.Owner)
	assert.Equal(t, 1, got.Attempts)

	close(release)
	require.NoError(t, <-outcome)
	got = get(t, a, tenant.DefaultID, j.ID)
	assert.Equal(t, jobs.Succeeded, got.Status)
	assert.Equal(t, 1, got.Attempts)
}

func TestEnqueueOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	var qs []*jobs.Queue
	if storetest.Postgres() {
		qs = replicaQueues(t, 3, c, jobs.Options{})
	} else {
		s := storetest.Open(t)
		qs = []*jobs.Queue{newQueue(t, s, c, jobs.Options{}), newQueue(t, s, c, jobs.Options{})}
	}
	for _, q := range qs {
		q.Register("test.daily", ok)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		queued []string
	)
	for range 4 {
		for _, q := range qs {
			wg.Go(func() {
				j, isNew, err := q.EnqueueOnce(ctx, tenant.DefaultID, "test.daily", "2030-01-02", nil)
				assert.NoError(t, err)
				if isNew {
					mu.Lock()
					queued = append(queued, j.ID)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	require.Len(t, queued, 1, "one job for the period, whichever replica asked first")
	l, err := qs[0].List(ctx, tenant.DefaultID, jobs.Filter{})
	require.NoError(t, err)
	assert.Len(t, l.Jobs, 1)

	// Another period, or another tenant, is another job; the key is not
	// needed by Enqueue.
	_, isNew, err := qs[0].EnqueueOnce(ctx, tenant.DefaultID, "test.daily", "2030-01-03", nil)
	require.NoError(t, err)
	assert.True(t, isNew)
	_, _, err = qs[0].EnqueueOnce(ctx, tenant.DefaultID, "test.daily", "", nil)
	assert.Error(t, err)
	_, _, err = qs[0].EnqueueOnce(ctx, "t_missing", "test.daily", "2030-01-02", nil)
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
}
