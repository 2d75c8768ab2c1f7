package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// The database moves a standing exactly as ledger.Standing.After does,
// through every state: trusted, restricted, restored.
func TestMoveAgentStandingIsAfter(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	at := time.UnixMilli(1_700_000_000_000)
	rng := rand.New(rand.NewPCG(1, 2))
	// Long runs of allows, so that trust is earned and restored; bursts of
	// denies, so that it is lost.
	var decisions []string
	for range 40 {
		d := []string{"allow", "deny", "require_approval"}[rng.IntN(3)]
		n := 1 + rng.IntN(4)
		if d == "allow" {
			n = rng.IntN(2 * ledger.RestoreAfter)
		}
		for range n {
			decisions = append(decisions, d)
		}
	}
	want := ledger.NewStanding()
	seen := map[string]bool{}
	for i, d := range decisions {
		want = want.After(d)
		got, err := s.MoveAgentStanding(ctx, tenant.DefaultID, "bot", d, at)
		require.NoError(t, err)
		require.Equal(t, want, got, "decision %d (%s)", i, d)
		seen[got.Trust] = true
	}
	assert.Len(t, seen, 3, "the decisions took the agent through every trust state")
	stored, ok, err := s.AgentStanding(ctx, tenant.DefaultID, "bot")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, want, stored)
	agents, err := s.ListAgents(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, agents, 1, "the first move met the agent")
	assert.Equal(t, int64(0), agents[0].RunCount, "a decision is not a run")

	other, ok, err := s.AgentStanding(ctx, "another-tenant", "bot")
	require.NoError(t, err)
	assert.False(t, ok, "another tenant's agent of the same name is another agent")
	assert.Equal(t, ledger.NewStanding(), other)
}

// Two replicas move one agent's standing at once: every decision counts
// once, none is lost to another's write.
func TestConcurrentMovesOfOneStandingEachCount(t *testing.T) {
	ctx := context.Background()
	var replicas []*store.Store
	if storetest.Postgres() {
		dsn := storetest.DSN(t)
		replicas = []*store.Store{storetest.OpenAt(t, dsn), storetest.OpenAt(t, dsn)}
	} else {
		path := filepath.Join(t.TempDir(), "svc.db")
		replicas = []*store.Store{storetest.OpenAt(t, path), storetest.OpenAt(t, path)}
	}
	const workers, moves = 4, 10 // per replica
	move := func(decision string) {
		var wg sync.WaitGroup
		for _, s := range replicas {
			for range workers {
				wg.Go(func() {
					for range moves {
						_, err := s.MoveAgentStanding(ctx, tenant.DefaultID, "bot", decision, time.Now())
						assert.NoError(t, err)
					}
				})
			}
		}
		wg.Wait()
	}
	const n = len("ab") * workers * moves
	move("allow")
	st, _, err := replicas[1].AgentStanding(ctx, tenant.DefaultID, "bot")
	require.NoError(t, err)
	assert.Equal(t, ledger.Standing{Trust: ledger.TrustTrusted, AllowStreak: n, Decisions: int64(n)}, st)

	move("deny")
	st, _, err = replicas[0].AgentStanding(ctx, tenant.DefaultID, "bot")
	require.NoError(t, err)
	assert.Equal(t, ledger.Standing{Trust: ledger.TrustRestricted, Denies: n, Decisions: 2 * int64(n)}, st)
}

// BenchmarkMoveAgentStanding is what a decision on an agent's call costs
// replicas on PostgreSQL (SVC_TEST_DB=postgres): one statement, on one agent
// (its row's lock taken by each move in turn) or on many.
func BenchmarkMoveAgentStanding(b *testing.B) {
	ctx := context.Background()
	s := storetest.Open(b)
	for _, agents := range []int{1, 1000} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			names := make([]string, agents)
			for i := range names {
				names[i] = fmt.Sprintf("bench-%d-%d", agents, i)
			}
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := s.MoveAgentStanding(ctx, tenant.DefaultID, names[i%agents], "allow", time.Now()); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
	}
}
