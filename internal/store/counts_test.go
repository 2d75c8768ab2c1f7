package store_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// The approvals pending are counted across tenants; decided ones are not.
func TestCountPendingApprovals(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "other")
	require.NoError(t, err)
	n, err := s.CountPendingApprovals(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)

	var first approval.Approval
	for i, tenantID := range []string{tenant.DefaultID, tenant.DefaultID, other.ID} {
		a := &approval.Approval{ID: "apr_" + strconv.Itoa(i), TenantID: tenantID, Status: approval.Pending, Target: "web",
			Fingerprint: "fp" + strconv.Itoa(i), Request: json.RawMessage(`{}`), CreatedAt: time.Now()}
		got, created, err := s.OpenApproval(ctx, a, 10)
		require.NoError(t, err)
		require.True(t, created)
		if i == 0 {
			first = got
		}
	}
	n, err = s.CountPendingApprovals(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	now := time.Now()
	first.TenantID, first.Status, first.DecidedAt, first.DecidedBy = tenant.DefaultID, approval.Rejected, &now, "user:u"
	require.NoError(t, s.DecideApproval(ctx, &first))
	n, err = s.CountPendingApprovals(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}
