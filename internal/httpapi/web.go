package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/browse"
)

// webFetch is POST /api/v1/web/fetch.
func (s *Server) webFetch(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		URL         string `json:"url"`
		BypassCache bool   `json:"bypassCache"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	res, err := s.SemanticWeb.Fetch(r.Context(), identity(r), body.URL, body.BypassCache)
	if err != nil {
		return err
	}
	b, err := res.JSON()
	if err != nil {
		return err
	}
	writeRawJSON(w, http.StatusOK, b)
	return nil
}

// listSnapshots is GET /api/v1/web/snapshots: newest first, without their
// SOM; query url, limit, offset.
func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := queryPage(r)
	if err != nil {
		return err
	}
	list, total, err := s.SemanticWeb.Snapshots(r.Context(), identity(r).TenantID, r.URL.Query().Get("url"), limit, offset)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Snapshots []browse.Snapshot `json:"snapshots"`
		Total     int               `json:"total"`
	}{list, total})
	return nil
}

// getSnapshot is GET /api/v1/web/snapshots/{id}, with its SOM.
func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) error {
	snap, err := s.SemanticWeb.SnapshotByID(r.Context(), identity(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Snapshot browse.Snapshot `json:"snapshot"`
	}{snap})
	return nil
}

// openWebSession is POST /api/v1/web/sessions.
func (s *Server) openWebSession(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		URL string `json:"url"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	opened, err := s.WebSessions.Open(r.Context(), identity(r), body.URL)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, opened)
	return nil
}

// listWebSessions is GET /api/v1/web/sessions.
func (s *Server) listWebSessions(w http.ResponseWriter, r *http.Request) error {
	list, err := s.WebSessions.List(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Sessions []browse.SessionInfo `json:"sessions"`
	}{list})
	return nil
}

// actWebSession is POST /api/v1/web/sessions/{id}/act.
func (s *Server) actWebSession(w http.ResponseWriter, r *http.Request) error {
	var a browse.Action
	if err := decodeJSON(r, &a); err != nil {
		return err
	}
	acted, err := s.WebSessions.Act(r.Context(), identity(r), r.PathValue("id"), a)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, acted)
	return nil
}

// closeWebSession is DELETE /api/v1/web/sessions/{id}.
func (s *Server) closeWebSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.WebSessions.CloseSession(r.Context(), identity(r), r.PathValue("id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, okResponse{OK: true})
	return nil
}
