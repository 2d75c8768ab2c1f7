package spend

import (
	"context"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
)

// Tracker is what this process knows of spend on top of the store: the
// calls it has in flight (their estimates), the runs it recorded since it
// started (the store's rows of this replica are left out of its reads, so
// nothing counts twice), and how long each model's answers run, for the
// estimates.
type Tracker struct {
}

// Reservation is a call in flight, counted at its estimate until its run
// is recorded (Recorded) or it ends without one (Release).
type Reservation struct {
}

// Admit decides on a call of who with its spend in hand: the counters of
// each scope, with the calls in flight, are passed to decide, and when
// decide admits the call its estimate is counted as in flight until its
// run is recorded. Calls of one tenant are decided one at a time, so that
// a burst cannot all pass a limit together. A nil Reservation is returned
// with decide's refusal.
func (t *Tracker) Admit(ctx context.Context, who Who, estimate Amount, decide func(policy.Spend) (admit bool, err error)) (*Reservation, error) {
	panic("unimplemented")
}

// Recorded counts a run just recorded (before the recorder stores it) and
// ends its call's reservation, which may be nil.
func (t *Tracker) Recorded(run *ledger.Run, r *Reservation) {
	panic("unimplemented")
}

// Release ends a reservation whose call ends without a run; a nil or
// ended one is nothing.
func (r *Reservation) Release() {}
