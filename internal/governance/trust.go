package governance

import (
	"context"
	"sync"
	"time"

	"github.com/svc-gateway/svc/internal/ledger"
)

// AgentStore reads and writes agents' standing.
type AgentStore interface {
	// AgentStanding returns the agent's standing; false when svc has not
	// met it.
	AgentStanding(ctx context.Context, tenantID, name string) (ledger.Standing, bool, error)
	// SaveAgentStanding stores a standing that changed outside a run.
	SaveAgentStanding(ctx context.Context, tenantID, name string, st ledger.Standing, at time.Time) error
}

// maxStandings bounds the agents kept in memory; agent names come from
// callers, so the set must not grow without end. Past it the book starts
// over, reading standings from the store again as agents return.
const maxStandings = 100_000

// standings keeps agents' standing in memory, so that a policy sees
// agent.trust without a database read per call. The store is the record;
// the book is read through on first sight of an agent.
type standings struct {
	store AgentStore
	mu    sync.Mutex
	book  map[agentKey]ledger.Standing
}

type agentKey struct{ tenantID, name string }

func newStandings(store AgentStore) *standings {
	return &standings{store: store, book: map[agentKey]ledger.Standing{}}
}

// get returns the agent's standing.
func (s *standings) get(ctx context.Context, tenantID, name string) (ledger.Standing, error) {
	k := agentKey{tenantID, name}
	s.mu.Lock()
	st, ok := s.book[k]
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	st, _, err := s.store.AgentStanding(ctx, tenantID, name)
	if err != nil {
		return ledger.NewStanding(), err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.book[k]; ok {
		return cur, nil // another call read it first and may have moved it
	}
	if len(s.book) >= maxStandings {
		// Standings read back after this may lag runs not stored yet; until
		// their decisions count past those runs', the store keeps the runs'.
		clear(s.book)
	}
	s.book[k] = st
	return st, nil
}

// observe moves the agent's standing by a decision and returns the new
// standing.
func (s *standings) observe(ctx context.Context, tenantID, name, decision string) (ledger.Standing, error) {
	st, err := s.get(ctx, tenantID, name)
	if err != nil {
		return st, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := agentKey{tenantID, name}
	if cur, ok := s.book[k]; ok {
		st = cur
	}
	st = st.After(decision)
	s.book[k] = st
	return st, nil
}
