package gateway

import (
	"context"

	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/internal/spend"
)

// Spend counts what calls cost, for the chat rules and budgets that read
// it: every recorded run is counted, and a call decided on its spend is
// counted at its estimate while it is in flight, so that a burst of calls
// sees itself.
type Spend interface {
	// Admit decides on a call of who with its spend in hand (see
	// spend.Tracker.Admit): decide's refusal returns a nil Reservation,
	// an admitted call's estimate is in flight until its run is recorded
	// or the Reservation released.
	Admit(ctx context.Context, who spend.Who, estimate spend.Amount, decide func(policy.Spend) (admit bool, err error)) (*spend.Reservation, error)
	// Recorded counts a run about to be recorded, and ends its call's
	// reservation (nil for none).
	Recorded(run *ledger.Run, r *spend.Reservation)
	// Estimate is what a call is expected to add to its counters.
	Estimate(model string, bodyBytes int, maxTokens int64, cost func(prompt, completion int64) (float64, bool)) spend.Amount
}

var _ Spend = (*spend.Tracker)(nil)

// estimate is what the call is expected to add to its counters, priced
// at its first candidate provider's prices (no attempt is made yet); its
// cost is kept on the call for the rules. Zero without a tracker.
func (g *Gateway) estimate(c *call) spend.Amount {
	if g.spend == nil {
		return spend.Amount{}
	}
	a := g.spend.Estimate(c.req.Model, len(c.req.Body), int64(c.req.MaxTokens), func(prompt, completion int64) (float64, bool) {
		return g.router.Cost(c.plan, pricing.Tokens{Prompt: prompt, Completion: completion})
	})
	c.estimatedUSD = a.USD
	return a
}

// decideChat puts the request before the chat rules and the tenant's
// budgets. Where they read spend, it is judged inside the tracker's
// admission, one call of the tenant at a time, and what the decision
// writes (approval, standing, audit, webhook) is done after, outside it;
// an admitted call keeps its reservation until its run is recorded
// (finish) or the call ends without one (end).
func (g *Gateway) decideChat(ctx context.Context, c *call, estimate spend.Amount, needsSpend bool) (governance.Decision, error) {
	in := &policy.Input{Request: c.policyRequest()}
	call := governance.Call{ID: c.id, RunID: c.run.ID, Target: policy.Chat, Describe: c.describeChat}
	if !needsSpend || g.spend == nil {
		return g.governor.Decide(ctx, call, in)
	}
	g.governor.Prepare(ctx, call, in)
	var j governance.Judgment
	r, err := g.spend.Admit(ctx, spend.WhoOf(c.run), estimate, func(s policy.Spend) (bool, error) {
		in.Spend = s
		var err error
		j, err = g.governor.Judge(ctx, call, in)
		return err == nil && !j.Enforced, err
	})
	if err != nil {
		return governance.Decision{}, err
	}
	c.reservation, c.spent = r, &in.Spend
	return g.governor.Settle(ctx, j)
}

// recorded counts the call's run, about to be recorded, and ends its
// reservation.
func (g *Gateway) recorded(c *call) {
	if g.spend == nil {
		return
	}
	g.spend.Recorded(c.run, c.reservation)
	c.reservation = nil
}

// releaseReservation ends the reservation of a call that ends without a
// recorded run (a panic on its way), so that its estimate does not stay
// in flight for good.
func (g *Gateway) releaseReservation(c *call) {
	if c.reservation != nil {
		g.release(c.reservation)
		c.reservation = nil
	}
}
