// Package fakeclock is the settable clock of tests. Its Now is the
// `now func() time.Time` every package that reads the time takes, so a test
// moves time forward instead of waiting for it. It is safe for concurrent
// use: a queue's workers and a test's receiver may read it while the test
// sets it.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a time that changes only when told to.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock that reads t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock d forward (backward, when d is negative) and
// returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}
