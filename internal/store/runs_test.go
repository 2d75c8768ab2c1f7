package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func newRun(tenantID string, at time.Time, route, status, agent string) *ledger.Record {
	run := &ledger.Run{
		ID: ids.New("run"), TenantID: tenantID, CreatedAt: at, Route: route, Status: status, HTTPStatus: 200,
		Model: "gpt-4o-mini", App: "app", Agent: agent, Mode: "optimize", Provider: "mock",
		PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CostUSD: 0.0001, LatencyMS: 1.5,
		Explanation: ledger.RouteExplanation{Route: route, Reason: "r", Rejected: []ledger.Alternative{}, Policy: ledger.Verdict{Decision: "allow"}},
		Request:     json.RawMessage(`{"model":"gpt-4o-mini","messages":[]}`), Response: json.RawMessage(`{"id":"x"}`),
	}
	events := []ledger.Event{{Type: "request.received", Payload: json.RawMessage(`{"a":1}`)}, {Type: "provider.completed", Payload: json.RawMessage(`{}`)}}
	return ledger.NewRecord(run, events, at)
}

func TestRunsRoundTripAndIntegrity(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	rec := newRun(tenant.DefaultID, time.UnixMilli(1_700_000_000_000).UTC(), ledger.RouteLive, ledger.StatusOK, "bot")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))

	got, err := s.Run(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	want := *rec.Run
	assert.Equal(t, want, got)

	events, head, err := s.RunEvents(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	assert.Equal(t, rec.Events, events)
	assert.True(t, ledger.Verify(tenant.DefaultID, rec.Run.ID, events, head).OK)

	// An event altered directly in SQLite is found at its index.
	_, err = s.DB().Exec(`UPDATE run_events SET payload = '{"a":2}' WHERE run_id = ? AND seq = 0`, rec.Run.ID)
	require.NoError(t, err)
	events, head, err = s.RunEvents(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	res := ledger.Verify(tenant.DefaultID, rec.Run.ID, events, head)
	assert.False(t, res.OK)
	assert.Equal(t, 0, *res.BrokenAt)
}

func TestRunsAreTenantScoped(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	theirs := newRun(other.ID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{theirs}))

	_, err = s.Run(ctx, tenant.DefaultID, theirs.Run.ID)
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	_, _, err = s.RunEvents(ctx, tenant.DefaultID, theirs.Run.ID)
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	_, err = s.AppendEvent(ctx, tenant.DefaultID, theirs.Run.ID, "x", time.Now(), json.RawMessage(`{}`))
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	runs, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, runs)
	assert.Zero(t, total)

	require.NoError(t, s.AddFeedback(ctx, &ledger.Feedback{ID: "fb_x", TenantID: tenant.DefaultID, RunID: theirs.Run.ID, Rating: 1, CreatedAt: time.Now()}))
	var n int
	require.NoError(t, s.DB().QueryRow(`SELECT COUNT(*) FROM feedback`).Scan(&n))
	assert.Zero(t, n, "feedback on another tenant's run stores nothing")
}

func TestListRunsFiltersAndPages(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	base := time.UnixMilli(1_700_000_000_000).UTC()
	var recs []*ledger.Record
	for i := range 7 {
		route, status := ledger.RouteLive, ledger.StatusOK
		if i%3 == 0 {
			route = ledger.RouteExactCache
		}
		if i == 4 {
			status = ledger.StatusError
		}
		recs = append(recs, newRun(tenant.DefaultID, base.Add(time.Duration(i)*time.Second), route, status, ""))
	}
	require.NoError(t, s.InsertRuns(ctx, recs))

	runs, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, 7, total)
	require.Len(t, runs, 3)
	assert.Equal(t, recs[6].Run.ID, runs[0].ID, "newest first")
	assert.Nil(t, runs[0].Request, "lists do not carry bodies")

	runs, _, err = s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 3, Offset: 6})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, recs[0].Run.ID, runs[0].ID)

	_, total, err = s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Route: ledger.RouteExactCache, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 3, total)
	runs, total, err = s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Status: ledger.StatusError, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, recs[4].Run.ID, runs[0].ID)
}

// Concurrent appends to one run serialize: the chain still verifies.
func TestConcurrentAppendsKeepTheChain(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	rec := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, err := s.AppendEvent(ctx, tenant.DefaultID, rec.Run.ID, "tool.called", time.Now(), json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	events, head, err := s.RunEvents(ctx, tenant.DefaultID, rec.Run.ID)
	require.NoError(t, err)
	assert.Len(t, events, 52)
	assert.True(t, ledger.Verify(tenant.DefaultID, rec.Run.ID, events, head).OK)
}

func TestAgentsCounted(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	t0 := time.UnixMilli(1_700_000_000_000).UTC()
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{
		newRun(tenant.DefaultID, t0, ledger.RouteLive, ledger.StatusOK, "triage-bot"),
		newRun(tenant.DefaultID, t0.Add(time.Minute), ledger.RouteLive, ledger.StatusOK, "triage-bot"),
		newRun(tenant.DefaultID, t0.Add(2*time.Minute), ledger.RouteLive, ledger.StatusOK, "other"),
	}))
	agents, err := s.ListAgents(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, agents, 2)
	assert.Equal(t, "other", agents[0].Name)
	assert.Equal(t, ledger.Agent{Name: "triage-bot", FirstSeen: t0, LastSeen: t0.Add(time.Minute), RunCount: 2, Trust: ledger.DefaultTrust}, agents[1])
}

func TestRecorderGroupsConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	r := ledger.NewRecorder(s, hclog.NewNullLogger())
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			assert.NoError(t, r.Record(ctx, newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")))
		})
	}
	wg.Wait()
	r.Close()
	_, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, 100, total)
	assert.ErrorIs(t, r.Record(ctx, newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")), ledger.ErrClosed)
}

func TestRecorderIsolatesABadRun(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	good := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	bad := newRun("t_missing", time.Now(), ledger.RouteLive, ledger.StatusOK, "") // foreign key fails
	r := ledger.NewRecorder(s, hclog.NewNullLogger())
	defer r.Close()
	var wg sync.WaitGroup
	var goodErr, badErr error
	wg.Go(func() { goodErr = r.Record(ctx, good) })
	wg.Go(func() { badErr = r.Record(ctx, bad) })
	wg.Wait()
	assert.NoError(t, goodErr)
	assert.Error(t, badErr)
	_, err := s.Run(ctx, tenant.DefaultID, good.Run.ID)
	assert.NoError(t, err)
}
