package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/approval"
)

// approvalList answers GET /api/v1/approvals.
type approvalList struct {
	Approvals []approval.Approval `json:"approvals"`
}

// approvalAnswer answers a decision on one approval.
type approvalAnswer struct {
	Approval approval.Approval `json:"approval"`
}

// listApprovals is GET /api/v1/approvals: newest first; query status
// (pending, approved, rejected) and limit.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	f := approval.Filter{Status: r.URL.Query().Get("status")}
	var err error
	if f.Limit, err = queryInt(r, "limit"); err != nil {
		return err
	}
	list, err := s.Approvals.List(r.Context(), identity(r).TenantID, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, approvalList{Approvals: list})
	return nil
}

type decisionRequest struct {
	Reason string `json:"reason"`
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) error { return s.decide(w, r, true) }
func (s *Server) reject(w http.ResponseWriter, r *http.Request) error  { return s.decide(w, r, false) }

// decide is POST /api/v1/approvals/:id/approve and /reject (admin).
func (s *Server) decide(w http.ResponseWriter, r *http.Request, approve bool) error {
	var req decisionRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	a, err := s.Governor.DecideApproval(r.Context(), identity(r), r.PathValue("id"), approve, req.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, approvalAnswer{Approval: a})
	return nil
}
