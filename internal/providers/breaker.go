package providers

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-gateway/svc/internal/metrics"
)

// health is one provider's circuit breaker, rate limit and counts, shared
// by every call (and carried across a reload that keeps the provider).
// Counts are atomics; the breaker takes a short lock, and only when it has
// something to change.
type health struct {
	attempts, failures atomic.Int64
	// troubled is set while anything below the lock is not at rest (a
	// failure counted, the breaker not closed, a rate limit): a provider
	// that keeps answering never takes the lock.
	troubled atomic.Bool
	// counters are the provider's attempt metrics, once it made one.
	counters atomic.Pointer[metrics.ProviderCounters]

	mu               sync.Mutex
	cfg              BreakerConfig
	consecutive      int
	state            string // BreakerClosed, BreakerOpen or BreakerHalfOpen ("" is closed)
	openUntil        time.Time
	probing          bool // a half-open probe is in flight
	rateLimitedUntil time.Time
	lastError        string
	lastErrorAt      time.Time
}

func (h *health) configure(cfg BreakerConfig) {
	h.mu.Lock()
	h.cfg = cfg
	if cfg.Failures <= 0 && h.state != "" && h.state != BreakerClosed {
		h.state, h.probing, h.consecutive = BreakerClosed, false, 0
	}
	h.mu.Unlock()
}

// admit says whether a call may try the provider now; when not, why, and
// for a rate limit how long is left. A half-open breaker admits one probe
// at a time: probe is then true, and the caller must report the attempt's
// outcome with done. A rate limit keeps out only a call that has another
// provider to go to (limits): a provider's only call asks it, as without a
// router.
func (h *health) admit(clock func() time.Time, limits bool) (ok, probe bool, reason string, limitedFor time.Duration) {
	if !h.troubled.Load() {
		return true, false, "", 0 // without reading the clock
	}
	now := clock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if limits && now.Before(h.rateLimitedUntil) {
		return false, false, h.rateLimitedReason(), h.rateLimitedUntil.Sub(now)
	}
	switch h.state {
	case BreakerOpen:
		if now.Before(h.openUntil) {
			return false, false, h.openReason(), 0
		}
		h.state = BreakerHalfOpen
		fallthrough
	case BreakerHalfOpen:
		if h.probing {
			return false, false, "circuit breaker half open: a probe is in flight", 0
		}
		h.probing = true
		return true, true, "", 0
	}
	return true, false, "", 0
}

// outAfter says, changing nothing, whether the provider will still be out
// of rotation once wait has passed (its breaker open, or for a call with
// another provider to go to, its rate limit), and why: a call does not
// wait before an attempt admit would refuse. A half-open breaker is not
// out: whether its probe is free once the wait is over cannot be known now.
func (h *health) outAfter(clock func() time.Time, limits bool, wait time.Duration) (out bool, reason string, limitedFor time.Duration) {
	if !h.troubled.Load() {
		return false, "", 0
	}
	now := clock()
	at := now.Add(wait)
	h.mu.Lock()
	defer h.mu.Unlock()
	if limits && at.Before(h.rateLimitedUntil) {
		return true, h.rateLimitedReason(), h.rateLimitedUntil.Sub(now)
	}
	if h.state == BreakerOpen && at.Before(h.openUntil) {
		return true, h.openReason(), 0
	}
	return false, "", 0
}

// rateLimitedReason and openReason tell why a call skips the provider.
// Called with mu held.
func (h *health) rateLimitedReason() string {
	return "rate limited until " + h.rateLimitedUntil.UTC().Format(time.RFC3339)
}

func (h *health) openReason() string {
	return "circuit breaker open until " + h.openUntil.UTC().Format(time.RFC3339)
}

// Attempt results as the breaker counts them.
const (
	resultOK      = iota // the provider answered (or refused the caller's request)
	resultFailure        // the provider failed
	resultNeutral        // the attempt says nothing of the provider (the client left)
)

// done records an attempt's result. A 429's Retry-After marks the provider
// rate limited until then, for every call.
func (h *health) done(now time.Time, probe bool, result int, errText string, rateLimitedFor time.Duration) {
	h.attempts.Add(1)
	if result == resultOK && !probe && !h.troubled.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if probe {
		h.probing = false
	}
	switch result {
	case resultOK:
		h.consecutive = 0
		if !now.Before(h.rateLimitedUntil) {
			h.rateLimitedUntil = time.Time{}
		}
		if h.state == BreakerHalfOpen {
			h.state = BreakerClosed
		}
	case resultFailure:
		h.failures.Add(1)
		h.consecutive++
		h.lastError, h.lastErrorAt = errText, now
		if rateLimitedFor > 0 {
			h.rateLimitedUntil = now.Add(rateLimitedFor)
		}
		if h.cfg.Failures > 0 && (h.state == BreakerHalfOpen || h.consecutive >= h.cfg.Failures) {
			h.state, h.openUntil = BreakerOpen, now.Add(h.cfg.Cooldown)
		}
	}
	h.settle()
}

// settle sets troubled from the state under the lock: whether admit and
// done must look at it. Called with mu held.
func (h *health) settle() {
	h.troubled.Store(h.consecutive > 0 || h.probing || (h.state != "" && h.state != BreakerClosed) ||
		!h.rateLimitedUntil.IsZero())
}

// release frees an admitted probe whose attempt was not made (its
// instance was closed by a reload, or serves no embeddings); nothing is
// counted.
func (h *health) release(probe bool) {
	if !probe {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.probing = false
	h.settle()
}

func (h *health) status(now time.Time) (BreakerStatus, *time.Time, string, *time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := BreakerStatus{State: BreakerClosed, ConsecutiveFailures: h.consecutive, Failures: h.cfg.Failures,
		CooldownMS: h.cfg.Cooldown.Milliseconds()}
	switch {
	case h.state == BreakerOpen && now.Before(h.openUntil):
		b.State, b.OpenUntil = BreakerOpen, timeRef(h.openUntil)
	case h.state == BreakerOpen || h.state == BreakerHalfOpen:
		b.State = BreakerHalfOpen
	}
	var limited, lastAt *time.Time
	if now.Before(h.rateLimitedUntil) {
		limited = timeRef(h.rateLimitedUntil)
	}
	if !h.lastErrorAt.IsZero() {
		lastAt = timeRef(h.lastErrorAt)
	}
	return b, limited, h.lastError, lastAt
}

func timeRef(t time.Time) *time.Time {
	u := t.UTC()
	return &u
}
