package store

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/governance"
)

var _ governance.VerdictStore = (*Store)(nil)

// verdictActions is the SQL list of the audit actions of recorded
// verdicts: literals of a fixed list, no input.
var verdictActions = "'" + strings.Join(governance.VerdictActions, "', '") + "'"

// RuleMatches counts, per rule, the tenant's recorded verdicts at or after
// day that list it, those at or after hour apart, and the latest's time,
// among the newest window of those verdicts: an index range (tenant,
// action, time) picks them, and only they have their rules read.
func (s *Store) RuleMatches(ctx context.Context, tenantID string, day, hour time.Time, window int) (map[string]governance.Matches, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+s.ruleField("id")+`, COUNT(*), `+countWhere(`a.at >= ?`)+`, MAX(a.at)
		FROM `+s.verdictRules()+`
		WHERE a.seq IN (SELECT seq FROM audit_events WHERE tenant_id = ? AND action IN (`+verdictActions+`) AND at >= ?
			ORDER BY seq DESC LIMIT ?)
		GROUP BY 1`, hour.UnixMilli(), tenantID, day.UnixMilli(), window)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]governance.Matches{}
	for rows.Next() {
		var (
			id   sql.NullString
			m    governance.Matches
			last int64
		)
		if err := rows.Scan(&id, &m.LastDay, &m.LastHour, &last); err != nil {
			return nil, err
		}
		at := msTime(last)
		m.LastAt = &at
		out[id.String] = m
	}
	return out, rows.Err()
}

// verdictRules is the FROM clause that pairs each audit event a with each
// rule r its details list.
func (s *Store) verdictRules() string {
	return s.sql(`audit_events a, json_each(a.details, '$.rules') r`,
		`audit_events a, jsonb_array_elements(a.details::jsonb -> 'rules') r`)
}

// ruleField is the SQL of a text field of the rule r of verdictRules.
// Field names are the store's own literals.
func (s *Store) ruleField(name string) string {
	return s.sql(`json_extract(r.value, '$.`+name+`')`, `r.value ->> '`+name+`'`)
}

// newestVerdicts is the sequence numbers of the tenant's newest recorded
// verdicts, at most ? of them; its arguments are the tenant and the count.
var newestVerdicts = `SELECT seq FROM audit_events WHERE tenant_id = ? AND action IN (` + verdictActions + `)
	ORDER BY seq DESC LIMIT ?`

// LastMatches returns, per rule, the time of the latest of the tenant's
// newest window recorded verdicts that lists it.
func (s *Store) LastMatches(ctx context.Context, tenantID string, window int) (map[string]time.Time, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+s.ruleField("id")+`, MAX(a.at)
		FROM `+s.verdictRules()+`
		WHERE a.seq IN (`+newestVerdicts+`)
		GROUP BY 1`, tenantID, window)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var (
			id   sql.NullString
			last int64
		)
		if err := rows.Scan(&id, &last); err != nil {
			return nil, err
		}
		out[id.String] = msTime(last)
	}
	return out, rows.Err()
}

// RuleVerdicts returns the recorded verdicts that list the rule, newest
// first, among the tenant's newest window.
func (s *Store) RuleVerdicts(ctx context.Context, tenantID, ruleID string, window, limit int) ([]governance.RuleVerdict, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT a.at, a.action, a.decision, a.target,
			COALESCE(`+s.sql(`json_extract(a.details, '$.approvalId')`, `a.details::jsonb ->> 'approvalId'`)+`, ''),
			COALESCE(`+s.ruleField("effect")+`, ''), COALESCE(`+s.ruleField("reason")+`, '')
		FROM `+s.verdictRules()+`
		WHERE a.seq IN (`+newestVerdicts+`) AND `+s.ruleField("id")+` = ?
		ORDER BY a.seq DESC LIMIT ?`, tenantID, window, ruleID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []governance.RuleVerdict{}
	for rows.Next() {
		var (
			v              governance.RuleVerdict
			at             int64
			action, target string
		)
		if err := rows.Scan(&at, &action, &v.Decision, &target, &v.ApprovalID, &v.Effect, &v.Reason); err != nil {
			return nil, err
		}
		v.At = msTime(at)
		v.Target = strings.TrimPrefix(action, "policy.")
		if strings.HasPrefix(target, "run_") {
			v.RunID = target
		} else {
			v.SessionID = target
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
