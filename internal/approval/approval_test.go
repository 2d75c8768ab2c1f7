package approval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

type fixedSettings struct {
	ttl     time.Duration
	pending int
}

func (f fixedSettings) ExceptionTTL(context.Context, string) (time.Duration, error) {
	return f.ttl, nil
}

func (f fixedSettings) PendingApprovalLimit(context.Context, string) (int, error) {
	return f.pending, nil
}

func setup(t *testing.T) (*approval.Service, *fakeclock.Clock, string) {
	t.Helper()
	s := storetest.Open(t)
	other := "t_other"
	_, err := s.DB().Exec(`INSERT INTO tenants (id, name, created_at) VALUES ($1, 'Other', 0)`, other)
	require.NoError(t, err)
	c := fakeclock.New(time.UnixMilli(1_800_000_000_000).UTC())
	return approval.NewService(s, fixedSettings{ttl: 2 * time.Hour, pending: 3}, c.Now), c, other
}

func request(tenantID, fingerprint string) approval.Request {
	return approval.Request{
		TenantID: tenantID, Target: "chat", Fingerprint: fingerprint, RunID: "run_1",
		Request:     json.RawMessage(`{"model":"gpt-4o-mini"}`),
		RequestedBy: approval.Requester{Actor: "key:key_1", App: "billing", Agent: "bot"},
		Rules:       []approval.Rule{{ID: "wire-transfers", Effect: "require_approval", Reason: "money moves"}},
	}
}

func TestAskingTwiceFindsThePendingApproval(t *testing.T) {
	ctx := context.Background()
	svc, _, other := setup(t)
	first, created, err := svc.Open(ctx, request(tenant.DefaultID, "fp1"))
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, approval.Pending, first.Status)
	again, created, err := svc.Open(ctx, request(tenant.DefaultID, "fp1"))
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, first.Rules, again.Rules)

	// Another tenant's identical request is its own approval.
	theirs, created, err := svc.Open(ctx, request(other, "fp1"))
	require.NoError(t, err)
	assert.True(t, created)
	assert.NotEqual(t, first.ID, theirs.ID)

	list, err := svc.List(ctx, tenant.DefaultID, approval.Filter{Status: approval.Pending})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, first.ID, list[0].ID)
}

func TestDecisions(t *testing.T) {
	ctx := context.Background()
	svc, c, other := setup(t)
	a, _, err := svc.Open(ctx, request(tenant.DefaultID, "fp1"))
	require.NoError(t, err)

	_, err = svc.Decide(ctx, tenant.DefaultID, a.ID, true, "  ", "key:admin")
	assert.True(t, errs.Is(err, errs.Invalid), "a reason is required")
	_, err = svc.Decide(ctx, other, a.ID, true, "ok", "key:admin")
	assert.True(t, errs.Is(err, errs.NotFound), "another tenant's approval is not found")
	_, err = svc.Decide(ctx, tenant.DefaultID, "apr_unknown", true, "ok", "key:admin")
	assert.True(t, errs.Is(err, errs.NotFound))

	decided, err := svc.Decide(ctx, tenant.DefaultID, a.ID, true, "the customer confirmed by phone", "key:admin")
	require.NoError(t, err)
	assert.Equal(t, approval.Approved, decided.Status)
	assert.Equal(t, "key:admin", decided.DecidedBy)
	assert.Equal(t, "the customer confirmed by phone", decided.Reason)
	require.NotNil(t, decided.ExpiresAt)
	assert.Equal(t, c.Now().Add(2*time.Hour), *decided.ExpiresAt)

	_, err = svc.Decide(ctx, tenant.DefaultID, a.ID, false, "changed my mind", "key:admin")
	assert.True(t, errs.Is(err, errs.Conflict), "deciding twice is a conflict")

	b, _, err := svc.Open(ctx, request(tenant.DefaultID, "fp2"))
	require.NoError(t, err)
	rejected, err := svc.Decide(ctx, tenant.DefaultID, b.ID, false, "not allowed", "key:admin")
	require.NoError(t, err)
	assert.Equal(t, approval.Rejected, rejected.Status)
	assert.Nil(t, rejected.ExpiresAt)

	_, err = svc.List(ctx, tenant.DefaultID, approval.Filter{Status: "maybe"})
	assert.True(t, errs.Is(err, errs.Invalid))
}

