package governance

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/paging"
	"github.com/svc-gateway/svc/internal/policy"
)

// The record of verdicts a rule's matches are read from is the audit trail:
// Decide audits every verdict that is not a plain allow (action
// policy.chat, policy.tool or policy.web, the matched rules in its
// details), and JudgeProviders a call's provider verdicts (policy.provider,
// each rule once per call), so the counts are durable and survive a restart. A request
// that only allow rules matched changed nothing and leaves no record: an
// allow rule counts only in the verdicts that were recorded.

// VerdictActions are the audit actions of recorded verdicts.
var VerdictActions = []string{"policy." + string(policy.Chat), "policy." + string(policy.Tool), "policy." + string(policy.Web),
	"policy." + string(policy.Provider)}

// Matches is how often a rule matched lately, in the tenant's recorded
// verdicts.
type Matches struct {
	LastHour int        `json:"lastHour"`
	LastDay  int        `json:"lastDay"`
	LastAt   *time.Time `json:"lastAt"` // the latest match within VerdictWindow; nil for none
}

// RuleVerdict is one recorded verdict that a rule took part in.
type RuleVerdict struct {
	At       time.Time `json:"at"`
	Target   string    `json:"target"`   // chat, tool, web or provider
	Effect   string    `json:"effect"`   // the rule's
	Decision string    `json:"decision"` // the verdict's
	// RunID is the run the verdict was on (chat, tool and provider),
	// SessionID the web session (web).
	RunID      string `json:"runId,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	ApprovalID string `json:"approvalId,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// VerdictWindow bounds what a rule's matches, last match and recent
// verdicts are counted or looked for in: the tenant's newest recorded
// verdicts (of the last day, for the counts), at most this many.
const VerdictWindow = 10_000

// Page sizes of a rule's verdicts.
const (
	DefaultVerdicts = 50
	MaxVerdicts     = 500
)

// VerdictStore reads the tenant's recorded verdicts.
type VerdictStore interface {
	// RuleMatches counts, per rule id, the tenant's recorded verdicts at
	// or after day that list the rule, those at or after hour apart, with
	// the time of the latest, among the newest window verdicts since day.
	RuleMatches(ctx context.Context, tenantID string, day, hour time.Time, window int) (map[string]Matches, error)
	// LastMatches returns, per rule id, the time of the latest of the
	// tenant's newest window recorded verdicts that lists the rule.
	LastMatches(ctx context.Context, tenantID string, window int) (map[string]time.Time, error)
	// RuleVerdicts returns the recorded verdicts, newest first, that list
	// the rule, among the tenant's newest window.
	RuleVerdicts(ctx context.Context, tenantID, ruleID string, window, limit int) ([]RuleVerdict, error)
}

// RuleInForce is a loaded rule with how often it matched the tenant's
// requests lately.
type RuleInForce struct {
	policy.Rule
	Matches Matches `json:"matches"`
}

// Policies is the rules in force, their matches, and how the last load or
// reload of the policy folder went.
type Policies struct {
	Policies []RuleInForce `json:"policies"`
	Reload   policy.Status `json:"reload"`
}

// Policies lists the rules in force with the tenant's matches of each.
func (g *Governor) Policies(ctx context.Context, tenantID string) (Policies, error) {
	rules := g.Rules()
	now := g.now()
	counts, err := g.verdicts.RuleMatches(ctx, tenantID, now.Add(-24*time.Hour), now.Add(-time.Hour), VerdictWindow)
	if err != nil {
		return Policies{}, err
	}
	var last map[string]time.Time
	out := Policies{Policies: make([]RuleInForce, len(rules)), Reload: g.policies.Status()}
	for i, r := range rules {
		m := counts[r.ID]
		if m.LastAt == nil {
			// Not matched in the last day: its last match, further back.
			if last == nil {
				if last, err = g.verdicts.LastMatches(ctx, tenantID, VerdictWindow); err != nil {
					return Policies{}, err
				}
			}
			if at, ok := last[r.ID]; ok {
				m.LastAt = &at
			}
		}
		out.Policies[i] = RuleInForce{Rule: r, Matches: m}
	}
	return out, nil
}

// Verdicts returns the tenant's recent recorded verdicts that rule ruleID,
// in force, took part in, newest first. An unknown rule is not found.
func (g *Governor) Verdicts(ctx context.Context, tenantID, ruleID string, limit int) ([]RuleVerdict, error) {
	limit, err := paging.Limit(limit, DefaultVerdicts, MaxVerdicts)
	if err != nil {
		return nil, err
	}
	if !g.inForce(ruleID) {
		return nil, errs.NotFoundf("no rule %q is in force", ruleID)
	}
	return g.verdicts.RuleVerdicts(ctx, tenantID, ruleID, VerdictWindow, limit)
}

func (g *Governor) inForce(ruleID string) bool {
	for _, r := range g.policies.Set().Rules() {
		if r.ID == ruleID {
			return true
		}
	}
	return false
}

// noVerdicts is a record of no verdicts.
type noVerdicts struct{}

func (noVerdicts) RuleMatches(context.Context, string, time.Time, time.Time, int) (map[string]Matches, error) {
	return nil, nil
}

func (noVerdicts) LastMatches(context.Context, string, int) (map[string]time.Time, error) {
	return nil, nil
}

func (noVerdicts) RuleVerdicts(context.Context, string, string, int, int) ([]RuleVerdict, error) {
	return []RuleVerdict{}, nil
}
