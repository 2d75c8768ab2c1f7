package governance

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/ledger"
)

// AgentStore reads and writes agents' standing.
type AgentStore interface {
	// AgentStanding returns the agent's standing; false when svc has not
	// met it.
	AgentStanding(ctx context.Context, tenantID, name string) (ledger.Standing, bool, error)
	// SaveAgentStanding stores a standing that changed outside a run.
	SaveAgentStanding(ctx context.Context, tenantID, name string, st ledger.Standing, at time.Time) error
	// MoveAgentStanding moves the stored standing by one decision, at
	// once and atomically, meeting the agent if need be, and returns the
	// standing it moved to: what replicas sharing a database do.
	MoveAgentStanding(ctx context.Context, tenantID, name, decision string, at time.Time) (ledger.Standing, error)
}

// maxStandings bounds the agents kept in memory; agent names come from
// callers, so the set must not grow without end. Past it the book starts
// over, reading standings from the store again as agents return.
const maxStandings = 100_000

// agentsTopic carries "<tenant id> <agent name>" of an agent whose trust
// another replica may have changed.
const agentsTopic = "agents"

// standings keeps agents' standing in memory, so that a policy sees
// agent.trust without a database read per call. The store is the record;
// the book is read through on first sight of an agent.
//
// Alone on its database (SQLite) the book is the working standing: each
// decision moves it in memory, and the runs carry it to the store. Shared
// by replicas (replicate), every decision moves the standing in the store
// (one statement), so that all of them move one standing; the book is then
// a cache of what policies read, dropped when another replica says an
// agent's trust may have changed and read again past the refresh bound.
type standings struct {
	store AgentStore
	mu    sync.Mutex
	book  map[agentKey]standing

	// With replicas: the feed moves are announced on, the bound on a lost
	// notice, the clock it is measured by, and epoch, bumped by each notice
	// so that a read older than it is not kept.
	feed    changes.Feed
	refresh time.Duration
	now     func() time.Time
	epoch   uint64
}

// standing is a book's entry: the standing, and when it was read (only
// kept with replicas).
type standing struct {
	ledger.Standing
	read time.Time
}

type agentKey struct{ tenantID, name string }

func newStandings(store AgentStore) *standings {
	return &standings{store: store, book: map[agentKey]standing{}}
}

// replicate makes every decision move the standing in the store, tells the
// other replicas on feed of a move that may have changed the agent's trust,
// drops an agent they tell of, and reads an entry older than refresh
// again. Call it before use.
func (s *standings) replicate(feed changes.Feed, refresh time.Duration, now func() time.Time) {
	s.feed, s.refresh, s.now = feed, refresh, now
	feed.Subscribe(agentsTopic, s.drop)
}

// drop forgets an agent another replica moved ("<tenant id> <name>"), or
// every agent for changes.Everything.
func (s *standings) drop(payload string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	if payload == changes.Everything {
		clear(s.book)
		return
	}
	tenantID, name, _ := strings.Cut(payload, " ")
	delete(s.book, agentKey{tenantID, name})
}

// get returns the agent's standing.
func (s *standings) get(ctx context.Context, tenantID, name string) (ledger.Standing, error) {
	k := agentKey{tenantID, name}
	var now time.Time
	if s.feed != nil {
		now = s.now()
	}
	s.mu.Lock()
	cur, ok := s.book[k]
	epoch := s.epoch
	s.mu.Unlock()
	if ok && (s.feed == nil || now.Sub(cur.read) < s.refresh) {
		return cur.Standing, nil
	}
	st, _, err := s.store.AgentStanding(ctx, tenantID, name)
	if err != nil {
		return ledger.NewStanding(), err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.feed == nil {
		if cur, ok := s.book[k]; ok {
			return cur.Standing, nil // another call read it first and may have moved it
		}
	} else if s.epoch != epoch {
		return st, nil // a notice came meanwhile: the read may be older than it
	}
	return s.keep(k, standing{Standing: st, read: now}), nil
}

// keep puts an entry in the book, under mu, and returns its standing. With
// replicas an entry that counts more decisions stays: moves and reads
// return in any order.
func (s *standings) keep(k agentKey, st standing) ledger.Standing {
	cur, ok := s.book[k]
	if ok && s.feed != nil && cur.Decisions > st.Decisions {
		return cur.Standing
	}
	if !ok && len(s.book) >= maxStandings {
		// Standings read back after this may lag runs not stored yet; until
		// their decisions count past those runs', the store keeps the runs'.
		clear(s.book)
	}
	s.book[k] = st
	return st.Standing
}

// observe moves the agent's standing by a decision and returns the new
// standing.
func (s *standings) observe(ctx context.Context, tenantID, name, decision string) (ledger.Standing, error) {
	if s.feed != nil {
		return s.move(ctx, tenantID, name, decision)
	}
	st, err := s.get(ctx, tenantID, name)
	if err != nil {
		return st, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := agentKey{tenantID, name}
	if cur, ok := s.book[k]; ok {
		st = cur.Standing
	}
	st = st.After(decision)
	s.book[k] = standing{Standing: st}
	return st, nil
}

// move moves the standing the replicas share by a decision, keeps what it
// moved to, and tells the others when the agent's trust may have changed.
func (s *standings) move(ctx context.Context, tenantID, name, decision string) (ledger.Standing, error) {
	now := s.now()
	s.mu.Lock()
	epoch := s.epoch
	s.mu.Unlock()
	st, err := s.store.MoveAgentStanding(ctx, tenantID, name, decision, now)
	if err != nil {
		return st, err
	}
	s.mu.Lock()
	if s.epoch == epoch {
		s.keep(agentKey{tenantID, name}, standing{Standing: st, read: now})
	}
	s.mu.Unlock()
	if st.TrustMayHaveMoved(decision) {
		changes.Announce(ctx, s.feed, agentsTopic, tenantID+" "+name)
	}
	return st, nil
}
