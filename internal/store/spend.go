package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/spend"
)

var _ spend.Store = (*Store)(nil)

// spendRetention is how long spend counters and budget alerts are kept
// after their window starts: past the end of the previous calendar month,
// whatever the tenant keeps of its runs.
const spendRetention = 70 * 24 * time.Hour

const (
	counterParams = 10
	// Rows per statement: a batch of maxRunRows runs moves at most 15 of
	// each, the rows of one tenant's runs far fewer.
	maxCounterRows = 256
	// spendUpsert ends the multi-row INSERT of counters: a row there adds.
	spendUpsert = ` ON CONFLICT (tenant_id, scope, period, start_ms, scope_key, replica) DO UPDATE SET
		usd = spend_counters.usd + excluded.usd, tokens = spend_counters.tokens + excluded.tokens,
		requests = spend_counters.requests + excluded.requests, hits = spend_counters.hits + excluded.hits`
)

// oneRunCounters is how many counters a run moves at most.
var oneRunCounters = len(spend.Scopes) * len(spend.Windows)

// counterRows is batchRows for the counters: up to one run's counters in
// one statement of their number, not six (a batch of one run, at low
// rates, is the common case), for a few more sizes kept.
func counterRows(left, maxRows int) int {
	if left <= oneRunCounters {
		return left
	}
	return batchRows(left, maxRows)
}

// SetSpend sets the time zones the counters' windows follow and the
// replica id the counters this store writes are tagged with; until it is
// called windows are UTC's and the replica is "". It may be called again
// (svc sets the zones before its journal's runs are restored, under no
// replica of its own, and its replica once they are).
func (s *Store) SetSpend(zones spend.Zones, replica string) {
	s.spend.Store(&spendTags{zones: zones, replica: replica})
}

// spendTags is what SetSpend set.
type spendTags struct {
	zones   spend.Zones
	replica string
}

// spendTagsNow is what SetSpend last set, or the defaults.
func (s *Store) spendTagsNow() *spendTags {
	if t := s.spend.Load(); t != nil {
		return t
	}
	return &spendTags{}
}

// counterKey is one row of spend_counters for this store's replica.
type counterKey struct {
	tenantID string
	spend.Counter
}

// spendGroup is the runs of one who in one hour of its tenant's zone: they
// move the same counters (an hour lies within its day and month).
type spendGroup struct {
	who  spend.Who
	hour int64
}

// spendArgs are the arguments of the counters' upsert for recs: the
// deltas of each group of runs that move the same counters (spend.Deltas
// of one of them, with the group's amount), in its tenant's zone (read once
// per tenant, before the transaction, which on SQLite holds the only write
// connection), summed per row and sorted, so that concurrent batches lock
// rows in one order.
func (s *Store) spendArgs(ctx context.Context, recs []*ledger.Record) []any {
	var (
		zones  map[string]*time.Location
		groups map[spendGroup]int // index in reps and amounts
		reps   []*ledger.Run
		sums   []spend.Amount
	)
	for _, rec := range recs {
		r := rec.Run
		a := spend.AmountOf(r)
		if a.Zero() {
			continue
		}
		if zones == nil {
			zones, groups = map[string]*time.Location{}, map[spendGroup]int{}
		}
		loc, ok := zones[r.TenantID]
		if !ok {
			loc = s.zone(ctx, r.TenantID)
			zones[r.TenantID] = loc
		}
		g := spendGroup{spend.WhoOf(r), spend.Hour.Start(r.CreatedAt, loc).UnixMilli()}
		i, ok := groups[g]
		if !ok {
			i = len(reps)
			groups[g] = i
			reps, sums = append(reps, r), append(sums, spend.Amount{})
		}
		sums[i].Add(a)
	}
	if len(reps) == 0 {
		return nil
	}
	rows := make(map[counterKey]spend.Amount, len(reps)*len(spend.Windows))
	for i, r := range reps {
		for _, d := range spend.Deltas(r, zones[r.TenantID]) {
			k := counterKey{d.TenantID, d.Counter}
			a := rows[k]
			a.Add(sums[i])
			rows[k] = a
		}
	}
	keys := make([]counterKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b counterKey) int {
		return cmp.Or(strings.Compare(a.tenantID, b.tenantID), strings.Compare(string(a.Scope), string(b.Scope)),
			strings.Compare(string(a.Window), string(b.Window)), cmp.Compare(a.Start, b.Start), strings.Compare(a.Key, b.Key))
	})
	args := make([]any, 0, len(keys)*counterParams)
	replica := s.spendTagsNow().replica
	for _, k := range keys {
		a := rows[k]
		args = append(args, k.tenantID, string(k.Scope), k.Key, string(k.Window), k.Start, replica,
			a.USD, a.Tokens, a.Requests, a.Hits)
	}
	return args
}

// zone is the tenant's time zone, UTC when none is set.
func (s *Store) zone(ctx context.Context, tenantID string) *time.Location {
	zones := s.spendTagsNow().zones
	if zones == nil {
		return time.UTC
	}
	if loc := zones.Zone(ctx, tenantID); loc != nil {
		return loc
	}
	return time.UTC
}

