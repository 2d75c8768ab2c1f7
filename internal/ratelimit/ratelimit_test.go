package ratelimit

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
)

// t0 is an arbitrary fixed instant; every test drives time from here
// explicitly, in the style of golang.org/x/time/rate's own tests.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// newClock returns a clock at t0; it is safe for the tests that read it
// from many goroutines under -race.
func newClock() *fakeclock.Clock { return fakeclock.New(t0) }

// newTest returns the spec's 10-per-minute limiter on a fake clock.
func newTest(maxKeys int) (*Limiter, *fakeclock.Clock) {
	c := newClock()
	l := New(6*time.Second, 10, maxKeys)
	l.Now = c.Now
	return l, c
}

// allow is one row of a table: at t, key asks for a token and gets ok; when
// refused, retry is the exact expected delay.
type allow struct {
	t     time.Time
	key   string
	ok    bool
	retry time.Duration
}

func run(t *testing.T, l *Limiter, c *fakeclock.Clock, rows []allow) {
	t.Helper()
	for i, r := range rows {
		c.Set(r.t)
		ok, retry := l.Allow(r.key)
		require.Equalf(t, r.ok, ok, "row %d (%s at t0+%v)", i, r.key, r.t.Sub(t0))
		if r.ok {
			assert.Zerof(t, retry, "row %d: an allowed call carries no delay", i)
		} else {
			assert.Equalf(t, r.retry, retry, "row %d (%s at t0+%v)", i, r.key, r.t.Sub(t0))
		}
		checkInvariants(t, l)
	}
}

// checkInvariants verifies the map, the heap and the recency list agree.
func checkInvariants(t *testing.T, l *Limiter) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.LessOrEqual(t, len(l.buckets), l.maxKeys)
	require.Len(t, l.byFull, len(l.buckets))
	for i, b := range l.byFull {
		require.Equal(t, i, b.heapIndex)
		require.Same(t, b, l.buckets[b.key])
		if i > 0 {
			require.False(t, b.fullAt.Before(l.byFull[(i-1)/2].fullAt), "heap order")
		}
	}
	n := 0
	for b := l.lru.next; b != &l.lru; b = b.next {
		require.Same(t, b, b.next.prev)
		require.Same(t, b, l.buckets[b.key])
		n++
	}
	require.Equal(t, len(l.buckets), n)
}

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestTenPerMinute(t *testing.T) {
	l, c := newTest(100)
	var rows []allow
	for range 10 {
		rows = append(rows, allow{t0, "ip", true, 0})
	}
	rows = append(rows,
		allow{t0, "ip", false, 6 * time.Second}, // 11th at t0: refused, one token is 6s away
		allow{at(time.Second), "ip", false, 5 * time.Second},
		allow{at(6*time.Second - 1), "ip", false, 1}, // one nanosecond short
		allow{at(6 * time.Second), "ip", true, 0},    // exactly after the delay
		allow{at(6 * time.Second), "ip", false, 6 * time.Second},
		allow{at(12 * time.Second), "ip", true, 0},
		allow{at(12 * time.Second), "ip", false, 6 * time.Second},
		// A full minute idle refills the whole burst, and no more.
		allow{at(72 * time.Second), "ip", true, 0},
	)
	for range 9 {
		rows = append(rows, allow{at(72 * time.Second), "ip", true, 0})
	}
	rows = append(rows, allow{at(72 * time.Second), "ip", false, 6 * time.Second})
	run(t, l, c, rows)
}

