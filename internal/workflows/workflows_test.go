package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/internal/workflows"
	"github.com/svc-gateway/svc/internal/workflows/workflowstest"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)

type syncCounter struct{ n int }

func (c *syncCounter) Sync(context.Context) error { c.n++; return nil }

func newService(t *testing.T) (*workflows.Service, *store.Store, *syncCounter) {
	t.Helper()
	s := storetest.Open(t)
	sc := &syncCounter{}
	return workflows.NewService(s, sc, func() time.Time { return now }), s, sc
}

func TestSupportTriageTemplateIsValid(t *testing.T) {
	tpl := workflows.SupportTriage()
	require.NoError(t, tpl.Definition.Validate())
	assert.Equal(t, workflows.DemoAgent, tpl.Definition.Agent)

	classify, ok := tpl.Definition.Step("classify")
	require.True(t, ok)
	assert.Equal(t, []string{"billing", "bug", "account", "feature_request", "other"}, classify.Labels)
	labelsSeen := map[string]bool{}
	for _, sm := range tpl.Definition.Samples {
		labelsSeen[sm.Expect["classify"]] = true
	}
	assert.Len(t, labelsSeen, len(classify.Labels), "the samples cover every label")

	// It survives the trip through JSON that storing it takes.
	b, err := json.Marshal(tpl.Definition)
	require.NoError(t, err)
	var back workflows.Definition
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, tpl.Definition, back)
}

