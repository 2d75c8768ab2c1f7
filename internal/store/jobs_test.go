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

	first, ok, err := s.ClaimJob(ctx, []string{"t"}, now, "proc", now.Add(time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	_, _, err = s.RequeueRunningJobs(ctx, now.Add(2*time.Second), false) // the lease lapsed
	require.NoError(t, err)
	second, ok, err := s.ClaimJob(ctx, []string{"t"}, now.Add(2*time.Second), "proc", now.Add(time.Minute))
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