// SumCounters implements spend.Store: one statement, each counter's rows
// found by the primary key (the planner, without statistics, takes the
// key only for a list of rows, not for terms joined by OR).
func (s *Store) SumCounters(ctx context.Context, tenantID string, counters []spend.Counter, except string) (map[spend.Counter]spend.Amount, error) {
	out := make(map[spend.Counter]spend.Amount, len(counters))
	if len(counters) == 0 {
		return out, nil
	}
	var q strings.Builder
	q.WriteString(`SELECT scope, period, start_ms, scope_key, SUM(usd), SUM(tokens), SUM(requests), SUM(hits)
		FROM spend_counters WHERE tenant_id = ?`)
	args := make([]any, 0, 2+4*len(counters))
	args = append(args, tenantID)
	if except != "" {
		q.WriteString(` AND replica <> ?`)
		args = append(args, except)
	}
	q.WriteString(` AND (scope, period, start_ms, scope_key) IN (VALUES `)
	for i, c := range counters {
		if i > 0 {
			q.WriteString(`, `)
		}
		q.WriteString(`(?, ?, CAST(? AS BIGINT), ?)`)
		args = append(args, string(c.Scope), string(c.Window), c.Start, c.Key)
	}
	q.WriteString(`) GROUP BY scope, period, start_ms, scope_key`)
	rows, err := s.read.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("sum spend counters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c          spend.Counter
			scope, win string
			a          spend.Amount
		)
		if err := rows.Scan(&scope, &win, &c.Start, &c.Key, &a.USD, &a.Tokens, &a.Requests, &a.Hits); err != nil {
			return nil, err
		}
		c.Scope, c.Window = spend.Scope(scope), spend.Window(win)
		out[c] = a
	}
	return out, rows.Err()
}

// ListCounters implements spend.Store.
func (s *Store) ListCounters(ctx context.Context, tenantID string, sc spend.Scope, w spend.Window, start int64) (map[string]spend.Amount, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT scope_key, SUM(usd), SUM(tokens), SUM(requests), SUM(hits)
		FROM spend_counters WHERE tenant_id = ? AND scope = ? AND period = ? AND start_ms = ? GROUP BY scope_key`,
		tenantID, string(sc), string(w), start)
	if err != nil {
		return nil, fmt.Errorf("list spend counters: %w", err)
	}
	defer rows.Close()
	out := map[string]spend.Amount{}
	for rows.Next() {
		var (
			key string
			a   spend.Amount
		)
		if err := rows.Scan(&key, &a.USD, &a.Tokens, &a.Requests, &a.Hits); err != nil {
			return nil, err
		}
		out[key] = a
	}
	return out, rows.Err()
}

// Budgets implements spend.Store.
func (s *Store) Budgets(ctx context.Context, tenantID string) ([]spend.Budget, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT budget FROM budgets WHERE tenant_id = ? ORDER BY position`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list budgets: %w", err)
	}
	defer rows.Close()
	out := []spend.Budget{}
	for rows.Next() {
		var (
			raw string
			b   spend.Budget
		)
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(raw), &b); err != nil {
			return nil, fmt.Errorf("decode a budget of %s: %w", tenantID, err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// ReplaceBudgets implements spend.Store, in one transaction.
func (s *Store) ReplaceBudgets(ctx context.Context, tenantID string, list []spend.Budget) error {
	raws := make([][]byte, len(list))
	for i := range list {
		raw, err := json.Marshal(&list[i])
		if err != nil {
			return err
		}
		raws[i] = raw
	}
	now := s.nowMS()
	return s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM budgets WHERE tenant_id = ?`, tenantID); err != nil {
			return err
		}
		for i, b := range list {
			if _, err := tx.ExecContext(ctx, `INSERT INTO budgets (tenant_id, id, position, budget, updated_at)
				VALUES (?, ?, ?, ?, ?)`, tenantID, b.ID, i, string(raws[i]), now); err != nil {
				return formatError(err)
			}
		}
		return nil
	})
}

// ClaimAlert implements spend.Store: one insert, outside a transaction, so
// that of concurrent claims on any replica the one whose row lands wins
// and the others, waiting on the key, find it there.
func (s *Store) ClaimAlert(ctx context.Context, tenantID, budgetID string, start int64, percent int) (bool, error) {
	res, err := s.write.ExecContext(ctx, `INSERT INTO budget_alerts (tenant_id, budget_id, start_ms, percent, at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, budget_id, start_ms, percent) DO NOTHING`,
		tenantID, budgetID, start, percent, s.nowMS())
	if err != nil {
		return false, fmt.Errorf("claim budget alert: %w", formatError(err))
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// deleteSpendBefore deletes the tenant's counters and alerts whose window
// started before t. The counters go by their primary key: each scope and
// period, from its oldest start.
func deleteSpendBefore(ctx context.Context, tx *txn, tenantID string, t time.Time) error {
	var q strings.Builder
	q.WriteString(`DELETE FROM spend_counters WHERE tenant_id = ? AND scope IN (`)
	args := []any{tenantID}
	for i, sc := range spend.Scopes {
		if i > 0 {
			q.WriteString(`, `)
		}
		q.WriteString(`?`)
		args = append(args, string(sc))
	}
	q.WriteString(`) AND period IN (`)
	for i, w := range spend.Windows {
		if i > 0 {
			q.WriteString(`, `)
		}
		q.WriteString(`?`)
		args = append(args, string(w))
	}
	q.WriteString(`) AND start_ms < ?`)
	if _, err := tx.ExecContext(ctx, q.String(), append(args, t.UnixMilli())...); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM budget_alerts WHERE tenant_id = ? AND start_ms < ?`, tenantID, t.UnixMilli())
	return err
}
