package jobs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// Failed attempts count by type and whether they were the last; the
// queue's depth is every tenant's jobs per state.
func TestFailuresAndDepthAreMeasured(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "other")
	require.NoError(t, err)
	m := metrics.New(metrics.Options{})
	q := newQueue(t, s, newClock(), jobs.Options{MaxAttempts: 3, Metrics: m})
	m.ReadJobQueue(q.Depth)
	q.Register("test.flaky", func(context.Context, jobs.Job) error { return errors.New("try again") })
	q.Register("test.refused", func(context.Context, jobs.Job) error { return jobs.Permanent(errors.New("never")) })
	q.Register("test.ok", ok)

	_, err = q.Enqueue(ctx, tenant.DefaultID, "test.flaky", nil)
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, other.ID, "test.refused", nil)
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, other.ID, "test.ok", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"queued": 3, "running": 0}, metricstest.Samples(t, m, "svc_job_queue_depth"))

	assert.Equal(t, 3, runDue(t, q)) // the flaky one waits for its backoff
	assert.Equal(t, map[string]float64{"false,test.flaky": 1, "true,test.refused": 1},
		metricstest.Nonzero(t, m, "svc_job_failures_total"))
	assert.Equal(t, map[string]float64{"queued": 1, "running": 0}, metricstest.Samples(t, m, "svc_job_queue_depth"),
		"finished jobs, succeeded or failed for good, are not in the queue")
}