func TestRefusedDelayBounds(t *testing.T) {
	l, c := newTest(100)
	// One fresh bucket per probe: drain it at t0, then ask for the 11th
	// token at an offset inside the 6s refill interval.
	for _, off := range []time.Duration{0, 1, time.Millisecond, 2500 * time.Millisecond, 5999 * time.Millisecond, 6*time.Second - 1} {
		key := fmt.Sprint("k", off)
		c.Set(t0)
		for i := range 10 {
			ok, _ := l.Allow(key)
			require.True(t, ok, "request %d", i+1)
		}
		c.Set(at(off))
		ok, retry := l.Allow(key)
		require.False(t, ok, "offset %v", off)
		assert.Greater(t, retry, time.Duration(0))
		assert.LessOrEqual(t, retry, 6*time.Second)
		assert.InDelta(t, float64(6*time.Second-off), float64(retry), 1, "offset %v", off)
		s := RetryAfterSeconds(retry)
		assert.GreaterOrEqual(t, s, 1)
		assert.LessOrEqual(t, s, 60)

		// Waiting exactly the advertised delay is enough, and not a
		// nanosecond more is needed.
		c.Set(at(off).Add(retry))
		ok, _ = l.Allow(key)
		require.True(t, ok, "after waiting %v from offset %v", retry, off)
	}
}

func TestRefusalConsumesNothing(t *testing.T) {
	l, c := newTest(100)
	for range 10 {
		ok, _ := l.Allow("k")
		require.True(t, ok)
	}
	// At integer token counts the arithmetic is exact: every refusal at t0
	// reports the same delay.
	for i := range 50 {
		ok, retry := l.Allow("k")
		require.False(t, ok)
		require.Equal(t, 6*time.Second, retry, "refusal %d", i)
	}
	// Partway through the interval the bucket holds a fraction of a token;
	// repeated refusals still do not move the deadline.
	c.Set(at(2 * time.Second))
	_, first := l.Allow("k")
	for i := range 50 {
		ok, retry := l.Allow("k")
		require.False(t, ok)
		require.InDelta(t, float64(first), float64(retry), 1, "refusal %d", i) // within 1ns of float rounding
	}
	assert.InDelta(t, float64(4*time.Second), float64(first), 1)
	// And the token arrives on time.
	c.Set(at(6 * time.Second))
	ok, _ := l.Allow("k")
	assert.True(t, ok)
}

func TestKeysAreIndependent(t *testing.T) {
	l, c := newTest(100)
	var rows []allow
	for range 10 {
		rows = append(rows, allow{t0, "a", true, 0})
	}
	rows = append(rows,
		allow{t0, "a", false, 6 * time.Second},
		allow{t0, "b", true, 0}, // a's exhaustion does not touch b
		allow{at(3 * time.Second), "a", false, 3 * time.Second},
	)
	for range 9 {
		rows = append(rows, allow{at(3 * time.Second), "b", true, 0})
	}
	rows = append(rows,
		allow{at(3 * time.Second), "b", false, 3 * time.Second}, // b half a token back after 3s
		allow{at(3 * time.Second), "c", true, 0},
	)
	run(t, l, c, rows)
}

func TestTimeGoingBackwards(t *testing.T) {
	l, c := newTest(100)
	run(t, l, c, []allow{
		{at(time.Minute), "k", true, 0},
		{t0, "k", true, 0}, // earlier than the last event: no refill, no panic
	})
	for range 8 {
		ok, _ := l.Allow("k")
		require.True(t, ok)
	}
	ok, retry := l.Allow("k")
	assert.False(t, ok)
	assert.Greater(t, retry, time.Duration(0))
}

func TestRefund(t *testing.T) {
	l, c := newTest(100)
	for range 10 {
		ok, _ := l.Allow("k")
		require.True(t, ok)
	}
	l.Refund("k")
	checkInvariants(t, l)
	run(t, l, c, []allow{
		{t0, "k", true, 0}, // the refunded token
		{t0, "k", false, 6 * time.Second},
		// A token refilled and then refunded is there exactly, not a
		// rounding error short.
		{at(6 * time.Second), "k", true, 0},
	})
	l.Refund("k")
	run(t, l, c, []allow{
		{at(6 * time.Second), "k", true, 0},
		{at(6 * time.Second), "k", false, 6 * time.Second},
	})

	// Half a token refilled plus a refund is one and a half: one to take,
	// and the next half a token (3s) away.
	c.Set(at(9 * time.Second))
	l.Refund("k")
	ok, _ := l.Allow("k")
	require.True(t, ok)
	ok, retry := l.Allow("k")
	require.False(t, ok)
	assert.InDelta(t, float64(3*time.Second), float64(retry), 1)
	checkInvariants(t, l)
}