func TestAnExceptionLastsItsTTLAndNoLonger(t *testing.T) {
	ctx := context.Background()
	svc, c, other := setup(t)
	a, _, err := svc.Open(ctx, request(tenant.DefaultID, "fp1"))
	require.NoError(t, err)

	got, err := svc.Exception(ctx, tenant.DefaultID, "fp1")
	require.NoError(t, err)
	assert.Nil(t, got, "a pending approval grants nothing")

	_, err = svc.Decide(ctx, tenant.DefaultID, a.ID, true, "fine", "key:admin")
	require.NoError(t, err)
	got, err = svc.Exception(ctx, tenant.DefaultID, "fp1")
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, a.ID, got.ID)

	for fp, tenantID := range map[string]string{"fp2": tenant.DefaultID, "fp1": other} {
		got, err = svc.Exception(ctx, tenantID, fp)
		require.NoError(t, err)
		assert.Nil(t, got, "another request, or another tenant, has no exception")
	}

	c.Advance(2*time.Hour - time.Millisecond)
	got, err = svc.Exception(ctx, tenant.DefaultID, "fp1")
	require.NoError(t, err)
	assert.NotNil(t, got, "still inside the TTL")
	c.Advance(time.Millisecond)
	got, err = svc.Exception(ctx, tenant.DefaultID, "fp1")
	require.NoError(t, err)
	assert.Nil(t, got, "the exception has expired")

	// Once decided, the same request may be held again.
	again, created, err := svc.Open(ctx, request(tenant.DefaultID, "fp1"))
	require.NoError(t, err)
	assert.True(t, created)
	assert.NotEqual(t, a.ID, again.ID)
}

func TestACallerHoldsAtMostTheLimitOfPendingApprovals(t *testing.T) {
	ctx := context.Background()
	svc, _, other := setup(t) // a limit of 3
	var first approval.Approval
	for i := range 3 {
		a, created, err := svc.Open(ctx, request(tenant.DefaultID, fmt.Sprint("fp", i)))
		require.NoError(t, err)
		require.True(t, created)
		if i == 0 {
			first = a
		}
	}
	_, _, err := svc.Open(ctx, request(tenant.DefaultID, "fp3"))
	require.True(t, errs.Is(err, errs.RateLimited), "a fourth is refused: %v", err)
	assert.Equal(t, "too_many_pending_approvals", errs.Code(err))
	assert.Equal(t, approval.RetryPending, errs.As(err).Retry)
	list, err := svc.List(ctx, tenant.DefaultID, approval.Filter{Status: approval.Pending})
	require.NoError(t, err)
	assert.Len(t, list, 3, "and not stored")

	again, created, err := svc.Open(ctx, request(tenant.DefaultID, "fp0"))
	require.NoError(t, err, "asking again for a pending one is no new approval")
	assert.False(t, created)
	assert.Equal(t, first.ID, again.ID)

	someoneElse := request(tenant.DefaultID, "fp3")
	someoneElse.RequestedBy.Actor = "user:usr_2"
	_, created, err = svc.Open(ctx, someoneElse)
	require.NoError(t, err, "another caller has its own limit")
	assert.True(t, created)
	_, created, err = svc.Open(ctx, request(other, "fp3"))
	require.NoError(t, err, "and so has the same key id in another tenant")
	assert.True(t, created)

	_, err = svc.Decide(ctx, tenant.DefaultID, first.ID, false, "no", "key:admin")
	require.NoError(t, err)
	_, created, err = svc.Open(ctx, request(tenant.DefaultID, "fp4"))
	require.NoError(t, err, "a decision frees a place")
	assert.True(t, created)
}
