package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ratelimit"
	"github.com/svc-gateway/svc/internal/store/storetest"
)

// A shared bucket behaves as x/time/rate's: full at first, a refusal takes
// nothing and says exactly when a token is back, refunds never fill it past
// its burst, and the sweep forgets only full buckets.
func TestTakeTokensIsATokenBucket(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	r := ratelimit.Rate{Every: 6 * time.Second, Burst: 3}
	t0 := time.Unix(1_800_000_000, 0)
	take := func(key string, cost int64, at time.Time) (bool, time.Duration) {
		t.Helper()
		ok, wait, err := s.TakeTokens(ctx, "test", key, r, cost, at)
		require.NoError(t, err)
		return ok, wait
	}
	for i := range 3 {
		ok, wait := take("a", 1, t0)
		require.True(t, ok, "draw %d", i)
		assert.Zero(t, wait)
	}
	ok, wait := take("a", 1, t0)
	assert.False(t, ok)
	assert.Equal(t, 6*time.Second, wait)
	// Refused again a second later: the refusal took nothing.
	ok, wait = take("a", 1, t0.Add(time.Second))
	assert.False(t, ok)
	assert.Equal(t, 5*time.Second, wait)
	ok, _ = take("a", 1, t0.Add(6*time.Second))
	assert.True(t, ok)

	// Another key, and the same key of another limiter, are other buckets.
	ok, _ = take("b", 3, t0)
	assert.True(t, ok)
	ok, _, err := s.TakeTokens(ctx, "other", "a", r, 3, t0)
	require.NoError(t, err)
	assert.True(t, ok)

	// A refund gives a token back, never more than the burst.
	require.NoError(t, s.ReturnTokens(ctx, "test", "b", r, 1))
	ok, _ = take("b", 1, t0)
	assert.True(t, ok)
	ok, wait = take("b", 1, t0)
	assert.False(t, ok)
	assert.Equal(t, 6*time.Second, wait)
	for range 5 {
		require.NoError(t, s.ReturnTokens(ctx, "test", "b", r, 1))
	}
	ok, _ = take("b", 3, t0.Add(time.Second))
	assert.True(t, ok)
	ok, wait = take("b", 1, t0.Add(time.Second))
	assert.False(t, ok)
	assert.Equal(t, 6*time.Second, wait)

	// A draw larger than what is there waits for all of it.
	ok, _ = take("c", 2, t0)
	assert.True(t, ok)
	ok, wait = take("c", 2, t0)
	assert.False(t, ok)
	assert.Equal(t, 6*time.Second, wait)

	// A clock behind the bucket's last draw credits nothing.
	ok, wait = take("a", 1, t0)
	assert.False(t, ok)
	assert.Equal(t, 12*time.Second, wait)

	// At t0+18s only "c" (full since t0+12s) and "other" (t0+18s) are full.
	n, err := s.SweepBuckets(ctx, t0.Add(18*time.Second))
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	ok, _ = take("b", 1, t0.Add(18*time.Second))
	assert.True(t, ok, "b was kept: it is full at t0+19s")
	ok, wait = take("b", 3, t0.Add(18*time.Second))
	assert.False(t, ok, "b was kept: two tokens are there, one 7 seconds later")
	assert.Equal(t, 7*time.Second, wait)
}

func TestTakeTokensRefusesABadDraw(t *testing.T) {
	s := storetest.Open(t)
	r := ratelimit.Rate{Every: time.Second, Burst: 2}
	_, _, err := s.TakeTokens(context.Background(), "test", "a", r, 3, time.Now())
	assert.Error(t, err)
	_, _, err = s.TakeTokens(context.Background(), "test", "a", ratelimit.Rate{Burst: 2}, 1, time.Now())
	assert.Error(t, err)
}