func TestRefundNeverExceedsBurst(t *testing.T) {
	l, c := newTest(100)
	ok, _ := l.Allow("k")
	require.True(t, ok)
	for range 5 {
		l.Refund("k")
	}
	var rows []allow
	for range 10 {
		rows = append(rows, allow{t0, "k", true, 0})
	}
	rows = append(rows, allow{t0, "k", false, 6 * time.Second})
	run(t, l, c, rows)
}

func TestRefundWithoutBucket(t *testing.T) {
	l, _ := newTest(100)
	l.Refund("never seen")
	assert.Zero(t, l.Len(), "a refund creates no bucket")

	d := New(0, 0, 0)
	d.Refund("k") // disabled: nothing to do, no panic
	assert.Zero(t, d.Len())
	assert.Panics(t, func() { new(Limiter).Refund("k") })
}

func TestRefundedFullBucketIsIdle(t *testing.T) {
	l, c := newTest(2)
	run(t, l, c, []allow{
		{t0, "a", true, 0},
		{t0, "b", true, 0},
	})
	l.Refund("a") // full again, so the first to go
	run(t, l, c, []allow{{t0, "c", true, 0}})
	l.mu.Lock()
	_, a := l.buckets["a"]
	_, b := l.buckets["b"]
	l.mu.Unlock()
	assert.False(t, a, "the refunded bucket was idle and evicted")
	assert.True(t, b, "the bucket still refilling is kept")
}

func TestConcurrentAllowAndRefund(t *testing.T) {
	l, c := newTest(100)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if ok, _ := l.Allow("k"); ok {
					l.Refund("k")
				}
			}
		}()
	}
	wg.Wait()
	checkInvariants(t, l)
	var rows []allow
	for range 10 {
		rows = append(rows, allow{t0, "k", true, 0})
	}
	rows = append(rows, allow{t0, "k", false, 6 * time.Second})
	run(t, l, c, rows)
}

func TestEvictionPrefersIdleBuckets(t *testing.T) {
	l, c := newTest(2)
	// "drained" loses 5 tokens at t0: full again at t0+30s.
	for range 5 {
		ok, _ := l.Allow("drained")
		require.True(t, ok)
	}
	// "light" loses one token a second later: full again at t0+7s. It is now
	// the most recently used, so plain LRU would evict "drained".
	c.Set(at(time.Second))
	ok, _ := l.Allow("light")
	require.True(t, ok)

	// At t0+8s "light" is idle, "drained" is not. A third key must evict the
	// idle one even though it is the more recently used.
	c.Set(at(8 * time.Second))
	ok, _ = l.Allow("new")
	require.True(t, ok)
	checkInvariants(t, l)
	assert.Equal(t, 2, l.Len())
	l.mu.Lock()
	assert.Contains(t, l.buckets, "drained")
	assert.NotContains(t, l.buckets, "light")
	l.mu.Unlock()

	// "drained" still remembers its debt: 5 + 8s/6s = 6.33 tokens, so six
	// more requests pass and the seventh is refused.
	for i := range 6 {
		ok, _ := l.Allow("drained")
		require.True(t, ok, "request %d", i+1)
	}
	ok, retry := l.Allow("drained")
	assert.False(t, ok)
	assert.InDelta(t, float64(4*time.Second), float64(retry), 1)
}

