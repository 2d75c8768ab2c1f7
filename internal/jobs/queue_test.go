package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// newClock returns the clock a test moves, so that no test waits for a backoff.
func newClock() *fakeclock.Clock { return fakeclock.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) }

func newQueue(t *testing.T, s jobs.Store, c *fakeclock.Clock, opts jobs.Options) *jobs.Queue {
	t.Helper()
	opts.Now = c.Now
	q := jobs.New(s, opts)
	t.Cleanup(q.Close)
	return q
}

func ok(context.Context, jobs.Job) error { return nil }

func get(t *testing.T, q *jobs.Queue, tenantID, id string) jobs.Job {
	t.Helper()
	j, err := q.Get(context.Background(), tenantID, id)
	require.NoError(t, err)
	return j
}

func runDue(t *testing.T, q *jobs.Queue) int {
	t.Helper()
	n, err := q.RunDue(context.Background())
	require.NoError(t, err)
	return n
}

func TestEnqueuedJobRunsAndSucceeds(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	q := newQueue(t, storetest.Open(t), c, jobs.Options{})
	var seen []jobs.Job
	q.Register("test.echo", func(_ context.Context, j jobs.Job) error {
		seen = append(seen, j)
		return nil
	})

	j, err := q.Enqueue(ctx, tenant.DefaultID, "test.echo", map[string]any{"n": 1})
	require.NoError(t, err)
	assert.Equal(t, jobs.Queued, j.Status)
	assert.Equal(t, 0, j.Attempts)
	assert.Equal(t, jobs.DefaultMaxAttempts, j.MaxAttempts)
	assert.Equal(t, c.Now(), j.RunAt, "due at once")
	assert.Equal(t, j, get(t, q, tenant.DefaultID, j.ID), "stored as returned")

	assert.Equal(t, 1, runDue(t, q))
	require.Len(t, seen, 1)
	assert.Equal(t, j.ID, seen[0].ID)
	assert.Equal(t, tenant.DefaultID, seen[0].TenantID)
	assert.JSONEq(t, `{"n":1}`, string(seen[0].Payload))
	assert.Equal(t, 1, seen[0].Attempts, "the handler sees the attempt it runs")
	assert.Equal(t, jobs.Running, seen[0].Status)

	got := get(t, q, tenant.DefaultID, j.ID)
	assert.Equal(t, jobs.Succeeded, got.Status)
	assert.Equal(t, 1, got.Attempts)
	assert.Empty(t, got.LastError)
	assert.Equal(t, 0, runDue(t, q), "a succeeded job does not run again")
}

func TestFailedAttemptsBackOffExponentiallyThenFail(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	q := newQueue(t, storetest.Open(t), c, jobs.Options{}) // DefaultBackoff, DefaultMaxAttempts
	calls := 0
	q.Register("test.flaky", func(context.Context, jobs.Job) error {
		calls++
		return fmt.Errorf("boom %d", calls)
	})
	j, err := q.Enqueue(ctx, tenant.DefaultID, "test.flaky", nil)
	require.NoError(t, err)

	for i, backoff := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		require.Equal(t, 1, runDue(t, q), "attempt %d", i+1)
		got := get(t, q, tenant.DefaultID, j.ID)
		require.Equal(t, jobs.Queued, got.Status, "attempt %d is retried", i+1)
		assert.Equal(t, i+1, got.Attempts)
		assert.Equal(t, fmt.Sprintf("boom %d", i+1), got.LastError)
		wait := got.RunAt.Sub(c.Now())
		assert.GreaterOrEqual(t, wait, backoff*4/5-time.Millisecond, "attempt %d: runAt moves by the backoff, less at most a fifth of jitter", i+1)
		assert.LessOrEqual(t, wait, backoff, "attempt %d", i+1)

		c.Set(got.RunAt.Add(-time.Millisecond))
		assert.Equal(t, 0, runDue(t, q), "not due before runAt")
		c.Set(got.RunAt)
	}
	require.Equal(t, 1, runDue(t, q), "the fifth attempt")
	got := get(t, q, tenant.DefaultID, j.ID)
	assert.Equal(t, jobs.Failed, got.Status)
	assert.Equal(t, 5, got.Attempts)
	assert.Equal(t, "boom 5", got.LastError)

	c.Set(c.Now().Add(24 * time.Hour))
	assert.Equal(t, 0, runDue(t, q), "a failed job does not run again")
	assert.Equal(t, 5, calls)
}

