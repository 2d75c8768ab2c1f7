// Package audittest is an audit trail in memory, for the tests of the
// packages that audit what they do, without SQL.
package audittest

import (
	"context"
	"sync"

	"github.com/svc-gateway/svc/internal/audit"
)

var _ audit.Store = (*Memory)(nil)

// Memory keeps every event appended to it. It is safe for concurrent use.
type Memory struct {
	mu     sync.Mutex
	events []audit.Event
}

// AppendAudit keeps e.
func (m *Memory) AppendAudit(_ context.Context, e *audit.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, *e)
	return nil
}

// ListAudit returns the tenant's events, newest first, as the store does;
// the filter is not applied.
func (m *Memory) ListAudit(_ context.Context, tenantID string, _ audit.Filter) ([]audit.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Event
	for i := len(m.events) - 1; i >= 0; i-- {
		if m.events[i].TenantID == tenantID {
			out = append(out, m.events[i])
		}
	}
	return out, nil
}

// Events returns every event of every tenant, oldest first.
func (m *Memory) Events() []audit.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]audit.Event(nil), m.events...)
}
