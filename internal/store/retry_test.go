package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// Replicas creating the same admin together report one creation: a
// transaction run again after losing to another does not keep what its
// failed attempt set.
func TestEnsureAdminTogetherCreatesOnce(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	a, b := storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for round := range 10 {
		var created atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				u := accounts.NewUser{User: accounts.User{ID: fmt.Sprintf("u_%d_%d", round, i), Email: fmt.Sprintf("admin%d@example.com", round),
					Role: "admin", EmailVerified: true, CreatedAt: at}, PasswordHash: "x", TenantID: tenant.DefaultID, OrgRole: "owner"}
				ok, err := s.EnsureAdmin(ctx, u)
				assert.NoError(t, err)
				if ok {
					created.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, created.Load(), "round %d: one of the callers created the admin", round)
	}
}
