package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/internal/workflows"
)

func onboarding(workflowCount, agentCount int, hasRuns, dismissed bool) map[string]any {
	return map[string]any{
		"workflowCount": float64(workflowCount), "agentCount": float64(agentCount),
		"hasRuns": hasRuns, "dismissed": dismissed,
	}
}

func names(workflowNames, agentNames []any) map[string]any {
	return map[string]any{"workflows": workflowNames, "agents": agentNames}
}

var (
	none     = []any{}
	triageWF = []any{"Support triage"}
	demoAgt  = []any{workflows.DemoAgent}
)

func TestOnboardingThroughSeedDemoAndFirstRun(t *testing.T) {
	ts := newServer(t, bootstrap, nil)

	res := ts.call(t, "GET", "/api/v1/orgs/active/onboarding", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, onboarding(0, 0, false, false), res.json)
	assert.Equal(t, []any{}, ts.call(t, "GET", "/api/v1/workflows", bootstrap, "").json["workflows"])

	res = ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Len(t, res.json["runs"], demoRuns, "the demo traffic, replayed")
	delete(res.json, "runs")
	assert.Equal(t, map[string]any{
		"created":    names(triageWF, demoAgt),
		"skipped":    names(none, none),
		"onboarding": onboarding(1, 1, true, false),
	}, res.json)

	list := ts.call(t, "GET", "/api/v1/workflows", bootstrap, "").json["workflows"].([]any)
	require.Len(t, list, 1)
	wf := list[0].(map[string]any)
	assert.ElementsMatch(t, []string{"id", "name", "template", "description", "definition", "createdAt"}, keysOf(wf))
	assert.Equal(t, "Support triage", wf["name"])
	assert.Equal(t, workflows.SupportTriageID, wf["template"])
	assert.Equal(t, "2027-01-15T08:00:00Z", wf["createdAt"])
	def := wf["definition"].(map[string]any)
	assert.Equal(t, workflows.DemoAgent, def["agent"])
	assert.Len(t, def["steps"], 2)
	assert.Len(t, def["samples"], len(workflows.SupportTriage().Definition.Samples))

	agents := ts.call(t, "GET", "/api/v1/agents", bootstrap, "").json["agents"].([]any)
	require.Len(t, agents, 1)
	agent := agents[0].(map[string]any)
	assert.Equal(t, workflows.DemoAgent, agent["name"])
	assert.InDelta(t, demoRuns, agent["runCount"], 0, "the demo's calls are the demo agent's")

	// Seeding again creates nothing and says so.
	res = ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, names(none, none), res.json["created"])
	assert.Equal(t, names(triageWF, demoAgt), res.json["skipped"])
	assert.Len(t, ts.call(t, "GET", "/api/v1/workflows", bootstrap, "").json["workflows"], 1)

	res = ts.call(t, "GET", "/api/v1/orgs/active/onboarding", bootstrap, "")
	assert.Equal(t, onboarding(1, 1, true, false), res.json)

	var seeds []map[string]any
	for _, e := range ts.call(t, "GET", "/api/v1/audit", bootstrap, "").json["events"].([]any) {
		if ev := e.(map[string]any); ev["action"] == "org.seed_demo" {
			seeds = append(seeds, ev)
		}
	}
	require.Len(t, seeds, 2, "each seed-demo is audited")
	assert.Equal(t, "bootstrap", seeds[0]["actor"])
	assert.Equal(t, workflows.SupportTriageID, seeds[0]["target"])
	assert.Equal(t, map[string]any{"created": names(none, none), "skipped": names(triageWF, demoAgt), "runs": float64(demoRuns)},
		seeds[0]["details"], "newest first")
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A workflow or agent of the same name is left exactly as it was.
func TestSeedDemoSkipsNamesInUse(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	ctx := context.Background()
	ts.chatRun(t, bootstrap, triage, "X-Svc-Agent", workflows.DemoAgent)
	_, err := ts.store.SeedTenant(ctx, tenant.DefaultID, []workflows.Workflow{{
		ID: "wf_aaaaaaaaaaaaaaaaaaaa", Name: "Support triage", Description: "ours",
		Definition: json.RawMessage(`{"steps":[]}`), CreatedAt: ts.clock.Now(),
	}}, nil, ts.clock.Now())
	require.NoError(t, err)

	res := ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, names(none, none), res.json["created"])
	assert.Equal(t, names(triageWF, demoAgt), res.json["skipped"])
	assert.Equal(t, onboarding(1, 1, true, false), res.json["onboarding"])

	list := ts.call(t, "GET", "/api/v1/workflows", bootstrap, "").json["workflows"].([]any)
	require.Len(t, list, 1)
	wf := list[0].(map[string]any)
	assert.Equal(t, "wf_aaaaaaaaaaaaaaaaaaaa", wf["id"])
	assert.Equal(t, "ours", wf["description"])
	assert.Equal(t, "", wf["template"])
	assert.Equal(t, map[string]any{"steps": []any{}}, wf["definition"])
	agent := ts.call(t, "GET", "/api/v1/agents", bootstrap, "").json["agents"].([]any)[0].(map[string]any)
	assert.InDelta(t, 1+demoRuns, agent["runCount"], 0, "the agent keeps its runs")
}

