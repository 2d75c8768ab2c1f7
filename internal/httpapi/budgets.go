package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/spend"
)

// BudgetBook keeps each tenant's budgets: spend.Budgets. Replace, Put and
// Delete validate (errs.Invalid naming the field) and audit the change as
// made by actor; Delete answers errs.NotFound for an id the tenant has no
// budget of.
type BudgetBook interface {
	List(ctx context.Context, tenantID string) ([]spend.Budget, error)
	Replace(ctx context.Context, tenantID, actor string, list []spend.Budget) ([]spend.Budget, error)
	Put(ctx context.Context, tenantID, actor string, one spend.Budget) ([]spend.Budget, error)
	Delete(ctx context.Context, tenantID, actor, id string) error
}

// SpendReports reads a tenant's spend counters: spend.Tracker.
type SpendReports interface {
	Report(ctx context.Context, tenantID string, s spend.Scope, w spend.Window) (spend.Report, error)
}

var (
	_ BudgetBook   = (*spend.Budgets)(nil)
	_ SpendReports = (*spend.Tracker)(nil)
)

// budgetsRequest is the body of PUT /api/v1/budgets that replaces the
// tenant's budgets; a body without "budgets" is one budget.
type budgetsRequest struct {
	Budgets []budgetInput `json:"budgets"`
}

// budgetInput is a budget as PUT reads it: what GET shows of its window
// and counter may come back with it, and is ignored, so that a list read
// can be edited and sent back whole.
// (spend.Budget's fields, not the struct embedded: a field of an
// embedded struct is named by its path in a decoding error.)
type budgetInput struct {
	ID            string       `json:"id"`
	Scope         spend.Scope  `json:"scope"`
	Match         string       `json:"match,omitempty"`
	Window        spend.Window `json:"window"`
	Kind          spend.Kind   `json:"kind"`
	LimitUSD      *float64     `json:"limitUsd,omitempty"`
	LimitTokens   *int64       `json:"limitTokens,omitempty"`
	LimitRequests *int64       `json:"limitRequests,omitempty"`
	Description   string       `json:"description,omitempty"`

	WindowStart json.RawMessage `json:"windowStart,omitempty"`
	ResetsAt    json.RawMessage `json:"resetsAt,omitempty"`
	Spent       json.RawMessage `json:"spent,omitempty"`
}

// budget is the input's budget.
func (b budgetInput) budget() spend.Budget {
	return spend.Budget{ID: b.ID, Scope: b.Scope, Match: b.Match, Window: b.Window, Kind: b.Kind,
		LimitUSD: b.LimitUSD, LimitTokens: b.LimitTokens, LimitRequests: b.LimitRequests, Description: b.Description}
}

// budgets are the inputs' budgets.
func budgets(in []budgetInput) []spend.Budget {
	out := make([]spend.Budget, len(in))
	for i, b := range in {
		out[i] = b.budget()
	}
	return out
}

// budgetList answers GET and PUT /api/v1/budgets.
type budgetList struct {
	Budgets []budgetView `json:"budgets"`
}

// budgetView is a budget as GET /api/v1/budgets shows it: with its
// current window, and what its counter holds where it names one counter
// (the tenant's, or one value's of another scope). PUT answers the
// budgets alone.
type budgetView struct {
	spend.Budget
	WindowStart *time.Time    `json:"windowStart,omitempty"`
	ResetsAt    *time.Time    `json:"resetsAt,omitempty"`
	Spent       *spend.Amount `json:"spent,omitempty"`
}

// listBudgets is GET /api/v1/budgets.
func (s *Server) listBudgets(w http.ResponseWriter, r *http.Request) error {
	tenantID := identity(r).TenantID
	list, err := s.Budgets.List(r.Context(), tenantID)
	if err != nil {
		return err
	}
	views, err := s.budgetViews(r.Context(), tenantID, list)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, budgetList{Budgets: views})
	return nil
}

// putBudgets is PUT /api/v1/budgets: {"budgets": [...]} replaces the
// tenant's budgets (an empty list clears them), a budget object alone
// replaces the budget of its id or joins the list.
func (s *Server) putBudgets(w http.ResponseWriter, r *http.Request) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	id := identity(r)
	var list []spend.Budget
	if isBudgetList(body) {
		var req budgetsRequest
		if err := decodeJSONBody(body, &req); err != nil {
			return err
		}
		if req.Budgets == nil {
			return errs.Invalidf("budgets", "budgets must be a list (an empty list clears the budgets)")
		}
		list, err = s.Budgets.Replace(r.Context(), id.TenantID, id.Actor(), budgets(req.Budgets))
	} else {
		var one budgetInput
		if err := decodeJSONBody(body, &one); err != nil {
			return err
		}
		list, err = s.Budgets.Put(r.Context(), id.TenantID, id.Actor(), one.budget())
	}
	if err != nil {
		return err
	}
	views := make([]budgetView, len(list))
	for i, b := range list {
		views[i] = budgetView{Budget: b}
	}
	writeJSON(w, http.StatusOK, budgetList{Budgets: views})
	return nil
}

// isBudgetList reports whether body is an object with the key "budgets",
// spelled so: the whole list. Anything else is read as one budget, whose
// decoding then names what is wrong with it.
func isBudgetList(body []byte) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(body, &keys) != nil {
		return false
	}
	_, ok := keys["budgets"]
	return ok
}

// deleteBudget is DELETE /api/v1/budgets/{id}: 204, or 404 for an id the
// tenant has no budget of.
func (s *Server) deleteBudget(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	if err := s.Budgets.Delete(r.Context(), id.TenantID, id.Actor(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// budgetViews are list's budgets with their current windows and counters,
// read with one report per scope and window. A budget of each value of a
// scope (no match) names no one counter: its window is read from the
// tenant's report, which has one item.
func (s *Server) budgetViews(ctx context.Context, tenantID string, list []spend.Budget) ([]budgetView, error) {
	type scopeWindow struct {
		scope  spend.Scope
		window spend.Window
	}
	reports := map[scopeWindow]spend.Report{}
	views := make([]budgetView, len(list))
	for i, b := range list {
		one := b.Scope == spend.Tenant || b.Match != ""
		k := scopeWindow{spend.Tenant, b.Window}
		if one {
			k.scope = b.Scope
		}
		rep, ok := reports[k]
		if !ok {
			var err error
			if rep, err = s.Spend.Report(ctx, tenantID, k.scope, k.window); err != nil {
				return nil, err
			}
			reports[k] = rep
		}
		views[i] = budgetView{Budget: b, WindowStart: &rep.WindowStart, ResetsAt: &rep.ResetsAt}
		if one {
			views[i].Spent = spentOf(rep, b)
		}
	}
	return views, nil
}

// spentOf is what the counter b names holds in rep: nothing when the
// report has no item of it.
func spentOf(rep spend.Report, b spend.Budget) *spend.Amount {
	key := b.Match
	if b.Scope == spend.Tenant {
		key = ""
	}
	for _, it := range rep.Items {
		if it.Key == key {
			return &it.Amount
		}
	}
	return &spend.Amount{}
}

// budgetInput reads every field of spend.Budget: a field added there and
// not here fails to compile.
var _ = spend.Budget(budgetInput{}.budget())
