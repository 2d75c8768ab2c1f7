// Package ratelimit holds keyed token buckets: one per client, bounded in
// memory, with the delay a refused caller should wait.
//
// It backs the API's limiters (SECURITY.md section 4): the standard limiter on
// /api/v1/* keyed by credential id or client IP, and the per-IP bucket of 10
// per minute shared by signup, invite-create and invite-accept. Each key gets
// its own golang.org/x/time/rate token bucket. A refusal is decided and its
// Retry-After computed in one step (ReserveN, DelayFrom, CancelAt), so a
// refused request never consumes a token: a client hammering a closed bucket
// does not push its own reopening further out. Refund gives a granted token
// back, for the per-account sign-in buckets that charge only wrong passwords.
//
// Memory is bounded by maxKeys because keys come from the network: an
// attacker with many addresses must not be able to grow the map without
// limit. Buckets that have refilled completely are evicted first, since
// forgetting a full bucket is indistinguishable from keeping it.
//
// Several replicas on one PostgreSQL database draw instead on Shared
// buckets the database keeps (shared.go), so that a limit holds on a
// caller's total; the callers see either through Keyed.
package ratelimit

import (
	"container/heap"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/svc-gateway/svc/internal/errs"
)

// Limiter is a set of token buckets keyed by string. Safe for concurrent use.
//
// A single mutex guards the whole decision for a key (lookup, reserve,
// cancel, bookkeeping). That is deliberate: if two refusals on one bucket
// interleaved between ReserveN and CancelAt, x/time/rate would restore only
// one of the two borrowed tokens, and refusals would start consuming tokens.
// The zero value is not ready for use; create Limiters with New.
type Limiter struct {
	// Now is the clock, so tests can drive time explicitly instead of
	// sleeping. A nil Now means time.Now. Set it before the first call to
	// Allow and do not change it afterwards; it is read without
	// synchronization and called with the limiter's lock held, so it must be
	// cheap and must not call back into the Limiter.
	Now func() time.Time

	disabled bool
	every    time.Duration
	limit    rate.Limit
	burst    int
	maxKeys  int

	mu      sync.Mutex
	buckets map[string]*bucket
	lru     bucket     // sentinel of the recency list: lru.next is the most recently used
	byFull  bucketHeap // min-heap on fullAt: the root is the bucket that refills first
	created bool       // set by New, so a zero Limiter fails loudly instead of silently
}

// bucket is one key's token bucket plus the bookkeeping that lets the
// Limiter find idle and least-recently-used buckets without scanning.
type bucket struct {
	key string
	lim *rate.Limiter
	// fullAt is when the bucket will hold burst tokens again if left alone.
	// Only a granted token changes it; a refusal is cancelled and leaves the
	// bucket as it was.
	fullAt     time.Time
	heapIndex  int
	prev, next *bucket
}

// New returns a limiter whose buckets refill at `every` per token with
// capacity `burst` (10 per minute = New(6*time.Second, 10)). maxKeys bounds
// memory: past it, idle buckets (full again, so forgetting them changes
// nothing) are evicted, and if none is idle the least recently used is
// dropped.
//
// every <= 0 returns a disabled limiter whose Allow always succeeds, so that
// the operator can switch the standard limiter off without the caller
// needing a second code path; burst and maxKeys are then ignored. For an
// enabled limiter, New panics if burst < 1 (every request would be refused
// forever) or maxKeys < 1 (no bucket could be kept): both are configuration
// bugs that should stop the service at startup rather than surface as
// mysterious 429s.
func New(every time.Duration, burst int, maxKeys int) *Limiter {
	l := &Limiter{created: true}
	if every <= 0 {
		l.disabled = true
		return l
	}
	if burst < 1 {
		panic(fmt.Sprintf("ratelimit: burst must be at least 1, got %d", burst))
	}
	if maxKeys < 1 {
		panic(fmt.Sprintf("ratelimit: maxKeys must be at least 1, got %d", maxKeys))
	}
	l.every = every
	l.limit = rate.Every(every)
	l.burst = burst
	l.maxKeys = maxKeys
	l.buckets = make(map[string]*bucket)
	l.lru.next, l.lru.prev = &l.lru, &l.lru
	return l
}

