package httpapi

import (
	"context"
	"net/http"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/workflows"
)

// workflowList answers GET /api/v1/workflows.
type workflowList struct {
	Workflows []workflows.Workflow `json:"workflows"`
}

// listWorkflows is GET /api/v1/workflows: the tenant's workflows, oldest
// first.
func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Workflows.List(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, workflowList{Workflows: list})
	return nil
}

// getOnboarding is GET /api/v1/orgs/active/onboarding.
func (s *Server) getOnboarding(w http.ResponseWriter, r *http.Request) error {
	o, err := s.Workflows.Onboarding(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// dismissOnboarding is POST /api/v1/orgs/active/onboarding/dismiss: any
// member may put the guide away for the organization.
func (s *Server) dismissOnboarding(w http.ResponseWriter, r *http.Request) error {
	o, err := s.Workflows.Dismiss(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// seedDemoAnswer answers POST /api/v1/orgs/active/seed-demo.
type seedDemoAnswer struct {
	Created    workflows.Names      `json:"created"`
	Onboarding workflows.Onboarding `json:"onboarding"`
	Skipped    workflows.Names      `json:"skipped"`
	Runs       []string             `json:"runs"`
}

// seedDemo is POST /api/v1/orgs/active/seed-demo (owner or admin): the
// support-triage workflow and the demo agent, each skipped when its name
// is taken, then the demo traffic replayed through the gateway as the
// tenant. The answer says which were created and which skipped, the runs
// the replay recorded, and the onboarding state after it.
func (s *Server) seedDemo(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	res, err := s.Workflows.SeedDemo(r.Context(), id.TenantID)
	if err != nil {
		return err
	}
	runs, err := s.Workflows.ReplayDemo(r.Context(), demoGateway{s.Gateway}, id, s.Config.ProviderName() == "mock")
	s.Audit.Record(r.Context(), audit.Event{
		TenantID: id.TenantID, Actor: id.Actor(), Action: "org.seed_demo", Decision: audit.Allow,
		Target: workflows.SupportTriageID, Details: map[string]any{"created": res.Created, "skipped": res.Skipped, "runs": len(runs)},
	})
	if err != nil {
		return err
	}
	o, err := s.Workflows.Onboarding(r.Context(), id.TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, seedDemoAnswer{Created: res.Created, Onboarding: o, Skipped: res.Skipped, Runs: runs})
	return nil
}

// demoGateway is the gateway as the demo's replay calls it: the chat
// request path from the parse on, without HTTP.
type demoGateway struct{ g *gateway.Gateway }

func (d demoGateway) Chat(ctx context.Context, id *auth.Identity, body []byte) (string, string, error) {
	req, err := gateway.ParseRequest(body)
	if err != nil {
		return "", "", err
	}
	res, err := d.g.Complete(ctx, id, req)
	return res.RunID, res.Route, err
}
