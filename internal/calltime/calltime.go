// Package calltime keeps a gateway call's clock apart from its provider's:
// how long the call has run, and how much of that its provider attempts
// took, so that svc's own time (the overhead, x-svc-overhead-ms) is the one
// minus the other. The HTTP layer starts a Clock per gateway request and puts
// it in the context; the providers router marks each attempt on it.
package calltime

import (
	"context"
	"sync/atomic"
	"time"
)

// Clock is one call's clock. Its methods are safe for concurrent use; a nil
// Clock does nothing.
type Clock struct {
	start time.Time
	// provider is the time finished attempts took, in nanoseconds;
	// attempt is when the attempt under way began (Unix nanoseconds), or 0.
	provider atomic.Int64
	attempt  atomic.Int64
}

// Start returns a clock started at now.
func Start(now time.Time) *Clock { return &Clock{start: now} }

// Started is when the call began.
func (c *Clock) Started() time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.start
}

// AttemptBegan marks a provider attempt begun at now.
func (c *Clock) AttemptBegan(now time.Time) {
	if c != nil {
		c.attempt.Store(now.UnixNano())
	}
}

// AttemptEnded marks the attempt under way ended at now.
func (c *Clock) AttemptEnded(now time.Time) {
	if c == nil {
		return
	}
	if began := c.attempt.Swap(0); began != 0 {
		c.provider.Add(max(0, now.UnixNano()-began))
	}
}

// Provider is the time provider attempts took until now, the one under
// way included.
func (c *Clock) Provider(now time.Time) time.Duration {
	if c == nil {
		return 0
	}
	d := c.provider.Load()
	if began := c.attempt.Load(); began != 0 {
		d += max(0, now.UnixNano()-began)
	}
	return time.Duration(d)
}

// Overhead is svc's own time until now: the time since the call began
// minus the provider's.
func (c *Clock) Overhead(now time.Time) time.Duration {
	if c == nil {
		return 0
	}
	return max(0, now.Sub(c.start)-c.Provider(now))
}

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c *Clock) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// From is the clock ctx carries, or nil.
func From(ctx context.Context) *Clock {
	c, _ := ctx.Value(key{}).(*Clock)
	return c
}
