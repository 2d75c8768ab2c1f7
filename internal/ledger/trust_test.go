package ledger

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStanding(t *testing.T) {
	after := func(s Standing, decision string, n int) Standing {
		for range n {
			s = s.After(decision)
		}
		return s
	}
	s := NewStanding()
	assert.Equal(t, TrustUnverified, after(s, "allow", TrustAfter-1).Trust)
	trusted := after(s, "allow", TrustAfter)
	assert.Equal(t, TrustTrusted, trusted.Trust)

	held := after(s, "allow", TrustAfter-1).After("require_approval")
	assert.Equal(t, TrustUnverified, after(held, "allow", TrustAfter-1).Trust, "a held call breaks the run")

	demoted := trusted.After("deny")
	assert.Equal(t, TrustUnverified, demoted.Trust, "one deny costs a trusted agent its trust")
	restricted := after(demoted, "deny", RestrictAfter-1)
	assert.Equal(t, TrustRestricted, restricted.Trust)
	assert.Equal(t, TrustRestricted, after(restricted, "allow", RestoreAfter-1).Trust)
	restored := after(restricted, "allow", RestoreAfter)
	assert.Equal(t, TrustUnverified, restored.Trust)
	assert.Zero(t, restored.AllowStreak)
	assert.Zero(t, restored.Denies, "restored, with its denies forgotten")
	assert.Equal(t, int64(TrustAfter+RestrictAfter+RestoreAfter), restored.Decisions, "every decision counted")
}

// Whenever a decision changes an agent's trust, the standing it leaves
// says so; it says so rarely otherwise.
func TestTrustMayHaveMoved(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := NewStanding()
	moved, said := 0, 0
	for range 20_000 {
		d := "allow"
		switch rng.IntN(40) {
		case 0:
			d = "deny"
		case 1:
			d = "require_approval"
		}
		next := s.After(d)
		if next.Trust != s.Trust {
			moved++
			assert.True(t, next.TrustMayHaveMoved(d), "%+v after %s from %+v", next, d, s)
		}
		if next.TrustMayHaveMoved(d) {
			said++
		}
		s = next
	}
	assert.Positive(t, moved)
	assert.Less(t, said, 3*moved, "not on every decision")
}
