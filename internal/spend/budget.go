package spend

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/policy"
)

// Kind says what a budget does at its limit.
type Kind string

// The kinds of budget.
const (
	// Hard refuses the scope's calls once its counter reaches the limit:
	// 429 budget_exceeded, in every mode.
	Hard Kind = "hard"
	// Soft refuses nothing: a webhook event and an audit entry tell of its
	// counter reaching 80% and 100% of the limit, once per window.
	Soft Kind = "soft"
)

// Budget is a limit on one scope's spend over one window. A budget of a
// scope other than the tenant limits one value of it (Match: an app's
// name, a key's id, an agent's name, a subject), or, without Match, each
// value separately (every app its own limit). At least one limit is set;
// the budget is reached when any is.
type Budget struct {
	ID            string   `json:"id"`
	Scope         Scope    `json:"scope"`
	Match         string   `json:"match,omitempty"`
	Window        Window   `json:"window"`
	Kind          Kind     `json:"kind"`
	LimitUSD      *float64 `json:"limitUsd,omitempty"`
	LimitTokens   *int64   `json:"limitTokens,omitempty"`
	LimitRequests *int64   `json:"limitRequests,omitempty"`
	Description   string   `json:"description,omitempty"`
}

// RulePrefix starts the id of the rule a budget is compiled into:
// "budget:" and the budget's id.
const RulePrefix = "budget:"

// CodeExceeded is the error code of a call a hard budget refuses (429).
const CodeExceeded = "budget_exceeded"

// EventThreshold is the webhook event (and audit action) of a soft budget
// reaching 80% or 100% of its limit.
const EventThreshold = "budget.threshold"

// Compiled is a tenant's budgets ready for the request path: the hard
// ones as chat rules, evaluated beside the policy files' (Set is nil
// without any), the soft ones for the alerts.
type Compiled struct {
	Set  *policy.Set
	Hard []Budget
	Soft []Budget
}

// Exceeded is the error a call denied by the budget rules of v answers
// with: 429 budget_exceeded, naming each budget and when its window resets
// (the Retry-After: the soonest of them), in loc. Nil when no budget rule
// denied.
func (c *Compiled) Exceeded(v policy.Verdict, now time.Time, loc *time.Location) *errs.Error {
	panic("unimplemented")
}

// Validate checks a budget, filling the defaults (kind hard; an id made
// of the scope, match and window when none is given), and names the
// offending field in an errs.Invalid error.
func (b *Budget) Validate() error {
	panic("unimplemented")
}

// Budgets is every tenant's budgets: read and written through the store,
// compiled once per change and cached per tenant (dropped on a change
// here or, through Replicate, on another replica).
type Budgets struct {
}

// List returns the tenant's budgets.
func (b *Budgets) List(ctx context.Context, tenantID string) ([]Budget, error) {
	panic("unimplemented")
}

// Replace validates list (every budget, ids distinct) and makes it the
// tenant's budgets, audited as budgets.updated by actor; it returns the
// budgets as stored (defaults filled).
func (b *Budgets) Replace(ctx context.Context, tenantID, actor string, list []Budget) ([]Budget, error) {
	panic("unimplemented")
}

// Put validates one budget and sets it: it replaces the budget of its id,
// or joins the list. It returns the tenant's budgets.
func (b *Budgets) Put(ctx context.Context, tenantID, actor string, one Budget) ([]Budget, error) {
	panic("unimplemented")
}

// Delete removes the tenant's budget id; errs.NotFound when there is none.
func (b *Budgets) Delete(ctx context.Context, tenantID, actor, id string) error {
	panic("unimplemented")
}

// Compiled returns the tenant's budgets compiled; nil when it has none.
func (b *Budgets) Compiled(ctx context.Context, tenantID string) (*Compiled, error) {
	panic("unimplemented")
}