func TestEvictionEvictsAllIdleThenLRU(t *testing.T) {
	l, c := newTest(3)
	for _, k := range []string{"a", "b", "c"} {
		ok, _ := l.Allow(k)
		require.True(t, ok)
	}
	// A minute later all three are full again; the next insert sweeps them
	// all rather than one per call.
	c.Set(at(time.Minute))
	ok, _ := l.Allow("d")
	require.True(t, ok)
	assert.Equal(t, 1, l.Len())
	checkInvariants(t, l)

	// Nothing idle: "d", "e", "f" are all mid-refill. Touching "d" again
	// (even with a refused call) makes "e" the least recently used.
	for _, k := range []string{"e", "f"} {
		ok, _ := l.Allow(k)
		require.True(t, ok)
	}
	for range 12 {
		l.Allow("d") // 9 more granted, then refused; a refusal still counts as use
	}
	ok, _ = l.Allow("g")
	require.True(t, ok)
	checkInvariants(t, l)
	l.mu.Lock()
	assert.NotContains(t, l.buckets, "e", "least recently used goes when nothing is idle")
	assert.Contains(t, l.buckets, "d")
	assert.Contains(t, l.buckets, "f")
	assert.Contains(t, l.buckets, "g")
	l.mu.Unlock()
}

func TestEvictionBoundsMemory(t *testing.T) {
	const maxKeys = 50
	l, c := newTest(maxKeys)
	for i := range 2000 {
		// Move time irregularly so some buckets become idle and some do not.
		c.Advance(time.Duration(i%7) * 700 * time.Millisecond)
		ok, _ := l.Allow(fmt.Sprintf("k%d", i%(3*maxKeys)))
		require.True(t, ok, "a new or refilled key is always allowed here")
		if i%(maxKeys/5) == 0 {
			checkInvariants(t, l)
		}
		require.LessOrEqual(t, l.Len(), maxKeys)
	}
	checkInvariants(t, l)
}

func TestMaxKeysOne(t *testing.T) {
	l, c := newTest(1)
	run(t, l, c, []allow{
		{t0, "a", true, 0},
		{t0, "b", true, 0}, // evicts a (not idle, but the only candidate)
		{t0, "a", true, 0}, // a starts over: this is the documented cost of the bound
	})
	assert.Equal(t, 1, l.Len())
}

func TestDisabled(t *testing.T) {
	for _, every := range []time.Duration{0, -time.Second} {
		l := New(every, 0, 0) // burst and maxKeys are ignored when disabled
		l.Now = func() time.Time { return t0 }
		for i := range 10000 {
			ok, retry := l.Allow(fmt.Sprint(i % 3))
			require.True(t, ok)
			require.Zero(t, retry)
		}
		assert.Zero(t, l.Len())
	}
}

func TestNewRejectsNonsense(t *testing.T) {
	assert.Panics(t, func() { New(time.Second, 0, 10) })
	assert.Panics(t, func() { New(time.Second, 10, 0) })
	assert.Panics(t, func() { var l Limiter; l.Allow("k") }, "zero value must not silently allow")
}

func TestDefaultClock(t *testing.T) {
	l := New(time.Hour, 1, 10)
	ok, _ := l.Allow("k")
	assert.True(t, ok)
	ok, retry := l.Allow("k")
	assert.False(t, ok)
	assert.Greater(t, retry, 59*time.Minute)
	assert.LessOrEqual(t, retry, time.Hour)
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{-time.Second, 1},
		{0, 1},
		{1, 1},
		{999 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + 1, 2},
		{5*time.Second + 500*time.Millisecond, 6},
		{6 * time.Second, 6},
		{time.Minute, 60},
		{time.Duration(math.MaxInt64), math.MaxInt32},
	} {
		assert.Equal(t, tc.want, RetryAfterSeconds(tc.d), "%v", tc.d)
	}
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"192.0.2.1:1234", "192.0.2.1"},
		{"192.0.2.1:5678", "192.0.2.1"}, // port never matters
		{"192.0.2.2:1234", "192.0.2.2"}, // v4 is per address
		{"192.0.2.1", "192.0.2.1"},      // bare address
		{"[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", "2001:db8:1:2::/64"}, // same /64
		{"[2001:db8:1:3::1]:443", "2001:db8:1:3::/64"},                // next /64
		{"[2001:db8:1:2::1]", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::7", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"[::1]:80", "::/64"},
		{"[::ffff:1.2.3.4]:80", "1.2.3.4"},
		{"::ffff:1.2.3.4", "1.2.3.4"},
		{"[::ffff:1.2.3.4]:80", ClientKey("1.2.3.4:9")},
		{"", ""},
		{"garbage", "garbage"},
		{"garbage:80", "garbage:80"},
		{"[not-an-ip]:80", "[not-an-ip]:80"},
		{"1.2.3.4.5:80", "1.2.3.4.5:80"},
		{"@", "@"},
	} {
		assert.Equal(t, tc.want, ClientKey(tc.in), "ClientKey(%q)", tc.in)
	}
	assert.Equal(t, ClientKey("[2001:db8::1]:1"), ClientKey("[2001:db8::dead:beef]:2"), "rotation inside a /64 shares a bucket")
	assert.NotEqual(t, ClientKey("[2001:db8::1]:1"), ClientKey("[2001:db8:0:1::1]:1"), "different /64s do not")
}