// Allow takes one token for key. When refused it returns false and how long
// until a token is available (always > 0), computed without consuming
// anything (rate.Limiter ReserveN + DelayFrom + CancelAt, as SECURITY.md
// explains), so the caller can answer 429 with an honest Retry-After. When
// allowed, retryAfter is 0. A disabled limiter (every <= 0) allows
// everything.
//
// Keys share one namespace: a Limiter keyed both by credential id and by
// client IP should prefix them (for example "cred:" and "ip:") so that a
// credential id can never collide with an address.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	if !l.created {
		panic("ratelimit: Limiter used without New")
	}
	if l.disabled {
		return true, 0
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	// Read the clock under the lock so each bucket sees non-decreasing times;
	// x/time/rate would otherwise re-credit the interval between two
	// out-of-order timestamps.
	now := l.now()

	b := l.buckets[key]
	if b == nil {
		b = l.insert(key, now)
	} else {
		l.touch(b)
	}

	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		// Give the borrowed token back: a refusal must cost nothing.
		r.CancelAt(now)
		return false, d
	}
	b.fullAt = l.fullAt(now, b.lim.TokensAt(now))
	heap.Fix(&l.byFull, b.heapIndex)
	return true, 0
}

// Refund gives back one token that Allow granted for key, to a caller that
// turns out afterwards not to owe it: sign-in takes a token before checking
// the password, so that parallel guesses cannot outnumber the tokens left,
// and refunds it when the password was right. A bucket never holds more than
// burst. A bucket evicted since then was full or the least recently used, so
// there is nothing to refund into; a disabled limiter has nothing to do.
func (l *Limiter) Refund(key string) {
	if !l.created {
		panic("ratelimit: Limiter used without New")
	}
	if l.disabled {
		return
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[key]
	if b == nil {
		return
	}
	tokens := min(b.lim.TokensAt(now)+1, float64(l.burst))
	b.lim = l.holding(now, tokens)
	b.fullAt = l.fullAt(now, tokens)
	heap.Fix(&l.byFull, b.heapIndex)
}

// Len reports how many buckets the limiter currently holds, for metrics and
// tests: it never exceeds maxKeys. A disabled limiter holds none.
func (l *Limiter) Len() int {
	if l.disabled {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// Exceeded is the error of a refused draw: what was too many, and how long
// to wait (in the message, rounded as the Retry-After header is, and in
// Retry).
func Exceeded(what string, wait time.Duration) *errs.Error {
	e := errs.E(errs.RateLimited, "rate_limited", "%s; retry after %d seconds", what, RetryAfterSeconds(wait))
	e.Retry = wait
	return e
}

// RetryAfterSeconds rounds a delay up to whole seconds, at least 1 — the
// value of a Retry-After header (RFC 9110 delay-seconds). Rounding up keeps a
// client that obeys the header from coming back a fraction of a second too
// early and being refused again; the floor of 1 is there because 0 would
// invite an immediate retry.
func RetryAfterSeconds(d time.Duration) int {
	if d <= time.Second {
		return 1
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	if s > math.MaxInt32 {
		// Far beyond any sane window; keep the header value small enough
		// for every client to parse.
		return math.MaxInt32
	}
	return int(s)
}

// ClientKey turns an http.Request's RemoteAddr ("ip:port", "[v6]:port", or
// garbage) into a bucket key: the IPv4 address, or the IPv6 /64 prefix (so
// rotating addresses inside one /64 shares a bucket), IPv4-mapped IPv6
// unmapped first. X-Forwarded-For is not read here: httpapi trusts it only
// from the proxies SVC_TRUSTED_PROXIES names, because any other client can
// set it to mint a fresh bucket per request.
// Unparsable input returns the raw string rather than panicking, so odd
// transports still get a (shared) bucket instead of bypassing the limiter.
//
// A bare address without a port is accepted too. IPv6 zones are dropped.
// IPv4 keys look like "192.0.2.1" and IPv6 keys like "2001:db8:1:2::/64", so
// the two families cannot collide.
func ClientKey(remoteAddr string) string {
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return remoteAddr
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is4() {
		return addr.String()
	}
	p, err := addr.Prefix(64)
	if err != nil {
		return remoteAddr
	}
	return p.String()
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// fullAt returns when a bucket holding tokens at now will be full again. It
// rounds up so that at the returned instant the bucket really is full.
func (l *Limiter) fullAt(now time.Time, tokens float64) time.Time {
	missing := float64(l.burst) - tokens
	if missing <= 0 {
		return now
	}
	ns := math.Ceil(missing * float64(l.every))
	if ns >= float64(math.MaxInt64) {
		return now.Add(time.Duration(math.MaxInt64))
	}
	return now.Add(time.Duration(ns))
}

// holding returns a bucket with tokens (at most burst) at now. x/time/rate
// cannot add a token to a limiter, and cancelling a reservation restores
// nothing once it has taken effect, so a refund builds the bucket anew:
// emptied at the instant from which refilling yields tokens by now, rounded
// so that the refund never comes up short.
func (l *Limiter) holding(now time.Time, tokens float64) *rate.Limiter {
	lim := rate.NewLimiter(l.limit, l.burst)
	if tokens < float64(l.burst) {
		emptied := now.Add(-time.Duration(math.Ceil(tokens * float64(l.every))))
		lim.ReserveN(emptied, l.burst)
	}
	return lim
}

// insert creates a full bucket for key, making room first if the limiter is
// at capacity. Must be called with l.mu held.
func (l *Limiter) insert(key string, now time.Time) *bucket {
	if len(l.buckets) >= l.maxKeys {
		// Idle buckets first: they are full, so dropping them is invisible
		// to their clients. The heap root refills first, so stop at the
		// first one that is still refilling.
		for len(l.byFull) > 0 && !l.byFull[0].fullAt.After(now) {
			l.remove(l.byFull[0])
		}
		// Nothing idle: drop the least recently used bucket.
		if len(l.buckets) >= l.maxKeys {
			l.remove(l.lru.prev)
		}
	}
	b := &bucket{
		key:    key,
		lim:    rate.NewLimiter(l.limit, l.burst),
		fullAt: now,
	}
	l.buckets[key] = b
	heap.Push(&l.byFull, b)
	b.prev, b.next = &l.lru, l.lru.next
	b.prev.next, b.next.prev = b, b
	return b
}

// touch marks b as the most recently used bucket. Must be called with l.mu
// held.
func (l *Limiter) touch(b *bucket) {
	if l.lru.next == b {
		return
	}
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = &l.lru, l.lru.next
	b.prev.next, b.next.prev = b, b
}

// remove forgets b entirely. Must be called with l.mu held.
func (l *Limiter) remove(b *bucket) {
	delete(l.buckets, b.key)
	heap.Remove(&l.byFull, b.heapIndex)
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
}

// bucketHeap orders buckets by the time they are full again, so idle ones
// are found without scanning the whole map.
type bucketHeap []*bucket

func (h bucketHeap) Len() int           { return len(h) }
func (h bucketHeap) Less(i, j int) bool { return h[i].fullAt.Before(h[j].fullAt) }
func (h bucketHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}

func (h *bucketHeap) Push(x any) {
	b := x.(*bucket)
	b.heapIndex = len(*h)
	*h = append(*h, b)
}

func (h *bucketHeap) Pop() any {
	old := *h
	n := len(old)
	b := old[n-1]
	old[n-1] = nil
	b.heapIndex = -1
	*h = old[:n-1]
	return b
}