func TestChatRequestFillsInputs(t *testing.T) {
	def := workflows.SupportTriage().Definition
	req, err := def.ChatRequest("classify", map[string]string{"subject": "Refund", "body": "Please refund me."})
	require.NoError(t, err)
	assert.Equal(t, "gpt-4o-mini", req.Model)
	require.Len(t, req.Messages, 2)
	assert.Contains(t, req.Messages[0].Content, "- feature_request:")
	assert.Equal(t, "Subject: Refund\n\nPlease refund me.", req.Messages[1].Content)
	b, err := json.Marshal(req)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"temperature":0`)

	_, err = def.ChatRequest("classify", map[string]string{"subject": "x"})
	assert.Equal(t, errs.Invalid, errs.KindOf(err))
	assert.Contains(t, errs.Public(err), "body")
	_, err = def.ChatRequest("route", nil)
	assert.Equal(t, errs.Invalid, errs.KindOf(err), "a route step sends nothing")
}

func TestValidateRefusesBrokenDefinitions(t *testing.T) {
	for name, breakIt := range map[string]func(d *workflows.Definition){
		"no steps":          func(d *workflows.Definition) { d.Steps = nil },
		"duplicate step":    func(d *workflows.Definition) { d.Steps[1].ID = "classify" },
		"unknown kind":      func(d *workflows.Definition) { d.Steps[0].Kind = "shell" },
		"no model":          func(d *workflows.Definition) { d.Steps[0].Model = "" },
		"undeclared input":  func(d *workflows.Definition) { d.Inputs = []string{"subject"} },
		"label not listed":  func(d *workflows.Definition) { d.Steps[0].Labels = append(d.Steps[0].Labels, "shipping") },
		"route before step": func(d *workflows.Definition) { d.Steps[0], d.Steps[1] = d.Steps[1], d.Steps[0] },
		"route unknown label": func(d *workflows.Definition) {
			d.Steps[1].Routes = map[string]string{"shipping": "logistics"}
		},
		"route no default":        func(d *workflows.Definition) { d.Steps[1].Default = "" },
		"sample unknown label":    func(d *workflows.Definition) { d.Samples[0].Expect["classify"] = "shipping" },
		"sample unknown step":     func(d *workflows.Definition) { d.Samples[0].Expect = map[string]string{"reply": "x"} },
		"sample missing an input": func(d *workflows.Definition) { d.Samples[0].Input = map[string]string{"subject": "x"} },
	} {
		t.Run(name, func(t *testing.T) {
			def := workflows.SupportTriage().Definition
			breakIt(&def)
			assert.Equal(t, errs.Invalid, errs.KindOf(def.Validate()))
		})
	}
}

func TestSeedDemoCreatesThenSkips(t *testing.T) {
	svc, s, _ := newService(t)
	ctx := context.Background()

	o, err := svc.Onboarding(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, workflows.Onboarding{}, o)

	res, err := svc.SeedDemo(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, workflows.SeedResult{
		Created: workflows.Names{Workflows: []string{"Support triage"}, Agents: []string{workflows.DemoAgent}},
		Skipped: workflows.Names{Workflows: []string{}, Agents: []string{}},
	}, res)

	list, err := svc.List(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	w := list[0]
	assert.Equal(t, "Support triage", w.Name)
	assert.Equal(t, workflows.SupportTriageID, w.Template)
	assert.NotEmpty(t, w.Description)
	assert.True(t, now.Truncate(time.Millisecond).Equal(w.CreatedAt))
	var def workflows.Definition
	require.NoError(t, json.Unmarshal(w.Definition, &def))
	assert.Equal(t, workflows.SupportTriage().Definition, def)

	agents, err := s.ListAgents(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, agents, 1)
	assert.Equal(t, ledger.Agent{Name: workflows.DemoAgent, FirstSeen: now.Truncate(time.Millisecond),
		LastSeen: now.Truncate(time.Millisecond), RunCount: 0, Trust: ledger.TrustUnverified}, agents[0])

	res, err = svc.SeedDemo(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, workflows.SeedResult{
		Created: workflows.Names{Workflows: []string{}, Agents: []string{}},
		Skipped: workflows.Names{Workflows: []string{"Support triage"}, Agents: []string{workflows.DemoAgent}},
	}, res)
	list, err = svc.List(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Len(t, list, 1)

	o, err = svc.Onboarding(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, workflows.Onboarding{WorkflowCount: 1, AgentCount: 1}, o)
}

// An agent the tenant already met keeps its runs and standing; only the
// missing workflow is created.
func TestSeedDemoLeavesAnExistingAgentAlone(t *testing.T) {
	svc, s, _ := newService(t)
	ctx := context.Background()
	standing := ledger.Standing{Trust: ledger.TrustTrusted, AllowStreak: 25}
	require.NoError(t, s.SaveAgentStanding(ctx, tenant.DefaultID, workflows.DemoAgent, standing, now.Add(-time.Hour)))

	res, err := svc.SeedDemo(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, []string{"Support triage"}, res.Created.Workflows)
	assert.Equal(t, []string{workflows.DemoAgent}, res.Skipped.Agents)
	assert.Empty(t, res.Created.Agents)

	got, ok, err := s.AgentStanding(ctx, tenant.DefaultID, workflows.DemoAgent)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, standing, got)
}

func TestSeedDemoIsPerTenant(t *testing.T) {
	svc, s, _ := newService(t)
	ctx := context.Background()
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)

	_, err = svc.SeedDemo(ctx, other.ID)
	require.NoError(t, err)
	res, err := svc.SeedDemo(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, []string{"Support triage"}, res.Created.Workflows, "the same name in another tenant is no conflict")

	mine, err := svc.List(ctx, tenant.DefaultID)
	require.NoError(t, err)
	theirs, err := svc.List(ctx, other.ID)
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.Len(t, theirs, 1)
	assert.NotEqual(t, mine[0].ID, theirs[0].ID)

	require.NoError(t, s.DismissOnboarding(ctx, other.ID, now))
	o, err := svc.Onboarding(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.False(t, o.Dismissed, "another tenant's dismissal is its own")
}

func TestOnboardingCountsRunsAndDismissal(t *testing.T) {
	svc, s, sc := newService(t)
	ctx := context.Background()

	rec := &ledger.Record{Run: &ledger.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa", TenantID: tenant.DefaultID, CreatedAt: now,
		Route: ledger.RouteLive, Status: ledger.StatusOK, HTTPStatus: 200, Agent: "helper",
		Request: json.RawMessage(`{}`)}}
	require.NoError(t, s.InsertRuns(ctx, []*ledger.Record{rec}))

	o, err := svc.Onboarding(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, workflows.Onboarding{AgentCount: 1, HasRuns: true}, o)
	assert.Equal(t, 1, sc.n, "the recorder is synced before the runs are looked at")

	o, err = svc.Dismiss(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.True(t, o.Dismissed)
	o, err = svc.Dismiss(ctx, tenant.DefaultID)
	require.NoError(t, err, "dismissing twice is fine")
	assert.True(t, o.Dismissed)
	o, err = svc.Onboarding(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.True(t, o.Dismissed)
}

// pendingRuns stands for the run recorder: Sync stores what it holds.
type pendingRuns struct {
	s    *store.Store
	recs []*ledger.Record
}

func (p *pendingRuns) Sync(ctx context.Context) error {
	err := p.s.InsertRuns(ctx, p.recs)
	p.recs = nil
	return err
}

// An agent whose first call was answered but not stored yet is an agent
// the tenant has: seeding skips it.
func TestSeedDemoSeesAgentsOfRunsNotStoredYet(t *testing.T) {
	s := storetest.Open(t)
	runs := &pendingRuns{s: s, recs: []*ledger.Record{{Run: &ledger.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa",
		TenantID: tenant.DefaultID, CreatedAt: now.Add(-time.Minute), Route: ledger.RouteLive, Status: ledger.StatusOK,
		HTTPStatus: 200, Agent: workflows.DemoAgent, Request: json.RawMessage(`{}`)}}}}
	svc := workflows.NewService(s, runs, func() time.Time { return now })

	res, err := svc.SeedDemo(context.Background(), tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, []string{workflows.DemoAgent}, res.Skipped.Agents)
	agents, err := s.ListAgents(context.Background(), tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, agents, 1)
	assert.EqualValues(t, 1, agents[0].RunCount)
	assert.True(t, now.Add(-time.Minute).Equal(agents[0].FirstSeen), "first seen when it called, not when seeded")
}

type failingSync struct{}

func (failingSync) Sync(context.Context) error { return errors.New("journal unreadable") }

func TestOnboardingAndSeedFailWhenRunsCannotBeSynced(t *testing.T) {
	svc := workflows.NewService(storetest.Open(t), failingSync{}, nil)
	_, err := svc.Onboarding(context.Background(), tenant.DefaultID)
	assert.Equal(t, errs.Internal, errs.KindOf(err))
	assert.NotContains(t, errs.Public(err), "journal", "the cause stays private")
	_, err = svc.SeedDemo(context.Background(), tenant.DefaultID)
	assert.Equal(t, errs.Internal, errs.KindOf(err), "seeding needs to know the agents the tenant has")
}

func TestTriageRequestIsTheWorkflowsRequest(t *testing.T) {
	a := workflowstest.TriageRequest(rand.New(rand.NewPCG(1, 2)), 7)
	b := workflowstest.TriageRequest(rand.New(rand.NewPCG(1, 2)), 7)
	assert.Equal(t, a, b, "the same seed makes the same ticket")
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(a, &req))
	require.Len(t, req.Messages, 2)
	assert.Equal(t, workflows.SupportTriage().Definition.Steps[0].Messages[0].Content, req.Messages[0].Content)
	assert.Contains(t, req.Messages[1].Content, "Subject: ticket 7 about ")
}
