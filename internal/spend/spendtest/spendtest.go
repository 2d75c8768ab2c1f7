// Package spendtest is a spend.Store in memory, for the tests of the
// packages that count spend, without SQL.
package spendtest

import (
	"context"
	"sync"
	"time"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/spend"
)

var _ spend.Store = (*Store)(nil)

// Store keeps counters, budgets and alerts in memory, as the database
// does. It is safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	rows     map[row]spend.Amount
	budgets  map[string][]spend.Budget
	alerts   map[alert]bool
	sums     int
	claims   int
	fail     error
	afterSum func()
}

// row is one stored counter of one replica.
type row struct {
	tenantID string
	spend.Counter
	replica string
}

type alert struct {
	tenantID, budgetID string
	start              int64
	percent            int
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{rows: map[row]spend.Amount{}, budgets: map[string][]spend.Budget{}, alerts: map[alert]bool{}}
}

// Stored applies the counters of runs as the store does when it inserts
// them: spend.Deltas in loc's windows, in rows tagged with replica.
func (s *Store) Stored(replica string, loc *time.Location, runs ...*ledger.Run) {
	for _, run := range runs {
		for _, d := range spend.Deltas(run, loc) {
			s.Add(replica, d)
		}
	}
}

// Add adds d to the row of replica.
func (s *Store) Add(replica string, d spend.Delta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := row{tenantID: d.TenantID, Counter: d.Counter, replica: replica}
	a := s.rows[k]
	a.Add(d.Amount)
	s.rows[k] = a
}

// Fail makes every later call fail with err (nil: succeed again).
func (s *Store) Fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Sums counts the calls of SumCounters.
func (s *Store) Sums() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sums
}

// AfterSum, when set, runs at the end of each SumCounters, outside the
// store's lock: a change racing a read.
func (s *Store) AfterSum(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afterSum = fn
}

// SumCounters implements spend.Store.
func (s *Store) SumCounters(_ context.Context, tenantID string, counters []spend.Counter, except string) (map[spend.Counter]spend.Amount, error) {
	s.mu.Lock()
	s.sums++
	if s.fail != nil {
		defer s.mu.Unlock()
		return nil, s.fail
	}
	out := map[spend.Counter]spend.Amount{}
	want := make(map[spend.Counter]bool, len(counters))
	for _, c := range counters {
		want[c] = true
	}
	for k, a := range s.rows {
		if k.tenantID != tenantID || !want[k.Counter] || (except != "" && k.replica == except) {
			continue
		}
		sum := out[k.Counter]
		sum.Add(a)
		out[k.Counter] = sum
	}
	hook := s.afterSum
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return out, nil
}

// ListCounters implements spend.Store.
func (s *Store) ListCounters(_ context.Context, tenantID string, sc spend.Scope, w spend.Window, start int64) (map[string]spend.Amount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	out := map[string]spend.Amount{}
	for k, a := range s.rows {
		if k.tenantID == tenantID && k.Scope == sc && k.Window == w && k.Start == start {
			sum := out[k.Key]
			sum.Add(a)
			out[k.Key] = sum
		}
	}
	return out, nil
}

// Budgets implements spend.Store.
func (s *Store) Budgets(_ context.Context, tenantID string) ([]spend.Budget, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	return append([]spend.Budget(nil), s.budgets[tenantID]...), nil
}

// ReplaceBudgets implements spend.Store.
func (s *Store) ReplaceBudgets(_ context.Context, tenantID string, list []spend.Budget) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.budgets[tenantID] = append([]spend.Budget(nil), list...)
	return nil
}

// ClaimAlert implements spend.Store.
func (s *Store) ClaimAlert(_ context.Context, tenantID, budgetID string, start int64, percent int) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	if s.fail != nil {
		return false, s.fail
	}
	k := alert{tenantID, budgetID, start, percent}
	if s.alerts[k] {
		return false, nil
	}
	s.alerts[k] = true
	return true, nil
}

// Claims counts the calls of ClaimAlert.
func (s *Store) Claims() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claims
}

// Alerts counts the thresholds claimed.
func (s *Store) Alerts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.alerts)
}
