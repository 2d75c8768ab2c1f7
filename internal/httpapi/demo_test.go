package httpapi_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/workflows"
)

// demoRuns is how many runs one load of the demo records.
var demoRuns = len(workflows.SupportTriage().Definition.Samples) + 2 + workflows.DemoTickets

// runsOf lists the runs of a query of GET /api/v1/runs.
func runsOf(t *testing.T, ts *testServer, token, query string) []map[string]any {
	t.Helper()
	res := ts.call(t, "GET", "/api/v1/runs?limit=500"+query, token, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	var out []map[string]any
	for _, r := range res.json["runs"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// In open dev mode, with no policy loaded, loading the demo leaves
// something in every view: runs, an exact-cache hit, each call's policy
// verdict, a pattern, and after a learning pass a candidate artifact.
func TestSeedDemoReplaysTheDemoThroughTheGateway(t *testing.T) {
	ts := newServer(t, "", nil)
	res := ts.call(t, "GET", "/api/v1/orgs/active/onboarding", "", "")
	require.Equal(t, http.StatusOK, res.status, "open dev mode reads onboarding: %s", res.body)
	assert.Equal(t, onboarding(0, 0, false, false), res.json)

	res = ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", "", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, names(triageWF, demoAgt), res.json["created"])
	assert.Equal(t, onboarding(1, 1, true, false), res.json["onboarding"])
	runs := res.json["runs"].([]any)
	require.Len(t, runs, demoRuns)

	res = ts.call(t, "GET", "/api/v1/runs?limit=1", "", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.InDelta(t, demoRuns, res.json["total"], 0, "every run is listed")
	hits := runsOf(t, ts, "", "&route=exact_cache")
	require.Len(t, hits, 1, "the sample sent twice")
	assert.Equal(t, "support-triage", hits[0]["app"])
	assert.Equal(t, workflows.DemoAgent, hits[0]["agent"])

	wire := ts.call(t, "GET", "/api/v1/runs/"+runs[len(workflows.SupportTriage().Definition.Samples)+1].(string), "", "")
	require.Equal(t, http.StatusOK, wire.status, wire.body)
	assert.Contains(t, wire.body, "wire transfer")
	assert.Equal(t, "allow", field(t, wire, "run", "routeExplanation", "policy", "decision"),
		"with no rule loaded the verdict is an allow, still evaluated for the demo agent")

	res = ts.call(t, "POST", "/api/v1/learning/tick", "", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	patterns := ts.call(t, "GET", "/api/v1/patterns", "", "").json["patterns"].([]any)
	require.Len(t, patterns, 1, "one stable pattern")
	arts := ts.call(t, "GET", "/api/v1/artifacts", "", "").json["artifacts"].([]any)
	require.Len(t, arts, 1, "the pass made a candidate artifact: %s", res.body)
	assert.Equal(t, "shadow", arts[0].(map[string]any)["state"])

	// Loading again adds runs, not a second workflow or agent.
	res = ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", "", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, names(none, none), res.json["created"])
	assert.Len(t, res.json["runs"], demoRuns)
	assert.Len(t, ts.call(t, "GET", "/api/v1/workflows", "", "").json["workflows"], 1)
	assert.Len(t, ts.call(t, "GET", "/api/v1/agents", "", "").json["agents"], 1)

	res = ts.call(t, "POST", "/api/v1/orgs/active/onboarding/dismiss", "", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, true, res.json["dismissed"])
}

// With the example rules loaded, the demo's wire-transfer ticket is held
// for a person: a blocked run and a pending approval that names the rule.
// The demo acts as the tenant: another tenant sees none of it.
func TestSeedDemoMeetsTheExampleRules(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_POLICY_DIR": filepath.Join("..", "..", "docs", "policies")})
	_, observer := ts.createKey(t, bootstrap, `{"name":"observer","mode":"observe","admin":true}`)
	res := ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", observer, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.Len(t, res.json["runs"], demoRuns, "an observe key's demo runs in optimize mode, so the rules act")

	blocked := runsOf(t, ts, bootstrap, "&route=blocked")
	require.Len(t, blocked, 1)
	assert.Equal(t, "require_approval", blocked[0]["routeExplanation"].(map[string]any)["policy"].(map[string]any)["decision"])
	approvals := ts.call(t, "GET", "/api/v1/approvals", bootstrap, "").body
	assert.Contains(t, approvals, "wire-transfers-need-a-person")
	assert.Len(t, runsOf(t, ts, bootstrap, "&route=exact_cache"), 1)
}
