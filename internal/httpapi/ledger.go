package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/ledger"
)

// checkpointList is the answer of GET /api/v1/ledger/checkpoints.
type checkpointList struct {
	Checkpoints []ledger.Checkpoint `json:"checkpoints"`
	Total       int                 `json:"total"`
}

// listCheckpoints is GET /api/v1/ledger/checkpoints: the tenant's signed
// checkpoints, newest first; query limit, offset.
func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := queryPage(r)
	if err != nil {
		return err
	}
	cps, total, err := s.Ledger.List(r.Context(), identity(r).TenantID, limit, offset)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, checkpointList{Checkpoints: cps, Total: total})
	return nil
}

// ledgerKey is GET /api/v1/ledger/key: the public key checkpoints are
// signed with, to keep apart from svc and give to svc verify.
func (s *Server) ledgerKey(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, s.Ledger.Key().Info())
	return nil
}
