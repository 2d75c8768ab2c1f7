package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// A caller's pending approvals are capped on its total across replicas:
// approvals opened at once through three stores on one PostgreSQL database
// are created up to the limit and refused past it, never more.
func TestPendingApprovalLimitHoldsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	stores := []*store.Store{storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)}
	const limit = 4
	var created, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 9 {
		s := stores[i%len(stores)]
		wg.Go(func() {
			a := &approval.Approval{ID: "apr_" + strconv.Itoa(i), TenantID: tenant.DefaultID, Status: approval.Pending, Target: "web",
				Fingerprint: "fp" + strconv.Itoa(i), Request: json.RawMessage(`{}`), CreatedAt: time.Now(),
				RequestedBy: approval.Requester{Actor: "key:k"}}
			_, ok, err := s.OpenApproval(ctx, a, limit)
			switch {
			case errors.Is(err, approval.ErrPendingLimit):
				refused.Add(1)
			case assert.NoError(t, err) && ok:
				created.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, limit, created.Load())
	assert.EqualValues(t, 9-limit, refused.Load())
}
