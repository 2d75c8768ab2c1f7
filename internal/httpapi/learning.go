package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/learning/synth"
)

// patternList answers GET /api/v1/patterns.
type patternList struct {
	Patterns []synth.Pattern `json:"patterns"`
}

// patternAnswer answers an operator's action on one pattern.
type patternAnswer struct {
	Pattern synth.Pattern `json:"pattern"`
}

// artifactList answers GET /api/v1/artifacts.
type artifactList struct {
	Artifacts []synth.Artifact `json:"artifacts"`
}

// artifactAnswer answers an operator's action on one artifact.
type artifactAnswer struct {
	Artifact synth.Artifact `json:"artifact"`
}

// listPatterns is GET /api/v1/patterns: the tenant's patterns, most
// optimizable first.
func (s *Server) listPatterns(w http.ResponseWriter, r *http.Request) error {
	ps, err := s.Learning.Patterns(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, patternList{Patterns: ps})
	return nil
}

// getPattern is GET /api/v1/patterns/:id: the pattern with its artifacts
// and example runs.
func (s *Server) getPattern(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Learning.PatternDetail(r.Context(), identity(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// synthesizePattern is POST /api/v1/patterns/:id/synthesize (admin): try to
// learn an artifact now. 201 with the artifact when one was made, else 200
// with artifact null and the synthesis report saying why.
func (s *Server) synthesizePattern(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	res, err := s.Learning.Synthesize(r.Context(), id.TenantID, r.PathValue("id"), id.Actor())
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Artifact != nil {
		status = http.StatusCreated
	}
	writeJSON(w, status, res)
	return nil
}

// ignorePattern is POST /api/v1/patterns/:id/ignore (admin).
func (s *Server) ignorePattern(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	p, err := s.Learning.Ignore(r.Context(), id.TenantID, r.PathValue("id"), id.Actor())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, patternAnswer{Pattern: p})
	return nil
}

// listArtifacts is GET /api/v1/artifacts.
func (s *Server) listArtifacts(w http.ResponseWriter, r *http.Request) error {
	as, err := s.Learning.Artifacts(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, artifactList{Artifacts: as})
	return nil
}

// getArtifact is GET /api/v1/artifacts/:id: {artifact, evaluations, pattern}.
func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Learning.ArtifactDetail(r.Context(), identity(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

type promoteRequest struct {
	Confirm bool `json:"confirm"`
}

// promoteArtifact is POST /api/v1/artifacts/:id/promote (admin), body
// optional {confirm}: 409 with the gate's reasons when it does not pass.
func (s *Server) promoteArtifact(w http.ResponseWriter, r *http.Request) error {
	var req promoteRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			return err
		}
	}
	id := identity(r)
	a, err := s.Learning.Promote(r.Context(), id.TenantID, r.PathValue("id"), req.Confirm, id.Actor())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, artifactAnswer{Artifact: a})
	return nil
}

// rollbackArtifact is POST /api/v1/artifacts/:id/rollback (admin): retire.
func (s *Server) rollbackArtifact(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	a, err := s.Learning.Rollback(r.Context(), id.TenantID, r.PathValue("id"), id.Actor())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, artifactAnswer{Artifact: a})
	return nil
}

// quarantineArtifact is POST /api/v1/artifacts/:id/quarantine (admin).
func (s *Server) quarantineArtifact(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	a, err := s.Learning.Quarantine(r.Context(), id.TenantID, r.PathValue("id"), id.Actor(), "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, artifactAnswer{Artifact: a})
	return nil
}

type replayRequest struct {
	RunIDs []string `json:"runIds"`
}

// replayArtifact is POST /api/v1/artifacts/:id/replay (admin), body
// optional {runIds}: the holdout runs when omitted.
func (s *Server) replayArtifact(w http.ResponseWriter, r *http.Request) error {
	var req replayRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			return err
		}
	}
	res, err := s.Learning.Replay(r.Context(), identity(r).TenantID, r.PathValue("id"), req.RunIDs)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// learningReport is GET /api/v1/learning/report: the last report (also
// spread at the top level) and the history.
func (s *Server) learningReport(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.Learning.Reports(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// learningTick is POST /api/v1/learning/tick (admin): one learning pass
// now, answered with its report.
func (s *Server) learningTick(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.Learning.Pass(r.Context(), identity(r).TenantID, learning.TriggerTick)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
