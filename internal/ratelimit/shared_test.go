package ratelimit_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/ratelimit"
	"github.com/svc-gateway/svc/internal/store/storetest"
)

// replicas returns n limiters named name, each on a store of its own on
// one PostgreSQL database (n replicas), all on clock.
func replicas(t *testing.T, n int, name string, every time.Duration, burst int, onError ratelimit.OnError, clock *fakeclock.Clock) []*ratelimit.Shared {
	t.Helper()
	dsn := storetest.DSN(t)
	ls := make([]*ratelimit.Shared, n)
	for i := range ls {
		ls[i] = ratelimit.NewShared(storetest.OpenAt(t, dsn), name, every, burst, onError, nil)
		ls[i].Now = clock.Now
	}
	return ls
}

// Requests spread across three replicas are admitted on their total:
// exactly the burst at once, then exactly the refill, whichever replica
// each request reaches; another key has its own bucket.
func TestSharedHoldsTheTotalAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.Unix(1_800_000_000, 0))
	// SVC_RATE_LIMIT=60: a token a second, a burst of 6.
	ls := replicas(t, 3, "api", time.Second, 6, ratelimit.FailOpen, clock)
	admitted := func(key string, n int) int {
		got := 0
		for i := range n {
			ok, wait, err := ls[i%len(ls)].Allow(ctx, key)
			require.NoError(t, err)
			if ok {
				got++
			} else {
				assert.Positive(t, wait)
			}
		}
		return got
	}
	assert.Equal(t, 6, admitted("key:a", 30))
	// The refused draws took nothing: the next token is a second away.
	_, wait, _ := ls[1].Allow(ctx, "key:a")
	assert.Equal(t, time.Second, wait)
	clock.Advance(10 * time.Second)
	assert.Equal(t, 6, admitted("key:a", 30), "ten seconds refill no more than the burst")
	clock.Advance(3 * time.Second)
	assert.Equal(t, 3, admitted("key:a", 30))
	assert.Equal(t, 6, admitted("key:b", 30))
}

// Goroutines hammering three replicas at once are admitted no more than
// the bucket holds: each draw is decided under its row's lock.
func TestSharedAdmitsNoMoreUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.Unix(1_800_000_000, 0))
	const burst = 20
	ls := replicas(t, 3, "api", time.Minute, burst, ratelimit.FailOpen, clock)
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 12 {
		l := ls[g%len(ls)]
		wg.Go(func() {
			for range 15 {
				ok, _, err := l.Allow(ctx, "key:hot")
				assert.NoError(t, err)
				if ok {
					admitted.Add(1)
				} else {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, burst, admitted.Load())
	assert.EqualValues(t, 12*15-burst, refused.Load())
}

// The sign-in bucket of an account (10, then one every 30 seconds; a
// successful sign-in refunded) locks the account after ten wrong
// passwords spread across replicas, on every replica.
func TestSharedSignInBucketLocksAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.Unix(1_800_000_000, 0))
	ls := replicas(t, 3, "account", 30*time.Second, 10, ratelimit.FailClosed, clock)
	const bucket = "account:ada@example.com"
	// The owner signs in through each replica: refunded, those cost nothing.
	for _, l := range ls {
		ok, _, err := l.Allow(ctx, bucket)
		require.NoError(t, err)
		require.True(t, ok)
		l.Refund(ctx, bucket)
	}
	for i := range 10 {
		ok, _, err := ls[i%3].Allow(ctx, bucket)
		require.NoError(t, err)
		require.True(t, ok, "wrong password %d", i+1)
	}
	for _, l := range ls {
		ok, wait, err := l.Allow(ctx, bucket)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, 30*time.Second, wait)
	}
	clock.Advance(30 * time.Second)
	ok, _, err := ls[2].Allow(ctx, bucket)
	require.NoError(t, err)
	assert.True(t, ok, "one attempt every 30 seconds")
	ok, _, _ = ls[0].Allow(ctx, bucket)
	assert.False(t, ok)
}

// broken is a database that does not answer.
type broken struct{ returns atomic.Int64 }

func (*broken) TakeTokens(context.Context, string, string, ratelimit.Rate, int64, time.Time) (bool, time.Duration, error) {
	return false, 0, errors.New("connection refused")
}

func (b *broken) ReturnTokens(context.Context, string, string, ratelimit.Rate, int64) error {
	b.returns.Add(1)
	return errors.New("connection refused")
}

// Without its database the standard limiter lets requests through, and
// the sign-in buckets refuse them with a 429 that says why.
func TestSharedFailsOpenOrClosedAsTold(t *testing.T) {
	ctx := context.Background()
	db := &broken{}
	open := ratelimit.NewShared(db, "api", time.Second, 1, ratelimit.FailOpen, nil)
	for range 3 {
		ok, wait, err := open.Allow(ctx, "key:a")
		assert.True(t, ok)
		assert.Zero(t, wait)
		assert.NoError(t, err)
	}
	closed := ratelimit.NewShared(db, "account", time.Second, 1, ratelimit.FailClosed, nil)
	ok, wait, err := closed.Allow(ctx, "account:a")
	assert.False(t, ok)
	assert.Equal(t, ratelimit.ClosedRetry, wait)
	var e *errs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errs.RateLimited, e.Kind)
	assert.Equal(t, ratelimit.ClosedRetry, e.Retry)
	assert.Contains(t, e.Public, "cannot be counted")
	closed.Refund(ctx, "account:a") // logged, not a panic
	assert.EqualValues(t, 1, db.returns.Load())
}

