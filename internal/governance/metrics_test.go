package governance_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
)

// metered is a world over rules and the provider rules whose governor
// counts in m.
func metered(t *testing.T, rules string) (*world, *metrics.Metrics) {
	t.Helper()
	rules += strings.TrimPrefix(providerRules, "policies:\n")
	w := newWorld(t, rules)
	m := metrics.New(metrics.Options{})
	w.gov = governance.New(governance.Options{
		Policies:  engine(t, rules),
		Approvals: approval.NewService(w.approvals, fixedSettings{ttl: exceptionTTL, pending: pendingLimit}, w.clock.Now),
		Audit:     audit.NewLog(w.audit, hclog.NewNullLogger(), w.clock.Now),
		Agents:    w.agents, Metrics: m,
	})
	return w, m
}

// brokenAllow is an allow rule whose condition fails on other.test: the
// field it reads is not there.
const brokenAllow = `  - id: broken-allow
    target: web
    when: web.host == "other.test" && web.fields["missing"] == "x"
    effect: allow
    reason: never decides
`

func TestVerdictsAreCountedOncePerEvaluation(t *testing.T) {
	w, m := metered(t, decideRules+brokenAllow)
	w.decide(t, webAction(key(), "shop.example.com", "https://shop.example.com/admin", nil)) // example-sites allows, no-admin-pages denies
	w.decide(t, webAction(key(), "other.test", "https://other.test/", nil))                  // no rule matches; broken-allow fails
	w.decide(t, webAction(key(), "bank.example.com", "https://bank.example.com/", nil))      // bank-accounts fails: no account field
	_, err := w.gov.JudgeProviders(context.Background(), key(), "run_1", routedRequest("eu-portal", ""), candidates)
	require.NoError(t, err)

	assert.Equal(t, map[string]float64{
		"allow,example-sites,web":            2,
		"deny,no-admin-pages,web":            1,
		"require_approval,bank-accounts,web": 1,
		"deny,eu-stays-off-us,provider":      1,
		"allow,local-is-fine,provider":       1,
	}, metricstest.Samples(t, m, "svc_policy_verdicts_total"), "each rule that matched, by its effect")
	assert.Equal(t, map[string]float64{
		"deny,web":             1, // example-sites allows, no-admin-pages denies: one evaluation
		"allow,web":            1, // no rule matched
		"require_approval,web": 1,
		"deny,provider":        1,
		"allow,provider":       2, // anthropic (no rule) and local
	}, metricstest.Nonzero(t, m, "svc_policy_evaluations_total"), "each evaluation once, by its decision")
	assert.Equal(t, map[string]float64{"web": 2}, metricstest.Nonzero(t, m, "svc_policy_errors_total"),
		"bank-accounts (require_approval) and broken-allow failed")
}

func TestPendingLimitIsARateLimitRefusal(t *testing.T) {
	w, m := metered(t, decideRules)
	for i := range pendingLimit + 1 {
		a := webAction(key(), "pay.example.com", "https://pay.example.com/"+strconv.Itoa(i), nil)
		_, err := w.gov.Decide(context.Background(), a.call, a.in)
		if i < pendingLimit {
			require.NoError(t, err)
		} else {
			require.True(t, errs.Is(err, errs.RateLimited), "%v", err)
		}
	}
	assert.Equal(t, map[string]float64{"approvals": 1}, metricstest.Samples(t, m, "svc_rate_limit_refusals_total"))
}
