// Package spend keeps what calls cost: counters of USD, tokens and
// requests per tenant, app, key, agent and subject over the current hour,
// day and calendar month, and the budgets that limit them. Counters are
// added to in the same transaction that stores a run, so they survive a
// restart and are shared by every replica of one database; a process adds
// the calls it has in flight (at their estimated cost) and the runs it
// recorded and has not yet stored, so that a burst of calls sees itself.
// Budgets are compiled into policy rules (budget.go) and evaluated with the
// policy files' rules, their verdicts on the run like any other's.
package spend

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/ledger"
)

// Scope is what a counter counts for: the whole tenant, or one app, API
// key, agent or subject of it.
type Scope string

// The scopes.
const (
	Tenant  Scope = "tenant"
	App     Scope = "app"
	Key     Scope = "key"
	Agent   Scope = "agent"
	Subject Scope = "subject"
)

// Scopes lists every scope, in the order the API shows them.
var Scopes = []Scope{Tenant, App, Key, Agent, Subject}

// Window is the period a counter covers: the current hour, day or
// calendar month, in the tenant's time zone.
type Window string

// The windows.
const (
	Hour  Window = "hour"
	Day   Window = "day"
	Month Window = "month"
)

// Windows lists every window, shortest first.
var Windows = []Window{Hour, Day, Month}

// Start is the start of the window w that holds t, in loc.
func (w Window) Start(t time.Time, loc *time.Location) time.Time {
	lt := t.In(loc)
	switch w {
	case Hour:
		// Back from t by the local minutes, not time.Date of the local
		// hour: in the hour a clock set back repeats, that would name the
		// first one, which already ended.
		return t.Add(-time.Duration(lt.Minute())*time.Minute - time.Duration(lt.Second())*time.Second -
			time.Duration(lt.Nanosecond())).In(loc)
	case Day:
		return time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, loc)
	default:
		return time.Date(lt.Year(), lt.Month(), 1, 0, 0, 0, 0, loc)
	}
}

// End is when the window w that starts at start ends: the next one's start.
func (w Window) End(start time.Time, loc *time.Location) time.Time {
	st := start.In(loc)
	switch w {
	case Hour:
		return start.Add(time.Hour)
	case Day:
		return time.Date(st.Year(), st.Month(), st.Day()+1, 0, 0, 0, 0, loc)
	default:
		return time.Date(st.Year(), st.Month()+1, 1, 0, 0, 0, 0, loc)
	}
}

// Amount is what a counter holds. Cache and artifact hits cost nothing and
// are counted apart from the requests a provider answered.
type Amount struct {
	USD      float64 `json:"usd"`
	Tokens   int64   `json:"tokens"`
	Requests int64   `json:"requests"`
	Hits     int64   `json:"hits"`
}

// Add adds b to a.
func (a *Amount) Add(b Amount) {
	a.USD += b.USD
	a.Tokens += b.Tokens
	a.Requests += b.Requests
	a.Hits += b.Hits
}

// Sub takes b from a.
func (a *Amount) Sub(b Amount) {
	a.USD -= b.USD
	a.Tokens -= b.Tokens
	a.Requests -= b.Requests
	a.Hits -= b.Hits
}

// Zero reports whether a counts nothing.
func (a Amount) Zero() bool { return a == Amount{} }

// Counter names one counter of a tenant: a scope's value (the app's name,
// the key's id, "" for the tenant) over the window starting at Start (Unix
// milliseconds).
type Counter struct {
	Scope  Scope
	Key    string
	Window Window
	Start  int64
}

// Delta is an amount added to one counter of one tenant.
type Delta struct {
	TenantID string
	Counter
	Amount
}

// AmountOf is what a run adds to its counters: a live call (answered or
// failed) one request, its tokens and its cost; an answer from the exact
// cache or an artifact one hit; a blocked call nothing, unless it was
// blocked after the provider answered (a tool rule refused the answer's
// tool calls): then the provider's tokens and cost were spent, and count.
func AmountOf(run *ledger.Run) Amount {
	switch run.Route {
	case ledger.RouteBlocked:
		if run.CostUSD == 0 && run.TotalTokens == 0 {
			return Amount{}
		}
	case ledger.RouteExactCache, ledger.RouteArtifact:
		return Amount{Hits: 1}
	}
	return Amount{USD: run.CostUSD, Tokens: run.TotalTokens, Requests: 1}
}

