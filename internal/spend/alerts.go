package spend

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/audit"
)

// The thresholds budgets tell of, in percent of a limit: a soft budget's
// only effect, and a hard budget's warning that it will refuse, then that
// it refuses.
var thresholds = [...]int{80, 100}

// softCheck is a recorded run whose tenant has soft budgets: whom it
// counted for, and when (its windows).
type softCheck struct {
	who Who
	at  time.Time
}

// alertKey is one threshold of one budget's counter in one window.
type alertKey struct {
	tenantID, claim string
	start           int64
	percent         int
}

// monthMS is longer than any window.
const monthMS = 32 * 24 * 3600 * 1000

// maxClaimed bounds the thresholds remembered as claimed; past it, those of
// windows that started over a month ago are forgotten.
const maxClaimed = 10_000

// AlertActor is the actor of the audit entries of soft budgets: svc
// itself, not a person.
const AlertActor = "svc"

// watchesSoft reports whether a run of the tenant may bring a budget to a
// threshold: the tenant has budgets, or they are not read yet.
func (t *Tracker) watchesSoft(tenantID string) bool {
	if t.o.Budgets == nil {
		return false
	}
	c, ok := t.o.Budgets.peek(tenantID)
	return !ok || (c != nil && len(c.Soft)+len(c.Hard) > 0)
}

// Wait returns once the soft budgets of the runs recorded so far are
// checked and their alerts sent (or queued); for a clean stop.
func (t *Tracker) Wait() { t.alerting.Wait() }

// checkSoft works through the tenant's recorded runs waiting for their
// soft budgets to be checked, off the request path, until none is left.
func (t *Tracker) checkSoft(tenantID string, ts *tenantSpend) {
	defer t.alerting.Done()
	for {
		ts.mu.Lock()
		batch := ts.pending
		ts.pending = nil
		if len(batch) == 0 {
			ts.checking = false
			ts.mu.Unlock()
			return
		}
		ts.mu.Unlock()
		if err := t.alertBatch(context.Background(), tenantID, ts, batch); err != nil {
			t.o.Logger.Error("checking soft budgets failed", "tenant", tenantID, "error", err)
		}
	}
}

// watched is one soft budget's counter that a batch of runs moved.
type watched struct {
	b       Budget
	counter Counter
}

// alertBatch checks the soft budgets covering the runs of batch, and sends
// each threshold a counter reached that no replica has claimed yet.
func (t *Tracker) alertBatch(ctx context.Context, tenantID string, ts *tenantSpend, batch []softCheck) error {
	c, err := t.o.Budgets.Compiled(ctx, tenantID)
	if err != nil || c == nil || len(c.Soft)+len(c.Hard) == 0 {
		return err
	}
	budgets := append(append(make([]Budget, 0, len(c.Soft)+len(c.Hard)), c.Soft...), c.Hard...)
	loc := t.o.Zones.Zone(ctx, tenantID)
	var list []watched
	seen := map[watched]bool{}
	var (
		counters []Counter
		ends     []int64
	)
	for _, run := range batch {
		for _, b := range budgets {
			v := run.who.Value(b.Scope)
			if !run.who.Counts(b.Scope) || (b.Match != "" && v != b.Match) {
				continue
			}
			w := watched{b: b, counter: Counter{Scope: b.Scope, Key: v, Window: b.Window, Start: b.Window.Start(run.at, loc).UnixMilli()}}
			key := watched{b: Budget{ID: b.ID}, counter: w.counter}
			if seen[key] {
				continue
			}
			seen[key] = true
			list = append(list, w)
			counters = append(counters, w.counter)
			ends = append(ends, b.Window.End(time.UnixMilli(w.counter.Start).In(loc), loc).UnixMilli())
		}
	}
	if len(list) == 0 {
		return nil
	}
	var others map[Counter]Amount
	if t.o.Shared {
		if others, err = t.o.Store.SumCounters(ctx, tenantID, counters, t.o.Replica); err != nil {
			return err
		}
	} else if err := t.loadOthers(ctx, tenantID, ts, counters, ends); err != nil {
		return err
	}
	spent := make([]Amount, len(list))
	ts.mu.Lock()
	for i, w := range list {
		ce := ts.cell(w.counter, ends[i])
		spent[i] = ce.others
		if others != nil {
			spent[i] = others[w.counter]
		}
		spent[i].Add(ce.recorded)
	}
	ts.mu.Unlock()
	for i, w := range list {
		for _, p := range thresholds {
			if reached(w.b, spent[i], p) {
				t.alert(ctx, tenantID, w, spent[i], p, loc)
			}
		}
	}
	return nil
}

// reached reports whether spent is at percent of any of b's limits.
func reached(b Budget, spent Amount, percent int) bool {
	p := float64(percent)
	return b.LimitUSD != nil && spent.USD*100 >= *b.LimitUSD*p*(1-1e-9) ||
		b.LimitTokens != nil && spent.Tokens*100 >= *b.LimitTokens*int64(percent) ||
		b.LimitRequests != nil && spent.Requests*100 >= *b.LimitRequests*int64(percent)
}

// alert claims the threshold and, when this replica is the first to,
// sends the webhook event and writes the audit entry. A budget of each
// value of its scope claims per value ("<id>/<value>").
func (t *Tracker) alert(ctx context.Context, tenantID string, w watched, spent Amount, percent int, loc *time.Location) {
	claim := w.b.ID
	if w.b.Scope != Tenant && w.b.Match == "" {
		claim += "/" + w.counter.Key
	}
	k := alertKey{tenantID: tenantID, claim: claim, start: w.counter.Start, percent: percent}
	t.claimedMu.Lock()
	_, known := t.claimed[k]
	t.claimedMu.Unlock()
	if known {
		return
	}
	won, err := t.o.Store.ClaimAlert(ctx, tenantID, claim, w.counter.Start, percent)
	if err != nil {
		t.o.Logger.Error("claiming a budget alert failed", "tenant", tenantID, "budget", w.b.ID, "error", err)
		return
	}
	t.remember(k)
	if !won {
		return
	}
	start := time.UnixMilli(w.counter.Start).In(loc)
	data := map[string]any{
		"budget": w.b.ID, "kind": w.b.Kind, "scope": w.b.Scope, "window": w.b.Window, "percent": percent,
		"spent": spent, "limit": w.b.limits(),
		"windowStart": start.UTC().Format(time.RFC3339), "resetsAt": w.b.Window.End(start, loc).UTC().Format(time.RFC3339),
	}
	if w.b.Scope != Tenant {
		data["match"] = w.counter.Key
	}
	// The trail first: whoever is told can find the event in it.
	if t.o.Audit != nil {
		t.o.Audit.Record(ctx, audit.Event{TenantID: tenantID, Actor: AlertActor, Action: EventThreshold,
			Decision: audit.Allow, Target: RulePrefix + w.b.ID, Details: data})
	}
	if t.o.Notifier != nil {
		t.o.Notifier.Notify(ctx, tenantID, EventThreshold, data)
	}
}

// remember notes a claimed threshold, so that the store is not asked again.
func (t *Tracker) remember(k alertKey) {
	t.claimedMu.Lock()
	defer t.claimedMu.Unlock()
	if len(t.claimed) >= maxClaimed {
		old := t.o.Now().UnixMilli() - monthMS
		for x := range t.claimed {
			if x.start < old {
				delete(t.claimed, x)
			}
		}
		if len(t.claimed) >= maxClaimed {
			clear(t.claimed) // the store still answers who claimed
		}
	}
	t.claimed[k] = struct{}{}
}
