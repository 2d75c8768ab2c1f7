package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/errs"
)

// listProviders is GET /api/v1/providers (admin of the default
// organization): the provider instances, their routes, retries and health,
// and how the last load of the providers file went. Never a key.
func (s *Server) listProviders(w http.ResponseWriter, r *http.Request) error {
	// The operator's upstreams, their errors and traffic are no other
	// organization's business.
	if err := operatorOnly(identity(r), "read the providers, which serve every organization"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.Providers.Status())
	return nil
}

// reloadProviders is POST /api/v1/providers/reload (admin of the default
// organization): the providers file loaded again, as on SIGHUP. A file
// that does not load is a 400 providers_invalid with the file's words and
// the status beside; the last good set keeps serving. Either way it is
// audited.
func (s *Server) reloadProviders(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	if err := operatorOnly(id, "reload the providers, which serve every organization"); err != nil {
		return err
	}
	st, err := s.ReloadProviders(r.Context())
	e := audit.Event{TenantID: id.TenantID, Actor: id.Actor(), Action: "providers.reload", Decision: audit.Allow,
		Details: map[string]any{"ok": err == nil, "providers": len(st.Providers), "source": st.Source}}
	if err != nil {
		e.Decision, e.Details["error"] = audit.Deny, st.Error
	}
	s.Audit.Record(r.Context(), e)
	if err != nil {
		return &errs.Error{Kind: errs.Invalid, Code: "providers_invalid", Err: err,
			Public: "the providers file did not load, and the providers in use keep serving: " + st.Error, Beside: map[string]any{"status": st}}
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