func TestBackoffOptionSetsRunAt(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	q := newQueue(t, storetest.Open(t), c, jobs.Options{
		MaxAttempts: 3,
		Backoff:     func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute },
	})
	q.Register("test.fail", func(context.Context, jobs.Job) error { return errors.New("no") })
	j, err := q.Enqueue(ctx, tenant.DefaultID, "test.fail", nil)
	require.NoError(t, err)
	assert.Equal(t, 3, j.MaxAttempts)

	runDue(t, q)
	got := get(t, q, tenant.DefaultID, j.ID)
	assert.Equal(t, c.Now().Add(time.Minute), got.RunAt)
	c.Set(got.RunAt)
	runDue(t, q)
	got = get(t, q, tenant.DefaultID, j.ID)
	assert.Equal(t, c.Now().Add(2*time.Minute), got.RunAt)
	c.Set(got.RunAt)
	runDue(t, q)
	assert.Equal(t, jobs.Failed, get(t, q, tenant.DefaultID, j.ID).Status, "failed after MaxAttempts")
}

func TestExponentialBackoff(t *testing.T) {
	b := jobs.Exponential(time.Second, 10*time.Second)
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		for range 50 {
			d := b(attempt)
			require.LessOrEqual(t, d, want, "attempt %d", attempt)
			require.GreaterOrEqual(t, d, want*4/5, "attempt %d", attempt)
		}
	}
}

func TestPermanentErrorFailsAtOnce(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	q := newQueue(t, storetest.Open(t), c, jobs.Options{})
	calls := 0
	q.Register("test.bad", func(context.Context, jobs.Job) error {
		calls++
		return jobs.Permanent(errors.New("payload is not a delivery"))
	})
	j, err := q.Enqueue(ctx, tenant.DefaultID, "test.bad", nil)
	require.NoError(t, err)

	assert.Equal(t, 1, runDue(t, q))
	got := get(t, q, tenant.DefaultID, j.ID)
	assert.Equal(t, jobs.Failed, got.Status)
	assert.Equal(t, 1, got.Attempts)
	assert.Equal(t, "payload is not a delivery", got.LastError)
	c.Set(c.Now().Add(time.Hour))
	assert.Equal(t, 0, runDue(t, q))
	assert.Equal(t, 1, calls)

	require.ErrorIs(t, jobs.Permanent(errors.New("x")), jobs.ErrPermanent)
	require.NoError(t, jobs.Permanent(nil))
}

func TestPanickingHandlerFailsTheJob(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, storetest.Open(t), newClock(), jobs.Options{})
	q.Register("test.panic", func(context.Context, jobs.Job) error { panic("nil map") })
	j, err := q.Enqueue(ctx, tenant.DefaultID, "test.panic", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, runDue(t, q))
	got := get(t, q, tenant.DefaultID, j.ID)
	assert.Equal(t, jobs.Failed, got.Status)
	assert.Equal(t, "handler panicked: nil map", got.LastError)
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, storetest.Open(t), newClock(), jobs.Options{Timeout: 10 * time.Millisecond})
	q.Register("test.hang", func(ctx context.Context, _ jobs.Job) error {
		<-ctx.Done()
		return ctx.Err()
	})
	j, err := q.Enqueue(ctx, tenant.DefaultID, "test.hang", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, runDue(t, q))
	got := get(t, q, tenant.DefaultID, j.ID)
	assert.Equal(t, jobs.Queued, got.Status)
	assert.Contains(t, got.LastError, "attempt timed out after 10ms")
}

func TestEnqueueRefusals(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, storetest.Open(t), newClock(), jobs.Options{})
	q.Register("test.ok", ok)

	_, err := q.Enqueue(ctx, tenant.DefaultID, "test.unknown", nil)
	require.ErrorContains(t, err, `no handler registered for type "test.unknown"`)
	_, err = q.Enqueue(ctx, "t_nope", "test.ok", nil)
	assert.Equal(t, errs.NotFound, errs.KindOf(err), "unknown tenant: %v", err)
	_, err = q.Enqueue(ctx, tenant.DefaultID, "test.ok", strings.Repeat("x", jobs.MaxPayloadBytes))
	require.ErrorContains(t, err, "over the")
	_, err = q.Enqueue(ctx, tenant.DefaultID, "test.ok", func() {})
	require.Error(t, err)

	assert.Panics(t, func() { q.Register("test.ok", ok) }, "a type is registered once")
}

