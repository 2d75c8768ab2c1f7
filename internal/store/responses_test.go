package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func TestDeletedResponsesAreTenantScoped(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	mine := newRun(tenant.DefaultID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	theirs := newRun(other.ID, time.Now(), ledger.RouteLive, ledger.StatusOK, "")
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{mine, theirs}))

	deleted, err := s.ResponseDeleted(ctx, tenant.DefaultID, mine.Run.ID)
	require.NoError(t, err)
	assert.False(t, deleted)
	ok, err := s.DeleteResponse(ctx, tenant.DefaultID, mine.Run.ID, time.Now())
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = s.DeleteResponse(ctx, tenant.DefaultID, mine.Run.ID, time.Now())
	require.NoError(t, err)
	assert.False(t, ok, "already deleted")
	deleted, err = s.ResponseDeleted(ctx, tenant.DefaultID, mine.Run.ID)
	require.NoError(t, err)
	assert.True(t, deleted)
	_, err = s.Run(ctx, tenant.DefaultID, mine.Run.ID)
	assert.NoError(t, err, "the run stays")

	ok, err = s.DeleteResponse(ctx, tenant.DefaultID, theirs.Run.ID, time.Now())
	require.NoError(t, err)
	assert.False(t, ok, "another tenant's run is none of ours")
	deleted, err = s.ResponseDeleted(ctx, other.ID, theirs.Run.ID)
	require.NoError(t, err)
	assert.False(t, deleted)
	deleted, err = s.ResponseDeleted(ctx, other.ID, mine.Run.ID)
	require.NoError(t, err)
	assert.False(t, deleted)
}
