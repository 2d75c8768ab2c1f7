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
	mu     sync.Mutex
	t      time.Time
	timers []*timer
}

// timer is an AfterFunc waiting for the clock to reach at.
type timer struct {
	at time.Time
	f  func()
}

// New returns a clock that reads t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t, and fires the timers it reached.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.fire()
}

// Advance moves the clock d forward (backward, when d is negative), fires
// the timers it reached, and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	c.t = c.t.Add(d)
	t := c.t
	c.fire()
	return t
}

// fire unlocks c and calls each timer the clock reached, in its own
// goroutine as time.AfterFunc does.
func (c *Clock) fire() {
	var due []func()
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if c.t.Before(tm.at) {
			kept = append(kept, tm)
		} else {
			due = append(due, tm.f)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// AfterFunc calls f, in its own goroutine, once the clock is moved d past
// now; stop cancels it and says whether it had not fired yet: the
// time.AfterFunc of a package that takes its timers.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	tm := &timer{f: f}
	c.mu.Lock()
	tm.at = c.t.Add(d)
	c.timers = append(c.timers, tm)
	c.mu.Unlock()
	if d <= 0 {
		c.Advance(0)
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.timers {
			if x == tm {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				return true
			}
		}
		return false
	}
}

// Timers is the number of timers waiting: a test waits for the code under
// test to set one before moving the clock.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