func TestJobsOfUnregisteredTypesWait(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	c := newClock()
	newer := newQueue(t, s, c, jobs.Options{})
	newer.Register("test.new", ok)
	j, err := newer.Enqueue(ctx, tenant.DefaultID, "test.new", nil)
	require.NoError(t, err)

	older := newQueue(t, s, c, jobs.Options{})
	older.Register("test.old", ok)
	assert.Equal(t, 0, runDue(t, older), "a queue claims only the types it has handlers for")
	assert.Equal(t, jobs.Queued, get(t, older, tenant.DefaultID, j.ID).Status)
}

func TestRestartRecoversRunningJobs(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	path := filepath.Join(t.TempDir(), "svc.db")

	// The first process claims two jobs and stops before finishing either.
	s1, err := store.Open(ctx, path)
	require.NoError(t, err)
	q1 := jobs.New(s1, jobs.Options{Now: c.Now})
	q1.Register("test.work", ok)
	again, err := q1.Enqueue(ctx, tenant.DefaultID, "test.work", map[string]string{"k": "again"})
	require.NoError(t, err)
	last1 := jobs.New(s1, jobs.Options{Now: c.Now, MaxAttempts: 1})
	last1.Register("test.work", ok)
	last, err := last1.Enqueue(ctx, tenant.DefaultID, "test.work", map[string]string{"k": "last"})
	require.NoError(t, err)
	for range 2 {
		_, claimed, err := s1.ClaimJob(ctx, []string{"test.work"}, c.Now(), "stopped", time.Hour)
		require.NoError(t, err)
		require.True(t, claimed)
	}
	require.NoError(t, s1.Close())

	// The next start finds them running, requeues the one with attempts
	// left and runs it; the one whose only attempt was cut short fails.
	s2, err := store.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })
	var (
		mu  sync.Mutex
		ran []string
	)
	m := metrics.New(metrics.Options{})
	q2 := jobs.New(s2, jobs.Options{Now: c.Now, PollInterval: time.Hour, Metrics: m})
	q2.Register("test.work", func(_ context.Context, j jobs.Job) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, j.ID)
		return nil
	})
	require.NoError(t, q2.Start(ctx))
	require.Eventually(t, func() bool {
		j, err := q2.Get(ctx, tenant.DefaultID, again.ID)
		return err == nil && j.Status == jobs.Succeeded
	}, 10*time.Second, 5*time.Millisecond, "the requeued job is picked up at start")
	q2.Close()

	got := get(t, q2, tenant.DefaultID, again.ID)
	assert.Equal(t, 2, got.Attempts, "the interrupted attempt counts")
	assert.Equal(t, "interrupted: the service stopped during attempt 1", got.LastError)
	got = get(t, q2, tenant.DefaultID, last.ID)
	assert.Equal(t, jobs.Failed, got.Status)
	assert.Equal(t, 1, got.Attempts)
	assert.Equal(t, "interrupted: the service stopped during attempt 1, the last", got.LastError)
	assert.Equal(t, map[string]float64{"false,test.work": 1, "true,test.work": 1}, metricstest.Nonzero(t, m, "svc_job_failures_total"),
		"each interrupted attempt is a failed one; the last one's job failed for good")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{again.ID}, ran)
}

func TestWorkersWakeOnEnqueue(t *testing.T) {
	ctx := context.Background()
	// With an hour between polls, only Enqueue's wake-up can start a job
	// in time.
	q := newQueue(t, storetest.Open(t), newClock(), jobs.Options{PollInterval: time.Hour})
	q.Register("test.ok", ok)
	require.NoError(t, q.Start(ctx))
	require.Error(t, q.Start(ctx), "started once")
	for i := range 3 {
		j, err := q.Enqueue(ctx, tenant.DefaultID, "test.ok", i)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			got, err := q.Get(ctx, tenant.DefaultID, j.ID)
			return err == nil && got.Status == jobs.Succeeded
		}, 10*time.Second, 5*time.Millisecond, "job %d", i)
	}
}

func TestCloseWaitsForTheAttemptInFlight(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, storetest.Open(t), newClock(), jobs.Options{})
	started, release := make(chan struct{}), make(chan struct{})
	q.Register("test.slow", func(context.Context, jobs.Job) error {
		close(started)
		<-release
		return nil
	})
	require.NoError(t, q.Start(ctx))
	j, err := q.Enqueue(ctx, tenant.DefaultID, "test.slow", nil)
	require.NoError(t, err)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not start")
	}

	closed := make(chan struct{})
	go func() {
		q.Close()
		close(closed)
	}()
	isClosed := func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	}
	assert.Never(t, isClosed, 100*time.Millisecond, 5*time.Millisecond, "Close waits for the handler")
	close(release)
	require.Eventually(t, isClosed, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, jobs.Succeeded, get(t, q, tenant.DefaultID, j.ID).Status, "the outcome is recorded before Close returns")
}

