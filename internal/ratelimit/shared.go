package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/errs"
)

// Keyed is a set of keyed token buckets as its callers draw on them: in
// memory for one process (Local), or in the database every replica shares
// (Shared), so that a caller's limit holds on its total across replicas.
type Keyed interface {
	// Allow takes one token of key's bucket. Refused, ok is false and
	// retryAfter how long until a token is there; a refusal costs nothing.
	// err is a refusal too, with its own words, when the bucket could not
	// be read and the limiter fails closed.
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
	// Refund gives back a token Allow granted, to a caller that turns out
	// not to owe it.
	Refund(ctx context.Context, key string)
}

// Local is l as a Keyed, for one process: it never fails, and takes no
// more than l does.
func Local(l *Limiter) Keyed { return local{l} }

type local struct{ l *Limiter }

func (x local) Allow(_ context.Context, key string) (bool, time.Duration, error) {
	ok, wait := x.l.Allow(key)
	return ok, wait, nil
}

func (x local) Refund(_ context.Context, key string) { x.l.Refund(key) }

// Rate is a bucket's shape: a token every Every, at most Burst held.
type Rate struct {
	Every time.Duration
	Burst int64
}

// Buckets keeps token buckets where every replica sees them: the database.
// A bucket is named by its limiter and key; each draw is decided in one
// atomic step, so that draws from several replicas at once never take more
// than the bucket holds.
type Buckets interface {
	// TakeTokens draws cost tokens (at most r.Burst) from the bucket at now:
	// granted, or refused with how long until cost tokens are there. A
	// refusal takes nothing.
	TakeTokens(ctx context.Context, limiter, key string, r Rate, cost int64, now time.Time) (ok bool, wait time.Duration, err error)
	// ReturnTokens gives back cost tokens TakeTokens granted; a bucket never
	// holds more than r.Burst.
	ReturnTokens(ctx context.Context, limiter, key string, r Rate, cost int64) error
}

// OnError is what a shared limiter does with a draw the database did not
// decide.
type OnError int

const (
	// FailOpen lets the request through, the error logged: for a limit
	// whose loss for a while costs less than refusing every caller (the
	// standard limiter, in front of a gateway that has its own limits).
	FailOpen OnError = iota
	// FailClosed refuses the request: for the limits that stand between a
	// guesser and a password, which must not open when the database does
	// not answer.
	FailClosed
)

// DecideTimeout bounds the wait for the database's decision, the free
// connection it needs included: past it the draw counts as failed, and is
// let through or refused as the limiter fails. A request is not held up
// for the statement timeout by a database that hangs.
const DecideTimeout = 2 * time.Second

// ClosedRetry is the Retry-After of a draw refused because the database
// did not decide it.
const ClosedRetry = 5 * time.Second

// maxSpan bounds a bucket's time to refill from empty, so that a full_at
// in nanoseconds never overflows.
const maxSpan = 100 * 365 * 24 * time.Hour

// Shared is a limiter whose buckets live in Buckets, shared by every
// replica on the database: the limit holds on a key's total, whichever
// replicas its requests reach. Each decision is one statement, one round
// trip. The clocks of the replicas should agree (NTP): a bucket's state is
// an instant, and a replica whose clock runs ahead by d finds up to
// d's worth of tokens early, never more. Safe for concurrent use.
type Shared struct {
	// Now is the clock; nil is time.Now. Set it before the first draw.
	Now func() time.Time

	buckets Buckets
	name    string
	rate    Rate
	onError OnError
	log     hclog.Logger

	mu       sync.Mutex
	lastLog  time.Time
	unlogged int
}

// NewShared returns the limiter name (its buckets' namespace in Buckets)
// with the shape of New: a token every `every`, at most burst. every <= 0
// is a limiter that allows everything, as New's. onError says what a draw
// the database did not decide answers; its errors go to log, at most one
// line every 10 seconds. It panics for a burst below 1 or a bucket that
// takes over a century to refill: configuration bugs.
func NewShared(b Buckets, name string, every time.Duration, burst int, onError OnError, log hclog.Logger) *Shared {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	l := &Shared{buckets: b, name: name, onError: onError, log: log}
	if every <= 0 {
		return l
	}
	if burst < 1 {
		panic(fmt.Sprintf("ratelimit: burst must be at least 1, got %d", burst))
	}
	if time.Duration(burst) > maxSpan/every {
		panic(fmt.Sprintf("ratelimit: a bucket of %d tokens, one every %s, takes too long to fill", burst, every))
	}
	l.rate = Rate{Every: every, Burst: int64(burst)}
	return l
}

// Allow takes one token of key's bucket; see Keyed.
func (l *Shared) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	return l.Take(ctx, key, 1)
}

// Take draws cost tokens (1 to the burst) of key's bucket at once: the
// primitive Allow is made of, for limits whose draws differ in size.
func (l *Shared) Take(ctx context.Context, key string, cost int64) (bool, time.Duration, error) {
	if l.rate.Every == 0 {
		return true, 0, nil
	}
	if cost < 1 || cost > l.rate.Burst {
		return false, 0, errs.E(errs.Invalid, "", "a draw of %d tokens from a bucket of %d", cost, l.rate.Burst)
	}
	ctx, cancel := context.WithTimeout(ctx, DecideTimeout)
	ok, wait, err := l.buckets.TakeTokens(ctx, l.name, key, l.rate, cost, l.now())
	cancel()
	if err == nil {
		return ok, wait, nil
	}
	l.logError("deciding a rate limit failed", err)
	if l.onError == FailOpen {
		return true, 0, nil
	}
	e := errs.E(errs.RateLimited, "rate_limited", "attempts cannot be counted right now; retry after %d seconds", RetryAfterSeconds(ClosedRetry))
	e.Retry, e.Err = ClosedRetry, err
	return false, ClosedRetry, e
}

// Refund gives back one token Allow granted for key; see Keyed. It is
// made even when the caller has gone meanwhile (an owner's sign-in costs
// nothing, whether or not its answer reached them); a refund the database
// did not take is logged.
func (l *Shared) Refund(ctx context.Context, key string) {
	if l.rate.Every == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DecideTimeout)
	defer cancel()
	if err := l.buckets.ReturnTokens(ctx, l.name, key, l.rate, 1); err != nil {
		l.logError("returning a rate limit's token failed", err)
	}
}

// logError logs err, or counts it when a line went out less than 10
// seconds ago: a database that is down must not flood the log with a line
// per request.
func (l *Shared) logError(msg string, err error) {
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.lastLog) < 10*time.Second {
		l.unlogged++
		l.mu.Unlock()
		return
	}
	n := l.unlogged
	l.lastLog, l.unlogged = now, 0
	l.mu.Unlock()
	open := l.onError == FailOpen
	l.log.Error(msg, "limiter", l.name, "failOpen", open, "error", err, "alsoFailedSinceLastLine", n)
}

func (l *Shared) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
