package ledger

import (
	"sync"
	"sync/atomic"
)

// Feed hands each run, as the Recorder journals it, to the live streams of
// its tenant (GET /api/v1/runs/stream). Publishing never waits: each
// subscriber has a bounded buffer, and one whose buffer is full is dropped
// (its Done closes), so a slow reader cannot hold up the gateway; it
// reconnects and reloads the list. With nobody subscribed, Publish is one
// atomic load.
type Feed struct {
	subscribers atomic.Int64 // of every tenant: Publish returns at once at 0

	mu     sync.RWMutex
	byTen  map[string]map[*Subscription]struct{}
	closed bool
}

// SubscriptionBuffer is how many runs a subscriber may fall behind by
// before it is dropped.
const SubscriptionBuffer = 64

// NewFeed returns a feed with no subscribers.
func NewFeed() *Feed {
	return &Feed{byTen: map[string]map[*Subscription]struct{}{}}
}

// Subscription is one stream's view of the feed: the runs of its tenant
// that match its filter, from its start.
type Subscription struct {
	feed     *Feed
	tenantID string
	filter   Filter
	runs     chan *Run
	done     chan struct{}
	ended    sync.Once
	dropped  atomic.Bool
}

// Subscribe starts a subscription to the tenant's runs that match f's
// route, status, app, agent and model (its other fields are for listings
// and are refused here). buffer is how far it may fall behind (0 is
// SubscriptionBuffer). On a closed feed the subscription is ended at once.
// The caller must Close it.
func (f *Feed) Subscribe(tenantID string, filter Filter, buffer int) (*Subscription, error) {
	if err := filter.ValidateMatch(); err != nil {
		return nil, err
	}
	if buffer <= 0 {
		buffer = SubscriptionBuffer
	}
	s := &Subscription{feed: f, tenantID: tenantID, filter: filter, runs: make(chan *Run, buffer), done: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		s.end()
		return s, nil
	}
	subs := f.byTen[tenantID]
	if subs == nil {
		subs = map[*Subscription]struct{}{}
		f.byTen[tenantID] = subs
	}
	subs[s] = struct{}{}
	f.subscribers.Add(1)
	return s, nil
}

// Publish hands run to every subscription of its tenant whose filter it
// matches, without waiting: a subscription with a full buffer is dropped.
// run must not change afterwards; subscribers read it.
func (f *Feed) Publish(run *Run) {
	if f.subscribers.Load() == 0 {
		return
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for s := range f.byTen[run.TenantID] {
		if !s.filter.Matches(run) {
			continue
		}
		select {
		case s.runs <- run:
		default:
			s.dropped.Store(true)
			s.end() // Close, by its reader, takes it off the feed
		}
	}
}

// Close ends every subscription, and those made later at once. Streams
// waiting on a subscription then return, so that a server shutting down
// is not held open by them.
func (f *Feed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, subs := range f.byTen {
		for s := range subs {
			s.end()
		}
	}
	f.byTen = map[string]map[*Subscription]struct{}{}
	f.subscribers.Store(0)
}

// Drop ends every subscription as fallen behind (Dropped): their readers
// reconnect and reload the list. For a replica that cannot tell which of
// the other replicas' runs its streams missed, rather than let them go on
// with a silent gap.
func (f *Feed) Drop() {
	if f.subscribers.Load() == 0 {
		return
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, subs := range f.byTen {
		for s := range subs {
			s.dropped.Store(true)
			s.end() // Close, by its reader, takes it off the feed
		}
	}
}

// ForgetTenant ends every subscription of a deleted tenant and takes them
// off the feed: their streams end, whoever is still reading them.
func (f *Feed) ForgetTenant(tenantID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	subs := f.byTen[tenantID]
	for s := range subs {
		s.end()
	}
	delete(f.byTen, tenantID)
	f.subscribers.Add(-int64(len(subs)))
}

// Streams reports whether the tenant has a subscription on the feed: with
// nobody subscribed, one atomic load.
func (f *Feed) Streams(tenantID string) bool {
	if f.subscribers.Load() == 0 {
		return false
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.byTen[tenantID]) > 0
}

// Subscribers returns how many subscriptions of every tenant are on the
// feed.
func (f *Feed) Subscribers() int { return int(f.subscribers.Load()) }

// Runs delivers the subscription's runs, oldest first.
func (s *Subscription) Runs() <-chan *Run { return s.runs }

// Done is closed when the subscription ends: dropped for falling behind,
// closed, its tenant forgotten, or its feed closed. Runs still buffered may be read, or left.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Dropped reports whether the subscription ended for falling behind (its
// own reading, or the replica's following of the others: Feed.Drop).
func (s *Subscription) Dropped() bool { return s.dropped.Load() }

// Close ends the subscription and takes it off the feed.
func (s *Subscription) Close() {
	s.end()
	f := s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	subs := f.byTen[s.tenantID]
	if _, ok := subs[s]; !ok {
		return // the feed was closed, or its tenant forgotten, which took it off
	}
	delete(subs, s)
	if len(subs) == 0 {
		delete(f.byTen, s.tenantID)
	}
	f.subscribers.Add(-1)
}

func (s *Subscription) end() { s.ended.Do(func() { close(s.done) }) }

// Matches reports whether run matches f's route, status, app, agent and
// model and trace id: what a live stream filters on.
func (f *Filter) Matches(run *Run) bool {
	return (f.Route == "" || f.Route == run.Route) && (f.Status == "" || f.Status == run.Status) &&
		(f.App == "" || f.App == run.App) && (f.Agent == "" || f.Agent == run.Agent) &&
		(f.Model == "" || f.Model == run.Model) && (f.TraceID == "" || f.TraceID == run.TraceID)
}

// Listed returns the run as a listing shows it: without its request and
// answer.
func (r Run) Listed() Run {
	r.Request, r.Response = nil, nil
	return r
}
