// Package workflows keeps a tenant's workflows (named, declarative
// definitions instantiated from templates) and the onboarding state that
// points a new organization at its first one: seed-demo instantiates the
// support-triage template and a demo agent, so that the dashboard and the
// learning loop have something real to show before any traffic arrives.
package workflows

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
)

// Workflow is one stored workflow of a tenant. Names are unique within a
// tenant.
type Workflow struct {
	ID          string          `json:"id"`
	TenantID    string          `json:"-"`
	Name        string          `json:"name"`
	Template    string          `json:"template"` // the template it came from, "" when none
	Description string          `json:"description"`
	Definition  json.RawMessage `json:"definition"`
	CreatedAt   time.Time       `json:"createdAt"`
}

// AgentSeed is an agent to create before it has made any call.
type AgentSeed struct {
	Name  string
	Trust string
}

// Onboarding is what a tenant has set up so far, and whether it put the
// onboarding guide away.
type Onboarding struct {
	WorkflowCount int  `json:"workflowCount"`
	AgentCount    int  `json:"agentCount"`
	HasRuns       bool `json:"hasRuns"`
	Dismissed     bool `json:"dismissed"`
}

// Names lists workflows and agents by name.
type Names struct {
	Workflows []string `json:"workflows"`
	Agents    []string `json:"agents"`
}

// SeedResult reports what seed-demo created and what it left alone because
// the tenant already had a workflow or agent of that name.
type SeedResult struct {
	Created Names `json:"created"`
	Skipped Names `json:"skipped"`
}

// Store persists workflows and the onboarding state. Every method is
// scoped to the tenant it is given.
type Store interface {
	// ListWorkflows returns the tenant's workflows, oldest first.
	ListWorkflows(ctx context.Context, tenantID string) ([]Workflow, error)
	// SeedTenant stores, in one transaction, each of workflows and agents
	// whose name the tenant does not use yet (agents with no runs), and
	// returns the names it stored. An existing row is never changed.
	SeedTenant(ctx context.Context, tenantID string, workflows []Workflow, agents []AgentSeed, at time.Time) (Names, error)
	// OnboardingState counts the tenant's workflows and agents and tells
	// whether it has any run and has dismissed onboarding.
	OnboardingState(ctx context.Context, tenantID string) (Onboarding, error)
	// DismissOnboarding records that the tenant dismissed onboarding; a
	// second call keeps the first time.
	DismissOnboarding(ctx context.Context, tenantID string, at time.Time) error
}

// Syncer makes every run recorded so far readable from the store; the
// ledger's Recorder is one.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Service answers the workflows and onboarding API.
type Service struct {
	store Store
	runs  Syncer
	now   func() time.Time
}

// NewService returns a service over store. runs, when not nil, is synced
// before onboarding is read and before seeding, so that a call that was
// answered counts (hasRuns, its agent) at once.
func NewService(store Store, runs Syncer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, runs: runs, now: now}
}

// List returns the tenant's workflows, oldest first.
func (s *Service) List(ctx context.Context, tenantID string) ([]Workflow, error) {
	return s.store.ListWorkflows(ctx, tenantID)
}

// SeedDemo instantiates the support-triage template and the demo agent in
// the tenant. A workflow or agent whose name the tenant already uses is
// skipped, not replaced, so seeding twice creates nothing the second time.
// The run recorder is synced first: an agent met by a call that was
// answered but not stored yet is an agent the tenant has.
func (s *Service) SeedDemo(ctx context.Context, tenantID string) (SeedResult, error) {
	if err := s.sync(ctx); err != nil {
		return SeedResult{}, err
	}
	t := SupportTriage()
	def, err := json.Marshal(t.Definition)
	if err != nil {
		return SeedResult{}, err
	}
	at := s.now().UTC().Truncate(time.Millisecond)
	wfs := []Workflow{{
		ID: ids.New("wf"), TenantID: tenantID, Name: t.Name, Template: t.ID,
		Description: t.Description, Definition: def, CreatedAt: at,
	}}
	agents := []AgentSeed{{Name: DemoAgent, Trust: ledger.DefaultTrust}}
	created, err := s.store.SeedTenant(ctx, tenantID, wfs, agents, at)
	if err != nil {
		return SeedResult{}, err
	}
	res := SeedResult{Created: Names{Workflows: []string{}, Agents: []string{}}, Skipped: Names{Workflows: []string{}, Agents: []string{}}}
	for _, w := range wfs {
		sortInto(&res.Created.Workflows, &res.Skipped.Workflows, w.Name, created.Workflows)
	}
	for _, a := range agents {
		sortInto(&res.Created.Agents, &res.Skipped.Agents, a.Name, created.Agents)
	}
	return res, nil
}

// sortInto appends name to created when it is among stored, else to
// skipped.
func sortInto(created, skipped *[]string, name string, stored []string) {
	if slices.Contains(stored, name) {
		*created = append(*created, name)
	} else {
		*skipped = append(*skipped, name)
	}
}

// Onboarding returns the tenant's onboarding state.
func (s *Service) Onboarding(ctx context.Context, tenantID string) (Onboarding, error) {
	if err := s.sync(ctx); err != nil {
		return Onboarding{}, err
	}
	return s.store.OnboardingState(ctx, tenantID)
}

// sync waits for the run recorder to store the runs (and so the agents)
// of every call answered so far.
func (s *Service) sync(ctx context.Context) error {
	if s.runs == nil {
		return nil
	}
	if err := s.runs.Sync(ctx); err != nil {
		return errs.Wrap(err, errs.Internal, "internal", "recorded runs could not be read")
	}
	return nil
}

// Dismiss records that the tenant put onboarding away and returns the
// state after it. Dismissing again changes nothing.
func (s *Service) Dismiss(ctx context.Context, tenantID string) (Onboarding, error) {
	if err := s.store.DismissOnboarding(ctx, tenantID, s.now().UTC()); err != nil {
		return Onboarding{}, err
	}
	return s.Onboarding(ctx, tenantID)
}
