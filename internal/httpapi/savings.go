package httpapi

import (
	"net/http"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
)

// savings is GET /api/v1/savings: the summary of the tenant's runs, with a
// daily series; query since (RFC 3339 time or YYYY-MM-DD, UTC) narrows it.
func (s *Server) savings(w http.ResponseWriter, r *http.Request) error {
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, v); err != nil {
				return errs.Invalidf("since", "since must be an RFC 3339 time or a date (YYYY-MM-DD)")
			}
		}
		since = t
	}
	report, err := s.Runs.Savings(r.Context(), identity(r).TenantID, since)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, report)
	return nil
}
