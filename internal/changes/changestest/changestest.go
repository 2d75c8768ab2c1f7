// Package changestest is a changes.Feed in memory for the tests of the
// packages that follow other replicas, without PostgreSQL.
package changestest

import (
	"context"
	"sync"

	"github.com/svc-gateway/svc/internal/changes"
)

// Notice is one change announced through a Feed, with how its context
// stood when it was sent.
type Notice struct {
	Topic, Payload string
	// Err is the context's error when Notify was called: nil unless the
	// notice would have been cancelled.
	Err error
	// Deadline says whether the context was bounded.
	Deadline bool
}

// Feed is a changes.Feed that records what is announced and delivers what
// the test publishes, as if another replica announced it.
type Feed struct {
	mu      sync.Mutex
	subs    map[string][]func(string)
	notices []Notice
	fail    error
}

var _ changes.Feed = (*Feed)(nil)

// New returns an empty feed.
func New() *Feed { return &Feed{subs: map[string][]func(string){}} }

// Notify implements changes.Feed: it records the notice, and fails with
// the error set by Fail.
func (f *Feed) Notify(ctx context.Context, topic, payload string) error {
	_, bounded := ctx.Deadline()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notices = append(f.notices, Notice{Topic: topic, Payload: payload, Err: ctx.Err(), Deadline: bounded})
	return f.fail
}

// Subscribe implements changes.Feed.
func (f *Feed) Subscribe(topic string, fn func(string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[topic] = append(f.subs[topic], fn)
}

// Fail makes every later Notify fail with err (nil: succeed).
func (f *Feed) Fail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

// Notices returns what was announced so far.
func (f *Feed) Notices() []Notice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Notice(nil), f.notices...)
}

// Publish delivers payload on topic to its subscribers, as a notice from
// another replica; changes.Everything as on a reconnect.
func (f *Feed) Publish(topic, payload string) {
	f.mu.Lock()
	fns := append([]func(string){}, f.subs[topic]...)
	f.mu.Unlock()
	for _, fn := range fns {
		fn(payload)
	}
}