// A limiter made with every <= 0 is off, as New's, and asks nothing of its
// database.
func TestSharedOffAllowsEverything(t *testing.T) {
	l := ratelimit.NewShared(&broken{}, "api", 0, 0, ratelimit.FailClosed, nil)
	ok, _, err := l.Allow(context.Background(), "key:a")
	assert.True(t, ok)
	assert.NoError(t, err)
}

// Local is the in-memory Limiter behind the same interface: the same
// decisions, never an error.
func TestLocalIsTheLimiter(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.Unix(1_800_000_000, 0))
	l := ratelimit.New(time.Second, 2, 10)
	l.Now = clock.Now
	k := ratelimit.Local(l)
	for range 2 {
		ok, _, err := k.Allow(ctx, "a")
		require.True(t, ok)
		require.NoError(t, err)
	}
	ok, wait, err := k.Allow(ctx, "a")
	assert.False(t, ok)
	assert.Equal(t, time.Second, wait)
	assert.NoError(t, err)
	k.Refund(ctx, "a")
	ok, _, _ = k.Allow(ctx, "a")
	assert.True(t, ok)
}

// The cost of one decision on each engine: in memory (SQLite's one
// process), and a shared bucket in PostgreSQL (for comparison, the same
// statement on an SQLite file, which svc does not use). Keys rotate over a
// thousand callers.
func BenchmarkAllowByEngine(b *testing.B) {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i)
	}
	run := func(b *testing.B, l ratelimit.Keyed) {
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := l.Allow(ctx, keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	b.Run("memory-direct", func(b *testing.B) {
		l := ratelimit.New(time.Millisecond, 10, 100_000)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Allow(keys[i%len(keys)])
			i++
		}
	})
	b.Run("memory", func(b *testing.B) {
		run(b, ratelimit.Local(ratelimit.New(time.Millisecond, 10, 100_000)))
	})
	b.Run("sqlite-file", func(b *testing.B) {
		s := storetest.OpenAt(b, filepath.Join(b.TempDir(), "svc.db"))
		run(b, ratelimit.NewShared(s, "api", time.Millisecond, 10, ratelimit.FailOpen, nil))
	})
	b.Run("postgres", func(b *testing.B) {
		s := storetest.OpenAt(b, storetest.DSN(b))
		run(b, ratelimit.NewShared(s, "api", time.Millisecond, 10, ratelimit.FailOpen, nil))
	})
	b.Run("postgres-parallel", func(b *testing.B) {
		s := storetest.OpenAt(b, storetest.DSN(b))
		l := ratelimit.NewShared(s, "api", time.Millisecond, 10, ratelimit.FailOpen, nil)
		ctx := context.Background()
		b.ReportAllocs()
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := l.Allow(ctx, keys[next.Add(1)%int64(len(keys))]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// deadlines records the deadline of each draw's context.
type deadlines struct{ got []time.Time }

func (d *deadlines) TakeTokens(ctx context.Context, _, _ string, _ ratelimit.Rate, _ int64, _ time.Time) (bool, time.Duration, error) {
	at, _ := ctx.Deadline()
	d.got = append(d.got, at)
	return true, 0, nil
}

func (d *deadlines) ReturnTokens(ctx context.Context, _, _ string, _ ratelimit.Rate, _ int64) error {
	at, _ := ctx.Deadline()
	d.got = append(d.got, at)
	return nil
}

// A database that hangs holds a request up no longer than DecideTimeout,
// whatever the request's own context allows.
func TestSharedBoundsTheWaitForTheDatabase(t *testing.T) {
	d := &deadlines{}
	l := ratelimit.NewShared(d, "api", time.Second, 1, ratelimit.FailOpen, nil)
	before := time.Now()
	l.Allow(context.Background(), "key:a")
	l.Refund(context.Background(), "key:a")
	require.Len(t, d.got, 2)
	for _, at := range d.got {
		require.False(t, at.IsZero(), "a draw without a deadline")
		assert.WithinRange(t, at, before, time.Now().Add(ratelimit.DecideTimeout))
	}
}

// cancelled records whether a refund's context was already done.
type cancelled struct {
	deadlines
	done bool
}

func (c *cancelled) ReturnTokens(ctx context.Context, _, _ string, _ ratelimit.Rate, _ int64) error {
	c.done = ctx.Err() != nil
	return nil
}

// A refund is made even when the request that earned it has gone.
func TestSharedRefundOutlivesItsRequest(t *testing.T) {
	c := &cancelled{}
	l := ratelimit.NewShared(c, "account", time.Second, 1, ratelimit.FailClosed, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Refund(ctx, "account:a")
	assert.False(t, c.done)
}
