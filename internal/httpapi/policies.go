package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/tenant"
)

// listPolicies is GET /api/v1/policies: the rules in force, how often each
// matched the tenant's requests lately, and how the last load went.
func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request) error {
	p, err := s.Governor.Policies(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// verdictList answers GET /api/v1/policies/{id}/verdicts.
type verdictList struct {
	Verdicts []governance.RuleVerdict `json:"verdicts"`
}

// policyVerdicts is GET /api/v1/policies/{id}/verdicts: the tenant's
// recent verdicts the rule took part in, newest first; query limit.
func (s *Server) policyVerdicts(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit")
	if err != nil {
		return err
	}
	v, err := s.Governor.Verdicts(r.Context(), identity(r).TenantID, r.PathValue("id"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, verdictList{Verdicts: v})
	return nil
}

// reloadAnswer answers POST /api/v1/policies/reload.
type reloadAnswer struct {
	Reload policy.Status `json:"reload"`
}

// operatorOnly refuses, 403 admin_required, a caller of any organization
// but the operator's own (the default one): what serves or governs every
// organization is its alone to read or change. what completes "may …".
func operatorOnly(id *auth.Identity, what string) error {
	if id.TenantID != tenant.DefaultID {
		return errs.E(errs.Forbidden, "admin_required", "only an admin of the default organization may %s", what)
	}
	return nil
}

// reloadPolicies is POST /api/v1/policies/reload (admin): the policy folder
// loaded again, as on SIGHUP. A folder that does not load is a 400
// policy_invalid with the loader's words and the status beside; the last
// good rules stay in force. Either way it is audited.
func (s *Server) reloadPolicies(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	if err := operatorOnly(id, "reload the policies, which govern every organization"); err != nil {
		return err
	}
	st, err := s.Reload()
	e := audit.Event{TenantID: id.TenantID, Actor: id.Actor(), Action: "policy.reload", Decision: audit.Allow,
		Details: map[string]any{"ok": st.OK, "rules": st.Rules}}
	if err != nil {
		e.Decision, e.Details["error"] = audit.Deny, st.Error
	}
	s.Audit.Record(r.Context(), e)
	if err != nil {
		return &errs.Error{Kind: errs.Invalid, Code: "policy_invalid", Err: err,
			Public: "the policies did not load, and the rules in force stay: " + st.Error, Beside: map[string]any{"reload": st}}
	}
	writeJSON(w, http.StatusOK, reloadAnswer{Reload: st})
	return nil
}
