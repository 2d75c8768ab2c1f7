package spend

import (
	"context"
	"time"

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

// Estimate is what a call is expected to add to its counters before it is
// made (one request; its tokens and cost): prompt tokens from the request
// body's size (bodyBytes) at the model's learned tokens per byte,
// completion tokens maxTokens or, when 0, the model's recent answers'
// average, priced by cost (false: the price is unknown, USD 0).
func (t *Tracker) Estimate(model string, bodyBytes int, maxTokens int64, cost func(prompt, completion int64) (float64, bool)) Amount {
	panic("unimplemented")
}

// Report is one scope's counters over one window, as GET /api/v1/spend
// answers them.
type Report struct {
	Scope       Scope        `json:"scope"`
	Window      Window       `json:"window"`
	Timezone    string       `json:"timezone"`
	WindowStart time.Time    `json:"windowStart"`
	ResetsAt    time.Time    `json:"resetsAt"`
	Items       []ReportItem `json:"items"`
}

// ReportItem is one value of the scope (its key: an app's name, a key's
// id, …; "" for the tenant) and its counters.
type ReportItem struct {
	Key string `json:"key"`
	Amount
}

// Report reads the tenant's counters of scope s over the current window w
// from the store, every replica's, after the runs recorded here are
// stored (sync), sorted by cost, highest first.
func (t *Tracker) Report(ctx context.Context, tenantID string, s Scope, w Window) (Report, error) {
	panic("unimplemented")
}
