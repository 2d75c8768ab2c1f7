package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func TestRecordedVerdictsCountPerRuleAndTenant(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	now := time.UnixMilli(1_800_000_000_000).UTC()
	n := 0
	verdict := func(tenantID, action, target, decision string, at time.Time, rules ...string) {
		n++
		var rs []any
		for _, r := range rules {
			rs = append(rs, map[string]any{"id": r, "effect": "deny", "reason": "because " + r})
		}
		require.NoError(t, s.AppendAudit(ctx, &audit.Event{ID: fmt.Sprint("aud_", n), TenantID: tenantID, At: at,
			Actor: "key:k", Action: action, Decision: decision, Target: target,
			Details: map[string]any{"target": "chat", "rules": rs, "approvalId": "apr_" + target}}))
	}
	verdict(tenant.DefaultID, "policy.chat", "run_old", "deny", now.Add(-48*time.Hour), "a")
	verdict(tenant.DefaultID, "policy.chat", "run_day", "deny", now.Add(-2*time.Hour), "a", "b")
	verdict(tenant.DefaultID, "policy.tool", "run_hour", "require_approval", now.Add(-30*time.Minute), "a")
	verdict(tenant.DefaultID, "policy.web", "ws_1", "deny", now.Add(-time.Minute), "w")
	verdict(tenant.DefaultID, "key.create", "key_1", "allow", now, "a") // not a verdict
	verdict(other.ID, "policy.chat", "run_theirs", "deny", now, "a", "b")

	counts, err := s.RuleMatches(ctx, tenant.DefaultID, now.Add(-24*time.Hour), now.Add(-time.Hour), 10)
	require.NoError(t, err)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	assert.Equal(t, map[string]governance.Matches{
		"a": {LastHour: 1, LastDay: 2, LastAt: at(-30 * time.Minute)},
		"b": {LastHour: 0, LastDay: 1, LastAt: at(-2 * time.Hour)},
		"w": {LastHour: 1, LastDay: 1, LastAt: at(-time.Minute)},
	}, counts)
	// The window holds the newest verdicts of the day: run_hour and ws_1,
	// not run_day, nor run_old, which is older than the day anyway.
	counts, err = s.RuleMatches(ctx, tenant.DefaultID, now.Add(-24*time.Hour), now.Add(-time.Hour), 2)
	require.NoError(t, err)
	assert.Equal(t, map[string]governance.Matches{
		"a": {LastHour: 1, LastDay: 1, LastAt: at(-30 * time.Minute)},
		"w": {LastHour: 1, LastDay: 1, LastAt: at(-time.Minute)},
	}, counts, "only the newest window of the day's verdicts are counted")

	last, err := s.LastMatches(ctx, tenant.DefaultID, 10)
	require.NoError(t, err)
	assert.Equal(t, now.Add(-30*time.Minute), last["a"])
	last, err = s.LastMatches(ctx, tenant.DefaultID, 1)
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Time{"w": now.Add(-time.Minute)}, last, "only the newest verdicts are read")

	vs, err := s.RuleVerdicts(ctx, tenant.DefaultID, "a", 10, 10)
	require.NoError(t, err)
	require.Len(t, vs, 3)
	assert.Equal(t, governance.RuleVerdict{At: now.Add(-30 * time.Minute), Target: "tool", Effect: "deny",
		Decision: "require_approval", RunID: "run_hour", ApprovalID: "apr_run_hour", Reason: "because a"}, vs[0])
	assert.Equal(t, "run_old", vs[2].RunID)
	vs, err = s.RuleVerdicts(ctx, tenant.DefaultID, "a", 10, 1)
	require.NoError(t, err)
	assert.Len(t, vs, 1)
	vs, err = s.RuleVerdicts(ctx, tenant.DefaultID, "w", 10, 10)
	require.NoError(t, err)
	require.Len(t, vs, 1)
	assert.Equal(t, "ws_1", vs[0].SessionID)
	assert.Empty(t, vs[0].RunID)
	vs, err = s.RuleVerdicts(ctx, other.ID, "a", 10, 10)
	require.NoError(t, err)
	require.Len(t, vs, 1)
	assert.Equal(t, "run_theirs", vs[0].RunID)
}

func TestProviderVerdictsCountForTheirRules(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	now := time.UnixMilli(1_800_000_000_000).UTC()
	require.NoError(t, s.AppendAudit(ctx, &audit.Event{ID: "aud_1", TenantID: tenant.DefaultID, At: now.Add(-time.Minute),
		Actor: "key:k", Action: "policy.provider", Decision: "deny", Target: "run_1",
		Details: map[string]any{"target": "provider", "enforced": true,
			"rules":     []any{map[string]any{"id": "eu-stays-off-us", "effect": "deny", "reason": "EU traffic stays in the EU"}},
			"providers": []any{map[string]any{"provider": "openai-us", "decision": "deny", "enforced": true, "rules": []string{"eu-stays-off-us"}}}}}))

	counts, err := s.RuleMatches(ctx, tenant.DefaultID, now.Add(-24*time.Hour), now.Add(-time.Hour), 10)
	require.NoError(t, err)
	at := now.Add(-time.Minute)
	assert.Equal(t, map[string]governance.Matches{"eu-stays-off-us": {LastHour: 1, LastDay: 1, LastAt: &at}}, counts)
	vs, err := s.RuleVerdicts(ctx, tenant.DefaultID, "eu-stays-off-us", 10, 10)
	require.NoError(t, err)
	assert.Equal(t, []governance.RuleVerdict{{At: at, Target: "provider", Effect: "deny", Decision: "deny", RunID: "run_1",
		Reason: "EU traffic stays in the EU"}}, vs)
}
