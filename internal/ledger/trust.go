package ledger

// The trust states of an agent, visible to policies as agent.trust.
const (
	TrustUnverified = "unverified" // svc has not seen enough of it
	TrustTrusted    = "trusted"    // a long run of allowed calls
	TrustRestricted = "restricted" // repeatedly denied
)

// DefaultTrust is the trust state of an agent svc has just met.
const DefaultTrust = TrustUnverified

// How standing moves. An agent earns trust slowly and loses it fast:
//   - TrustAfter allowed calls in a row make an unverified agent trusted;
//   - a deny makes a trusted agent unverified, and RestrictAfter denies
//     (since it was last restored) make any agent restricted;
//   - RestoreAfter allowed calls in a row make a restricted agent
//     unverified again, its denies forgotten;
//   - a call held for approval breaks a run of allowed calls.
const (
	TrustAfter    = 20
	RestrictAfter = 3
	RestoreAfter  = 50
)

// Standing is what an agent's trust is computed from.
type Standing struct {
	Trust       string `json:"trust"`
	AllowStreak int    `json:"allowStreak"`
	Denies      int    `json:"denies"`
	// Decisions counts the decisions the standing has moved by. Of two
	// standings of one agent the one with more is the later: standings
	// reach the store by more than one path (with a run's batch, or at
	// once for a traced tool call), and not always in the order they
	// were reached.
	Decisions int64 `json:"decisions"`
}

// NewStanding is the standing of an agent svc has just met.
func NewStanding() Standing { return Standing{Trust: DefaultTrust} }

// After returns the standing after a policy decision on one of the agent's
// calls ("allow", "deny" or "require_approval").
func (s Standing) After(decision string) Standing {
	s.Decisions++
	switch decision {
	case "allow":
		s.AllowStreak++
		switch {
		case s.Trust == TrustUnverified && s.AllowStreak >= TrustAfter:
			s.Trust = TrustTrusted
		case s.Trust == TrustRestricted && s.AllowStreak >= RestoreAfter:
			s.Trust, s.AllowStreak, s.Denies = TrustUnverified, 0, 0
		}
	case "deny":
		s.AllowStreak = 0
		s.Denies++
		switch {
		case s.Denies >= RestrictAfter:
			s.Trust = TrustRestricted
		case s.Trust == TrustTrusted:
			s.Trust = TrustUnverified
		}
	default:
		s.AllowStreak = 0
	}
	return s
}

// TrustMayHaveMoved reports whether the decision that left an agent at s
// may have changed its trust, for one that does not know the standing
// before (replicas moving a shared standing tell each other of these):
// true whenever it did, and otherwise only at a few points of an agent's
// history — a deny short of restriction (at most RestrictAfter-1 between
// two restorations), and a trusted agent's streak reaching TrustAfter again
// after a held call.
func (s Standing) TrustMayHaveMoved(decision string) bool {
	switch decision {
	case "allow":
		// Only a restoration leaves an allowed call's streak at 0.
		return s.Trust == TrustTrusted && s.AllowStreak == TrustAfter || s.Trust == TrustUnverified && s.AllowStreak == 0
	case "deny":
		return s.Denies <= RestrictAfter
	}
	return false
}
