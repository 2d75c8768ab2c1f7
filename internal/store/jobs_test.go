package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// An attempt whose lease lapsed cannot record its outcome over a later
// attempt of the same job, even one the same process claimed.
func TestFinishJobRecordsOnlyTheLatestAttempt(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	j := jobs.Job{ID: "job_1", TenantID: tenant.DefaultID, Type: "t", Payload: json.RawMessage(`{}`),
		Status: jobs.Queued, MaxAttempts: 5, RunAt: now, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.InsertJob(ctx, &j))

	first, ok, err := s.ClaimJob(ctx, []string{"t"}, now, "proc", time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool { // the lease lapses (by the database's clock on PostgreSQL)
		requeued, _, err := s.RequeueRunningJobs(ctx, now.Add(2*time.Second), false)
		require.NoError(t, err)
		return len(requeued) == 1
	}, 10*time.Second, time.Millisecond)
	second, ok, err := s.ClaimJob(ctx, []string{"t"}, now.Add(2*time.Second), "proc", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 2, second.Attempts)

	first.Status, first.UpdatedAt = jobs.Succeeded, now.Add(3*time.Second)
	err = s.FinishJob(ctx, &first)
	assert.True(t, errs.Is(err, errs.NotFound), "the lapsed attempt's outcome is refused: %v", err)
	got, err := s.Job(ctx, tenant.DefaultID, "job_1")
	require.NoError(t, err)
	assert.Equal(t, jobs.Running, got.Status)

	second.Status, second.UpdatedAt = jobs.Succeeded, now.Add(4*time.Second)
	require.NoError(t, s.FinishJob(ctx, &second))
	got, err = s.Job(ctx, tenant.DefaultID, "job_1")
	require.NoError(t, err)
	assert.Equal(t, jobs.Succeeded, got.Status)
}

// On PostgreSQL a lease is measured by the database's clock: replicas
// whose clocks are hours apart neither take a live job nor keep a dead
// one.
func TestLeasesRunOnTheDatabasesClock(t *testing.T) {
	ctx := context.Background()
	s := storetest.OpenPostgres(t)
	behind, ahead := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for _, id := range []string{"job_live", "job_dead"} {
		require.NoError(t, s.InsertJob(ctx, &jobs.Job{ID: id, TenantID: tenant.DefaultID, Type: "t", Payload: json.RawMessage(`{}`),
			Status: jobs.Queued, MaxAttempts: 5, RunAt: behind, CreatedAt: behind, UpdatedAt: behind}))
	}
	live, ok, err := s.ClaimJob(ctx, []string{"t"}, behind, "slow-clock", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.RenewJobs(ctx, "slow-clock", behind, time.Minute))
	requeued, failed, err := s.RequeueRunningJobs(ctx, ahead, false)
	require.NoError(t, err)
	assert.Empty(t, append(requeued, failed...), "a replica whose clock runs ahead leaves a live lease")
	got, err := s.Job(ctx, tenant.DefaultID, live.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.Running, got.Status)

	dead, ok, err := s.ClaimJob(ctx, []string{"t"}, ahead, "fast-clock", time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool {
		requeued, _, err := s.RequeueRunningJobs(ctx, behind, false)
		require.NoError(t, err)
		return len(requeued) == 1
	}, 10*time.Second, time.Millisecond, "a replica whose clock runs behind takes a lapsed lease")
	got, err = s.Job(ctx, tenant.DefaultID, dead.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.Queued, got.Status)
	got, err = s.Job(ctx, tenant.DefaultID, live.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.Running, got.Status, "and only that one")
}
