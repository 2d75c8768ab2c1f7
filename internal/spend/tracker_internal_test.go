package spend

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
)

// nopStore is a Store with nothing stored.
type nopStore struct{ Store }

func (nopStore) SumCounters(context.Context, string, []Counter, string) (map[Counter]Amount, error) {
	return nil, nil
}

func TestEndedWindowsAreForgotten(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC))
	tr := NewTracker(TrackerOptions{Store: nopStore{}, Replica: "a", Now: clock.Now})
	allow := func(policy.Spend) (bool, error) { return true, nil }
	who := Who{TenantID: "t1", App: "support"}
	tr.Recorded(&ledger.Run{TenantID: "t1", App: "support", CreatedAt: clock.Now(), Route: ledger.RouteLive, CostUSD: 1}, nil)
	held, err := tr.Admit(ctx, who, Amount{Requests: 1}, allow)
	require.NoError(t, err)
	ts := tr.tenant("t1")
	cells := func() int { ts.mu.Lock(); defer ts.mu.Unlock(); return len(ts.cells) }
	require.Equal(t, 6, cells(), "tenant and app, three windows each")

	clock.Set(time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC))
	r1, _ := tr.Admit(ctx, who, Amount{}, allow)
	assert.Equal(t, 8, cells(), "the hour's cells stay while a call in flight counts in them")
	held.Release()
	clock.Set(time.Date(2026, 11, 26, 11, 0, 1, 0, time.UTC))
	r2, _ := tr.Admit(ctx, who, Amount{}, allow)
	assert.Equal(t, 6, cells(), "then go")
	r1.Release()
	r2.Release()

	clock.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	tr.Recorded(&ledger.Run{TenantID: "t1", CreatedAt: clock.Now(), Route: ledger.RouteLive}, nil)
	assert.Equal(t, 3, cells(), "a new month: only the tenant's new cells")
}

// Estimates released leave no float residue that would keep their cells
// counting a call in flight for good.
func TestReleasedEstimatesLeaveNoResidue(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC))
	tr := NewTracker(TrackerOptions{Store: nopStore{}, Replica: "a", Now: clock.Now})
	allow := func(policy.Spend) (bool, error) { return true, nil }
	who := Who{TenantID: "t1"}
	a, err := tr.Admit(ctx, who, Amount{USD: 0.1, Requests: 1}, allow)
	require.NoError(t, err)
	b, err := tr.Admit(ctx, who, Amount{USD: 0.2, Requests: 1}, allow)
	require.NoError(t, err)
	a.Release()
	b.Release()
	ts := tr.tenant("t1")
	clock.Set(time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC))
	tr.Recorded(&ledger.Run{TenantID: "t1", CreatedAt: clock.Now(), Route: ledger.RouteLive}, nil)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	assert.Len(t, ts.cells, 3, "the ended hour's cell is gone; the new hour's, the day's and the month's remain")
}

func TestTheEstimatorIsBounded(t *testing.T) {
	tr := NewTracker(TrackerOptions{Store: nopStore{}})
	for i := range maxModels + 100 {
		tr.models.learn(&ledger.Run{Route: ledger.RouteLive, Model: "m" + strconv.Itoa(i), Request: make([]byte, 8), PromptTokens: 2})
	}
	assert.Len(t, tr.models.m, maxModels)
}