func TestListIsTenantScoped(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	q := newQueue(t, s, newClock(), jobs.Options{})
	q.Register("test.ok", ok)
	q.Register("test.bad", func(context.Context, jobs.Job) error { return jobs.Permanent(errors.New("bad")) })
	var mine []string
	for range 2 {
		j, err := q.Enqueue(ctx, tenant.DefaultID, "test.ok", nil)
		require.NoError(t, err)
		mine = append([]string{j.ID}, mine...)
	}
	theirs, err := q.Enqueue(ctx, other.ID, "test.ok", nil)
	require.NoError(t, err)
	theirsBad, err := q.Enqueue(ctx, other.ID, "test.bad", nil)
	require.NoError(t, err)
	require.Equal(t, 4, runDue(t, q))

	l, err := q.List(ctx, tenant.DefaultID, jobs.Filter{})
	require.NoError(t, err)
	assert.Equal(t, mine, ids(l.Jobs))
	assert.Equal(t, jobs.Stats{Succeeded: 2}, l.Stats, "counts only the tenant's jobs")
	l, err = q.List(ctx, tenant.DefaultID, jobs.Filter{Status: jobs.Failed})
	require.NoError(t, err)
	assert.Empty(t, l.Jobs, "the other tenant's failed job is not listed")

	l, err = q.List(ctx, other.ID, jobs.Filter{})
	require.NoError(t, err)
	assert.Equal(t, []string{theirsBad.ID, theirs.ID}, ids(l.Jobs))
	assert.Equal(t, jobs.Stats{Succeeded: 1, Failed: 1}, l.Stats)

	_, err = q.Get(ctx, tenant.DefaultID, theirs.ID)
	assert.Equal(t, errs.NotFound, errs.KindOf(err), "another tenant's job is not found")
	_, err = q.Get(ctx, tenant.DefaultID, "../etc")
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
}

func ids(list []jobs.Job) []string {
	out := make([]string, len(list))
	for i, j := range list {
		out[i] = j.ID
	}
	return out
}

func TestListFiltersAndCounts(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	c := newClock()
	q := newQueue(t, s, c, jobs.Options{})
	q.Register("test.ok", ok)
	q.Register("test.bad", func(context.Context, jobs.Job) error { return jobs.Permanent(errors.New("bad")) })
	enqueue := func(typ string) jobs.Job {
		j, err := q.Enqueue(ctx, tenant.DefaultID, typ, nil)
		require.NoError(t, err)
		return j
	}
	succeeded, failed := enqueue("test.ok"), enqueue("test.bad")
	require.Equal(t, 2, runDue(t, q))
	running, queued := enqueue("test.ok"), enqueue("test.ok")
	claimed, isClaimed, err := s.ClaimJob(ctx, []string{"test.ok"}, c.Now(), "elsewhere", time.Hour) // in flight
	require.NoError(t, err)
	require.True(t, isClaimed)
	require.Equal(t, running.ID, claimed.ID, "the earliest due job is claimed first")

	all := jobs.Stats{Queued: 1, Running: 1, Succeeded: 1, Failed: 1}
	for _, tc := range []struct {
		filter jobs.Filter
		want   []string
	}{
		{jobs.Filter{}, []string{queued.ID, running.ID, failed.ID, succeeded.ID}},
		{jobs.Filter{Limit: 2}, []string{queued.ID, running.ID}},
		{jobs.Filter{Limit: 10_000}, []string{queued.ID, running.ID, failed.ID, succeeded.ID}},
		{jobs.Filter{Status: jobs.Queued}, []string{queued.ID}},
		{jobs.Filter{Status: jobs.Running}, []string{running.ID}},
		{jobs.Filter{Status: jobs.Succeeded}, []string{succeeded.ID}},
		{jobs.Filter{Status: jobs.Failed}, []string{failed.ID}},
	} {
		l, err := q.List(ctx, tenant.DefaultID, tc.filter)
		require.NoError(t, err)
		assert.Equal(t, tc.want, ids(l.Jobs), "%+v", tc.filter)
		assert.Equal(t, all, l.Stats, "stats count every job whatever the filter: %+v", tc.filter)
	}

	for _, f := range []jobs.Filter{{Status: "done"}, {Status: "QUEUED"}, {Limit: -1}} {
		_, err := q.List(ctx, tenant.DefaultID, f)
		assert.Equal(t, errs.Invalid, errs.KindOf(err), "%+v", f)
	}
}
