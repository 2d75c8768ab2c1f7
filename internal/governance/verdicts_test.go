package governance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/governance"
)

// fakeVerdicts answers from fixed maps and records what it was asked.
type fakeVerdicts struct {
	counts     map[string]governance.Matches
	last       map[string]time.Time
	day, hour  time.Time
	window     int
	lastAsked  int
	tenantID   string
	ruleLimits []int
}

func (f *fakeVerdicts) RuleMatches(_ context.Context, tenantID string, day, hour time.Time, window int) (map[string]governance.Matches, error) {
	f.tenantID, f.day, f.hour, f.window = tenantID, day, hour, window
	return f.counts, nil
}

func (f *fakeVerdicts) LastMatches(_ context.Context, tenantID string, window int) (map[string]time.Time, error) {
	f.lastAsked++
	return f.last, nil
}

func (f *fakeVerdicts) RuleVerdicts(_ context.Context, tenantID, ruleID string, window, limit int) ([]governance.RuleVerdict, error) {
	f.ruleLimits = append(f.ruleLimits, limit)
	return []governance.RuleVerdict{{RunID: "run_1", Target: "chat"}}, nil
}

const twoRules = `policies:
  - id: hot
    target: chat
    when: 'true'
    effect: deny
  - id: cold
    target: tool
    when: 'true'
    effect: deny
  - id: never
    target: web
    when: 'true'
    effect: deny
`

func TestPoliciesCountMatchesOfTheTenant(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_800_000_000, 0))
	recent := clock.Now().Add(-10 * time.Minute)
	longAgo := clock.Now().Add(-72 * time.Hour)
	store := &fakeVerdicts{
		counts: map[string]governance.Matches{"hot": {LastHour: 2, LastDay: 5, LastAt: &recent}},
		last:   map[string]time.Time{"hot": recent, "cold": longAgo},
	}
	g := governance.New(governance.Options{Policies: engine(t, twoRules), Verdicts: store, Now: clock.Now})
	p, err := g.Policies(context.Background(), "t_a")
	require.NoError(t, err)
	assert.Equal(t, "t_a", store.tenantID)
	assert.Equal(t, clock.Now().Add(-24*time.Hour), store.day)
	assert.Equal(t, clock.Now().Add(-time.Hour), store.hour)
	assert.Equal(t, governance.VerdictWindow, store.window, "the counts read the newest verdicts, at most the window")
	require.Len(t, p.Policies, 3)
	assert.Equal(t, governance.Matches{LastHour: 2, LastDay: 5, LastAt: &recent}, p.Policies[0].Matches)
	assert.Equal(t, governance.Matches{LastAt: &longAgo}, p.Policies[1].Matches, "a match before the last day still shows when")
	assert.Equal(t, governance.Matches{}, p.Policies[2].Matches)
	assert.Equal(t, 1, store.lastAsked, "the older matches are read once")
	assert.True(t, p.Reload.OK)
	assert.Equal(t, 3, p.Reload.Rules)
}

func TestVerdictsOfARule(t *testing.T) {
	store := &fakeVerdicts{}
	g := governance.New(governance.Options{Policies: engine(t, twoRules), Verdicts: store})
	ctx := context.Background()
	v, err := g.Verdicts(ctx, "t_a", "hot", 0)
	require.NoError(t, err)
	assert.Len(t, v, 1)
	_, err = g.Verdicts(ctx, "t_a", "hot", 10_000)
	require.NoError(t, err)
	assert.Equal(t, []int{governance.DefaultVerdicts, governance.MaxVerdicts}, store.ruleLimits)

	_, err = g.Verdicts(ctx, "t_a", "gone", 0)
	assert.Equal(t, errs.NotFound, errs.KindOf(err), "a rule not in force is not found")
	_, err = g.Verdicts(ctx, "t_a", "hot", -1)
	assert.Equal(t, errs.Invalid, errs.KindOf(err))
}

func TestProviderVerdictsAreRecordedVerdicts(t *testing.T) {
	assert.Equal(t, []string{"policy.chat", "policy.tool", "policy.web", "policy.provider"}, governance.VerdictActions,
		"the matches of provider rules are read from their audit events")

	w := newWorld(t, providerRules)
	w.judge(t, key(), routedRequest("eu-portal", "cust-7"))
	events := w.audit.Events()
	require.Len(t, events, 1)
	assert.Contains(t, governance.VerdictActions, events[0].Action, "JudgeProviders records under a verdict action")
}
