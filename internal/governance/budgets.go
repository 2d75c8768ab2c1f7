package governance

import (
	"context"
	"strings"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/spend"
)

// A tenant's hard budgets are chat rules (spend.Compiled.Set), evaluated
// in Decide on the same input as the policy files' chat rules: one
// verdict, the strongest effect winning, recorded, audited and counted
// like any other. What sets them apart is that a budget's deny stops the
// call in observe mode too (observe mode watches policies; a spending
// limit is the operator's, not the caller's to try), and that a call
// refused by budgets alone answers 429 budget_exceeded (BudgetError)
// rather than the 403 of a policy.

// Budgets gives a tenant's budgets compiled for the request path.
type Budgets interface {
	// Compiled returns the tenant's budgets compiled; nil when it has
	// none.
	Compiled(ctx context.Context, tenantID string) (*spend.Compiled, error)
}

var _ Budgets = (*spend.Budgets)(nil)

// BudgetsUnread is the id of the rule a chat verdict lists when the
// tenant's budgets could not be read: a deny that failed, so that the
// call is refused as on a policy error, never let through unmetered.
const BudgetsUnread = "budgets"

// judgeBudgets puts the request in before the tenant's budget rules and
// adds their results to v. It reports whether there were any to judge
// it (or the budgets could not be read).
func (g *Governor) judgeBudgets(ctx context.Context, tenantID string, in *policy.Input, v *policy.Verdict) bool {
	c, err := g.budgets.Compiled(ctx, tenantID)
	if err != nil {
		g.logger.Error("the tenant's budgets could not be read; the request is refused", "tenant", tenantID, "error", err)
		merge(v, policy.Verdict{Decision: policy.Deny, Rules: []policy.RuleResult{{ID: BudgetsUnread, Effect: policy.Deny,
			Reason: "the tenant's budgets apply to every request (the condition failed: they could not be read)",
			Error:  "the budgets could not be read"}}})
		return true
	}
	if c == nil || c.Set == nil || !c.Set.Has(policy.Chat) {
		return false
	}
	merge(v, c.Set.Evaluate(ctx, policy.Chat, in))
	return true
}

// merge adds the rules of w to v: the strongest effect wins.
func merge(v *policy.Verdict, w policy.Verdict) {
	v.Rules = append(v.Rules, w.Rules...)
	if w.Decision.Strength() > v.Decision.Strength() {
		v.Decision = w.Decision
	}
	v.AllowErrors += w.AllowErrors
}

// budgetDenied reports whether a budget rule denied v (matched, not
// failed).
func budgetDenied(v policy.Verdict) bool {
	for _, r := range v.Rules {
		if r.Effect == policy.Deny && r.Error == "" && strings.HasPrefix(r.ID, spend.RulePrefix) {
			return true
		}
	}
	return false
}

// deniedByBudgetsAlone reports whether budget rules denied v and no other
// rule denied it (matched or failed).
func deniedByBudgetsAlone(v policy.Verdict) bool {
	if !budgetDenied(v) {
		return false
	}
	for _, r := range v.Rules {
		if r.Effect == policy.Deny && !strings.HasPrefix(r.ID, spend.RulePrefix) {
			return false
		}
	}
	return true
}

// NeedsSpend reports whether a chat request of the tenant is to be
// decided with its spend in hand (policy.Input.Spend): a policy file's
// chat rule reads spend, or the tenant has hard budgets. Budgets that
// cannot be read need none: Decide refuses the request without them.
func (g *Governor) NeedsSpend(ctx context.Context, tenantID string) bool {
	if g.policies.Set().ReadsSpend() {
		return true
	}
	if g.budgets == nil {
		return false
	}
	c, err := g.budgets.Compiled(ctx, tenantID)
	return err == nil && c != nil && len(c.Hard) > 0
}

// refusedByBudgets reports whether budgets alone stop a call of id with
// verdict v: a budget rule denied it and, where policies are enforced, no
// other rule did (a policy's deny beside the budget's is the answer: the
// budget's reset would not let the call through).
func refusedByBudgets(id *auth.Identity, v policy.Verdict) bool {
	return budgetDenied(v) && (id.Mode != auth.Optimize || deniedByBudgetsAlone(v))
}

// BudgetError is the error a chat request whose verdict v stops it
// answers when budgets alone stop it (refusedByBudgets;
// spend.Compiled.ExceededBy: 429 budget_exceeded, naming the budgets, the
// limits reached, what was spent and when they reset). spent is the spend
// the request was judged with (nil: not judged on its spend; every limit
// is named, nothing spent). It is nil otherwise: the request answers
// BlockError.
func (g *Governor) BudgetError(ctx context.Context, id *auth.Identity, v policy.Verdict, spent *policy.Spend) *errs.Error {
	if g.budgets == nil || !refusedByBudgets(id, v) {
		return nil
	}
	c, err := g.budgets.Compiled(ctx, id.TenantID)
	if err != nil || c == nil {
		return nil // changed since the verdict, or unreadable now: the verdict's 403 still tells why
	}
	return c.ExceededBy(v, spent, g.now(), g.zones.Zone(ctx, id.TenantID))
}
