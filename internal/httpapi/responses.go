package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/responses"
)

// createResponse is POST /v1/responses: the request becomes a chat request
// that runs through the gateway like any chat call, and its answer becomes
// a response.
func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	in, err := responses.Parse(body)
	if err != nil {
		return err
	}
	tenantID := identity(r).TenantID
	if in.PreviousResponseID != "" || len(in.References) > 0 {
		if err := s.mayReadRuns(r); err != nil {
			return err
		}
	}
	if len(in.References) > maxReferences {
		return errs.Invalidf("input", "at most %d item_reference items per request", maxReferences)
	}
	var history []json.RawMessage
	if in.PreviousResponseID != "" {
		var prev responses.Response
		prev, history, err = s.storedResponse(r.Context(), tenantID, in.PreviousResponseID)
		if err != nil {
			return previousNotFound(err, in.PreviousResponseID)
		}
		if prev.Status == "failed" {
			return errs.Invalidf("previous_response_id", "Previous response with id '%.64s' failed; there is no conversation to continue.", in.PreviousResponseID)
		}
	}
	refs, err := s.references(r.Context(), tenantID, in.References)
	if err != nil {
		return err
	}
	chatBody, err := in.Chat(history, refs)
	if err != nil {
		return err
	}
	req, err := gateway.ParseRequest(chatBody)
	if err != nil {
		return err
	}
	if in.Stream {
		return s.streamResponse(w, r, in, req)
	}
	res, err := s.Gateway.Complete(r.Context(), identity(r), req)
	if res.RunID != "" {
		setRunHeaders(w, res.RunID, res.Route)
	}
	if err != nil {
		return err
	}
	out := in.Response(responses.ResponseID(res.RunID), createdAt(res.RunID))
	if err := responses.FromCompletion(&out, res.Body); err != nil {
		return errs.Wrap(err, errs.Internal, "bad_upstream_answer", "the provider's answer could not be read")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// createdAt is when a run began, read from its id: the run's own time.
func createdAt(runID string) int64 {
	t, ok := ids.OrderedTime(runID)
	if !ok {
		t = time.Now()
	}
	return t.Unix()
}

// previousNotFound is an unknown previous_response_id, as OpenAI says it.
func previousNotFound(err error, id string) error {
	if !errs.Is(err, errs.NotFound) {
		return err
	}
	e := errs.Invalidf("previous_response_id", "Previous response with id '%.64s' not found.", id)
	e.Code = "previous_response_not_found"
	return e
}

// storedResponse rebuilds one of the tenant's responses from its run, and
// the conversation it ends. Another tenant's is not found.
func (s *Server) storedResponse(ctx context.Context, tenantID, id string) (responses.Response, []json.RawMessage, error) {
	runID, ok := responses.RunID(id)
	if !ok {
		return responses.Response{}, nil, responseNotFound(id)
	}
	run, err := s.Runs.Run(ctx, tenantID, runID)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			err = responseNotFound(id)
		}
		return responses.Response{}, nil, err
	}
	resp, history, err := responses.Stored(responses.Run{ID: run.ID, CreatedAt: run.CreatedAt.Unix(), Model: run.Model,
		Succeeded: run.Status == ledger.StatusOK, ErrorCode: run.Status, Error: run.Error,
		Request: run.Request, Response: run.Response})
	if err != nil {
		return responses.Response{}, nil, responseNotFound(id) // a run that was no chat call
	}
	return resp, history, nil
}

// maxReferences bounds the item_reference items of one request: each may
// name another stored run to read.
const maxReferences = 100

// mayReadRuns lets a /v1 caller read stored runs (a response by id, the
// conversation of previous_response_id, referenced items) only with
// credentials the management API would accept for reading them: in account
// mode a call without them may use the gateway, but never read what others
// sent through it.
func (s *Server) mayReadRuns(r *http.Request) error {
	_, err := s.Auth.Identify(r, auth.ScopeManagement)
	return err
}

func responseNotFound(id string) error {
	return errs.E(errs.NotFound, "not_found", "Response with id '%.64s' not found.", id)
}

// references resolves item_reference ids to the output items they name.
func (s *Server) references(ctx context.Context, tenantID string, ids []string) (map[string]responses.Item, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	refs := make(map[string]responses.Item, len(ids))
	runs := map[string]responses.Response{}
	for _, id := range ids {
		runID, index, ok := responses.ItemRun(id)
		if !ok {
			continue // Request.Chat names the item it cannot find
		}
		resp, seen := runs[runID]
		if !seen {
			var err error
			resp, _, err = s.storedResponse(ctx, tenantID, responses.ResponseID(runID))
			if err != nil && !errs.Is(err, errs.NotFound) {
				return nil, err
			}
			runs[runID] = resp
		}
		if it, ok := resp.Item(index); ok && it.ID == id {
			refs[id] = it
		}
	}
	return refs, nil
}

// getResponse is GET /v1/responses/{id}.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) error {
	if err := s.mayReadRuns(r); err != nil {
		return err
	}
	resp, _, err := s.storedResponse(r.Context(), identity(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// streamResponse answers with the Responses API's events, translated from
// the chat stream as it arrives; response.completed leaves once the run is
// recorded.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, in *responses.Request, req *gateway.Request) error {
	sink := &responseSink{sse: sseSink{w: w, rc: http.NewResponseController(w)}, in: in}
	res, err := s.Gateway.Stream(r.Context(), identity(r), req, sink)
	if err != nil && !sink.sse.started {
		setRunHeaders(w, res.RunID, res.Route)
		return err
	}
	if errors.Is(err, context.Canceled) {
		info(r).status = httpstatus.ClientClosed
		return nil
	}
	if !sink.sse.started {
		if err := sink.Begin(res.RunID, res.Route); err != nil {
			return nil
		}
	}
	if err != nil {
		info(r).code = errs.Code(err)
		_ = sink.stream.Fail(errs.Code(err), errs.Public(err))
		return nil
	}
	_ = sink.stream.Finish()
	return nil
}

// responseSink is the gateway's Sink for a streamed response.
type responseSink struct {
	sse    sseSink
	in     *responses.Request
	stream *responses.Stream
}

func (s *responseSink) Begin(runID, route string) error {
	if err := s.sse.Begin(runID, route); err != nil {
		return err
	}
	s.stream = responses.NewStream(s.in.Response(responses.ResponseID(runID), createdAt(runID)), s.event)
	return s.stream.Start()
}

func (s *responseSink) Chunk(data []byte) error { return s.stream.Chunk(data) }

// event writes one event with its name, as the Responses API does.
func (s *responseSink) event(typ string, data []byte) error {
	b := s.sse.buf[:0]
	b = append(append(append(b, "event: "...), typ...), "\ndata: "...)
	b = append(append(b, data...), "\n\n"...)
	s.sse.buf = b
	if _, err := s.sse.w.Write(b); err != nil {
		return err
	}
	return s.sse.rc.Flush()
}