// Who is whom a call counts for: its tenant, and the value of each scope
// (empty where the call names none: no counter of that scope moves).
type Who struct {
	TenantID string
	App      string
	KeyID    string
	Agent    string
	Subject  string
}

// WhoOf is whom a run counts for.
func WhoOf(run *ledger.Run) Who {
	return Who{TenantID: run.TenantID, App: run.App, KeyID: run.KeyID, Agent: run.Agent, Subject: run.Subject}
}

// Value is who's value of scope s; "" for the tenant scope, and where the
// call names none.
func (w Who) Value(s Scope) string {
	switch s {
	case App:
		return w.App
	case Key:
		return w.KeyID
	case Agent:
		return w.Agent
	case Subject:
		return w.Subject
	}
	return ""
}

// Counts reports whether a call of who moves the counters of scope s: the
// tenant's always, another scope's when the call names a value of it.
func (w Who) Counts(s Scope) bool { return s == Tenant || w.Value(s) != "" }

// Counters are the counters a call of who at t moves, in loc's windows.
func (w Who) Counters(t time.Time, loc *time.Location) []Counter {
	out := make([]Counter, 0, len(Scopes)*len(Windows))
	for _, s := range Scopes {
		if !w.Counts(s) {
			continue
		}
		for _, win := range Windows {
			out = append(out, Counter{Scope: s, Key: w.Value(s), Window: win, Start: win.Start(t, loc).UnixMilli()})
		}
	}
	return out
}

// Deltas are what a run adds to each of its counters, in loc's windows
// (the run counts in the windows of its start); nil for a run that counts
// nothing.
func Deltas(run *ledger.Run, loc *time.Location) []Delta {
	a := AmountOf(run)
	if a.Zero() {
		return nil
	}
	counters := WhoOf(run).Counters(run.CreatedAt, loc)
	out := make([]Delta, len(counters))
	for i, c := range counters {
		out[i] = Delta{TenantID: run.TenantID, Counter: c, Amount: a}
	}
	return out
}

// Zones gives a tenant's time zone (the timezone setting; UTC by
// default). A tenant whose setting cannot be read counts in UTC.
type Zones interface {
	Zone(ctx context.Context, tenantID string) *time.Location
}

// UTC is Zones that is always UTC.
type UTC struct{}

// Zone implements Zones.
func (UTC) Zone(context.Context, string) *time.Location { return time.UTC }

// Store keeps the counters, the budgets and the soft budgets' alerts. The
// counters move where runs are stored (the store applies Deltas in the
// transaction that inserts the runs), each row also keyed by the replica
// (process) that stored it, so that a process can leave out what it
// counts in memory.
type Store interface {
	// SumCounters sums each counter of the tenant over every replica but
	// except ("" sums every replica's); a counter with nothing stored is
	// absent.
	SumCounters(ctx context.Context, tenantID string, counters []Counter, except string) (map[Counter]Amount, error)
	// ListCounters sums, over every replica, the counters of the tenant's
	// scope s and window w that start at start, by the scope's value.
	ListCounters(ctx context.Context, tenantID string, s Scope, w Window, start int64) (map[string]Amount, error)

	// Budgets lists the tenant's budgets, in the order they were set.
	Budgets(ctx context.Context, tenantID string) ([]Budget, error)
	// ReplaceBudgets makes list the tenant's budgets.
	ReplaceBudgets(ctx context.Context, tenantID string, list []Budget) error

	// ClaimAlert records that the tenant's budget reached percent of its
	// limit in the window starting at start: true the first time, on any
	// replica, false after.
	ClaimAlert(ctx context.Context, tenantID, budgetID string, start int64, percent int) (bool, error)
}
