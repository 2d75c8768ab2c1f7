package httpapi

import (
	"net/http"
	"strconv"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/errs"
)

// auditEventList answers GET /api/v1/audit.
type auditEventList struct {
	Events []audit.Event `json:"events"`
}

// listAudit lists the tenant's audit events, newest first; query limit,
// decision (allow, deny, require_approval), action, actor, since, until.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := audit.Filter{Decision: q.Get("decision"), Action: q.Get("action"), Actor: q.Get("actor")}
	var err error
	if f.Since, err = queryTime(r, "since"); err != nil {
		return err
	}
	if f.Until, err = queryTime(r, "until"); err != nil {
		return err
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errs.Invalidf("limit", "limit must be a whole number")
		}
		f.Limit = n
	}
	events, err := s.Audit.List(r.Context(), identity(r).TenantID, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, auditEventList{Events: events})
	return nil
}