// TestConcurrentOneKey hammers a single bucket from many goroutines at a
// frozen clock: exactly burst calls succeed, and because each refusal is
// serialized with its cancellation, the concurrent refusals leave the delay
// at exactly one interval. Several rounds, because an interleaving bug only
// shows up some of the time. Run with -race.
func TestConcurrentOneKey(t *testing.T) {
	l, _ := newTest(100)
	const rounds, goroutines, calls = 10, 32, 300
	for round := range rounds {
		key := fmt.Sprint("shared", round)
		var granted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range goroutines {
			wg.Go(func() {
				<-start
				for range calls {
					ok, retry := l.Allow(key)
					if ok {
						granted.Add(1)
					} else if retry <= 0 || retry > 6*time.Second {
						t.Errorf("retryAfter %v out of (0, 6s]", retry)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, int64(10), granted.Load(), "round %d", round)
		ok, retry := l.Allow(key)
		require.False(t, ok)
		require.Equal(t, 6*time.Second, retry, "round %d: %d concurrent refusals consumed nothing", round, goroutines*calls-10)
	}
	checkInvariants(t, l)
}

// TestConcurrentManyKeys mixes inserts, evictions and a moving clock under
// -race.
func TestConcurrentManyKeys(t *testing.T) {
	l, c := newTest(32)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 500 {
				if i%50 == 0 {
					c.Advance(time.Second)
				}
				l.Allow(fmt.Sprintf("k%d", (g*7+i)%100))
			}
		})
	}
	wg.Wait()
	checkInvariants(t, l)
}

// BenchmarkAllow measures Allow from parallel goroutines over many keys on the
// real clock, without eviction ("keys") and with the map at capacity so
// most calls insert and evict ("churn").
func BenchmarkAllow(b *testing.B) {
	const nKeys = 1 << 14
	keys := make([]string, nKeys)
	for i := range keys {
		keys[i] = ClientKey(fmt.Sprintf("10.%d.%d.%d:443", i>>16&255, i>>8&255, i&255))
	}
	for _, bc := range []struct {
		name    string
		maxKeys int
	}{
		{"keys", 2 * nKeys},
		{"churn", nKeys / 16},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := New(6*time.Second, 10, bc.maxKeys)
			var seed atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := seed.Add(0x9e3779b97f4a7c15)
				for pb.Next() {
					i = i*6364136223846793005 + 1442695040888963407
					l.Allow(keys[(i>>33)%nKeys])
				}
			})
		})
	}
}

func TestExceeded(t *testing.T) {
	e := Exceeded("too many requests", 1500*time.Millisecond)
	assert.Equal(t, errs.RateLimited, e.Kind)
	assert.Equal(t, "rate_limited", errs.Code(e))
	assert.Equal(t, "too many requests; retry after 2 seconds", errs.Public(e))
	assert.Equal(t, 1500*time.Millisecond, e.Retry)
}
