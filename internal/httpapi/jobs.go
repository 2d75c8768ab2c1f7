package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/jobs"
)

// listJobs is GET /api/v1/jobs: the tenant's jobs, newest first, and the
// counts per state; query status (queued, running, succeeded, failed) and
// limit.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	f := jobs.Filter{Status: r.URL.Query().Get("status")}
	var err error
	if f.Limit, err = queryInt(r, "limit"); err != nil {
		return err
	}
	l, err := s.Jobs.List(r.Context(), identity(r).TenantID, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}
