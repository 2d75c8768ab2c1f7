package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ledger"
)

func queryInt(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errs.Invalidf(name, "%s must be a whole number", name)
	}
	return n, nil
}

// queryPage reads a list's limit and offset; the domain service judges
// their range.
func queryPage(r *http.Request) (limit, offset int, err error) {
	if limit, err = queryInt(r, "limit"); err != nil {
		return 0, 0, err
	}
	offset, err = queryInt(r, "offset")
	return limit, offset, err
}

// runList answers GET /api/v1/runs: a page of runs and how many match.
type runList struct {
	Runs  []ledger.Run `json:"runs"`
	Total int          `json:"total"`
}

// listRuns is GET /api/v1/runs: newest first; query route, status, app,
// agent, model, since, until, q, limit, offset.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	runs, total, err := s.Runs.List(r.Context(), identity(r).TenantID, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runList{Runs: runs, Total: total})
	return nil
}

// listFilter reads a filter of runs from r's query: route, status, app,
// agent, model, traceId, since, until, q, limit and offset. The ledger judges the
// values, and what a live stream cannot apply it refuses there.
func listFilter(r *http.Request) (ledger.Filter, error) {
	q := r.URL.Query()
	f := ledger.Filter{Route: q.Get("route"), Status: q.Get("status"), App: q.Get("app"), Agent: q.Get("agent"),
		Model: q.Get("model"), TraceID: q.Get("traceId"), Q: q.Get("q")}
	var err error
	if f.Since, err = queryTime(r, "since"); err != nil {
		return f, err
	}
	if f.Until, err = queryTime(r, "until"); err != nil {
		return f, err
	}
	f.Limit, f.Offset, err = queryPage(r)
	return f, err
}

// queryTime reads an RFC 3339 time; absent is the zero time.
func queryTime(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, errs.Invalidf(name, "%s must be a time in RFC 3339 form, such as 2026-01-02T15:04:05Z", name)
	}
	return t, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Runs.Get(r.Context(), identity(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) runIntegrity(w http.ResponseWriter, r *http.Request) error {
	res, err := s.Runs.Integrity(r.Context(), identity(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) replayBundle(w http.ResponseWriter, r *http.Request) error {
	b, err := s.Runs.ReplayBundle(r.Context(), identity(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

type feedbackRequest struct {
	Type       string  `json:"type"`
	Rating     float64 `json:"rating"` // 1.0 counts as 1, as a float-writing encoder sends it
	Correction *string `json:"correction"`
}

// feedbackAnswer answers POST /api/v1/runs/{id}/feedback.
type feedbackAnswer struct {
	Feedback ledger.Feedback `json:"feedback"`
}

func (s *Server) runFeedback(w http.ResponseWriter, r *http.Request) error {
	var req feedbackRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in := ledger.FeedbackInput{Type: req.Type}
	if r := int(req.Rating); float64(r) == req.Rating {
		in.Rating = r // the ledger judges it; a fraction stays 0, which it refuses
	}
	if req.Correction != nil {
		in.Correction = *req.Correction
	}
	tenantID := identity(r).TenantID
	f, err := s.Runs.AddFeedback(r.Context(), tenantID, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	if s.Learning != nil {
		run, err := s.Runs.Run(r.Context(), tenantID, f.RunID)
		if err != nil {
			return err
		}
		if err := s.Learning.Feedback(r.Context(), tenantID, run, f.Rating, f.Correction); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusCreated, feedbackAnswer{Feedback: f})
	return nil
}

type traceRequest struct {
	RunID   string          `json:"runId"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// traceAnswer answers POST /api/v1/trace: the event as chained, and for a
// tool event the verdict on it and the side effect it recorded.
type traceAnswer struct {
	Event      tracedEvent        `json:"event"`
	SideEffect *ledger.SideEffect `json:"sideEffect,omitempty"`
	Verdict    *ledger.Verdict    `json:"verdict,omitempty"`
}

// tracedEvent is where a traced event landed in the run's chain.
type tracedEvent struct {
	Hash ledger.Hash `json:"hash"`
	Seq  int         `json:"seq"`
	Type string      `json:"type"`
}

// trace is POST /api/v1/trace: append an event to a run's ledger.
func (s *Server) trace(w http.ResponseWriter, r *http.Request) error {
	var req traceRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	switch {
	case req.RunID == "":
		return errs.Invalidf("runId", "runId is required")
	case req.Payload == nil:
		return errs.Invalidf("payload", "payload is required (a JSON object)")
	}
	t, err := s.Tracer.Trace(r.Context(), identity(r), req.RunID, req.Type, req.Payload)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, traceAnswer{Event: tracedEvent{Hash: t.Event.Hash, Seq: t.Event.Seq, Type: t.Event.Type},
		SideEffect: t.SideEffect, Verdict: t.Verdict})
	return nil
}

// agentList answers GET /api/v1/agents.
type agentList struct {
	Agents []ledger.Agent `json:"agents"`
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	agents, err := s.Runs.Agents(r.Context(), identity(r).TenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, agentList{Agents: agents})
	return nil
}
