package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/spend"
)

// spendReport is GET /api/v1/spend: the tenant's counters of one scope
// (query scope, default tenant) over the current window (query window,
// default day), every replica's, highest cost first.
func (s *Server) spendReport(w http.ResponseWriter, r *http.Request) error {
	scope, err := queryChoice(r, "scope", spend.Tenant, spend.Scopes)
	if err != nil {
		return err
	}
	window, err := queryChoice(r, "window", spend.Day, spend.Windows)
	if err != nil {
		return err
	}
	rep, err := s.Spend.Report(r.Context(), identity(r).TenantID, scope, window)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// queryChoice reads the query parameter name, one of choices; absent is
// def.
func queryChoice[T ~string](r *http.Request, name string, def T, choices []T) (T, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	if !slices.Contains(choices, T(v)) {
		names := make([]string, len(choices))
		for i, c := range choices {
			names[i] = string(c)
		}
		return def, errs.Invalidf(name, "%s must be one of %s", name, strings.Join(names, ", "))
	}
	return T(v), nil
}