func TestSeedDemoNeedsAnAdmin(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	_, member := ts.createKey(t, bootstrap, `{"name":"member","mode":"optimize"}`)
	_, admin := ts.createKey(t, bootstrap, `{"name":"admin","mode":"optimize","admin":true}`)

	res := ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", member, "")
	assert.Equal(t, http.StatusForbidden, res.status, res.body)
	assert.Equal(t, "admin_required", res.errorCode())
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", "", "").status)
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "GET", "/api/v1/orgs/active/onboarding", "", "").status)

	// Anyone of the organization reads onboarding and the workflows.
	assert.Equal(t, onboarding(0, 0, false, false), ts.call(t, "GET", "/api/v1/orgs/active/onboarding", member, "").json)
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/workflows", member, "").status)

	res = ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", admin, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, names(triageWF, demoAgt), res.json["created"])
	assert.Len(t, ts.call(t, "GET", "/api/v1/workflows", member, "").json["workflows"], 1)
}

func TestDismissOnboardingPersists(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	_, member := ts.createKey(t, bootstrap, `{"name":"member","mode":"observe"}`)

	res := ts.call(t, "POST", "/api/v1/orgs/active/onboarding/dismiss", member, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, onboarding(0, 0, false, true), res.json)
	assert.Equal(t, onboarding(0, 0, false, true), ts.call(t, "GET", "/api/v1/orgs/active/onboarding", bootstrap, "").json)

	res = ts.call(t, "POST", "/api/v1/orgs/active/onboarding/dismiss", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, "dismissing twice is fine")
	assert.Equal(t, true, res.json["dismissed"])

	res = ts.call(t, "GET", "/api/v1/orgs/active/onboarding/dismiss", bootstrap, "")
	assert.Equal(t, http.StatusMethodNotAllowed, res.status)
}

func TestWorkflowsAndOnboardingTenantIsolation(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	ctx := context.Background()
	other, err := ts.store.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	_, theirs, err := ts.keys.Create(ctx, other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize, Admin: true})
	require.NoError(t, err)

	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", bootstrap, "").status)
	ts.chatRun(t, bootstrap, triage)
	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/orgs/active/onboarding/dismiss", bootstrap, "").status)

	assert.Equal(t, []any{}, ts.call(t, "GET", "/api/v1/workflows", theirs, "").json["workflows"])
	assert.Equal(t, onboarding(0, 0, false, false), ts.call(t, "GET", "/api/v1/orgs/active/onboarding", theirs, "").json)
	assert.Empty(t, ts.call(t, "GET", "/api/v1/agents", theirs, "").json["agents"])

	// Their seed is theirs: the same names are free in their tenant, and
	// mine still counts one of each.
	res := ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", theirs, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, names(triageWF, demoAgt), res.json["created"])
	assert.Equal(t, onboarding(1, 1, true, false), res.json["onboarding"])
	assert.InDelta(t, demoRuns, ts.call(t, "GET", "/api/v1/runs?limit=1", theirs, "").json["total"], 0, "their demo's runs, only")
	assert.InDelta(t, demoRuns+1, ts.call(t, "GET", "/api/v1/runs?limit=1", bootstrap, "").json["total"], 0)
	mine := ts.call(t, "GET", "/api/v1/workflows", bootstrap, "").json["workflows"].([]any)
	theirList := ts.call(t, "GET", "/api/v1/workflows", theirs, "").json["workflows"].([]any)
	require.Len(t, mine, 1)
	require.Len(t, theirList, 1)
	assert.NotEqual(t, mine[0].(map[string]any)["id"], theirList[0].(map[string]any)["id"])
	assert.Equal(t, onboarding(1, 1, true, true), ts.call(t, "GET", "/api/v1/orgs/active/onboarding", bootstrap, "").json)
	assert.NotContains(t, ts.call(t, "GET", "/api/v1/audit", theirs, "").body, "bootstrap")
}

// The demo's sample tickets, replayed through the gateway as the workflow
// defines them, get the labels the template expects from the deterministic
// mock provider, and their runs count for the demo agent: the learning
// loop has one stable pattern to work on.
func TestDemoSamplesReplayThroughTheGateway(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", bootstrap, "").status)
	def := workflows.SupportTriage().Definition
	for _, sm := range def.Samples {
		req, err := def.ChatRequest("classify", sm.Input)
		require.NoError(t, err)
		res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, mustMarshal(t, req),
			"X-Svc-App", def.App, "X-Svc-Agent", def.Agent)
		require.Equal(t, http.StatusOK, res.status, res.body)
		c := decodeCompletion(t, res.body)
		require.Len(t, c.Choices, 1)
		assert.Equal(t, sm.Expect["classify"], c.Choices[0].Message.Content, "sample %s: %s", sm.ID, sm.Input["subject"])
	}
	agents := ts.call(t, "GET", "/api/v1/agents", bootstrap, "").json["agents"].([]any)
	require.Len(t, agents, 1)
	assert.InDelta(t, len(def.Samples)+demoRuns, agents[0].(map[string]any)["runCount"], 0)
}
