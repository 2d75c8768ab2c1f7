package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/responses"
	"github.com/svc-gateway/svc/pkg/pluginapi"
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
	readable := true
	if in.PreviousResponseID != "" || len(in.References) > 0 {
		if _, readable, err = s.runReader(r); err != nil {
			return err
		}
	}
	if len(in.References) > maxReferences {
		return errs.Invalidf("input", "at most %d item_reference items per request", maxReferences)
	}
	var history []json.RawMessage
	if in.PreviousResponseID != "" {
		if !readable {
			return previousNotFound(responseNotFound(in.PreviousResponseID), in.PreviousResponseID)
		}
		var prev responses.Response
		prev, history, err = s.storedResponse(r.Context(), tenantID, in.PreviousResponseID)
		if err != nil {
			return previousNotFound(err, in.PreviousResponseID)
		}
		if prev.Status == "failed" {
			return errs.Invalidf("previous_response_id", "Previous response with id '%.64s' failed; there is no conversation to continue.", in.PreviousResponseID)
		}
	}
	var refs map[string]responses.Item
	if readable { // else Request.Chat names the first item it cannot find
		if refs, err = s.references(r.Context(), tenantID, in.References); err != nil {
			return err
		}
	}
	chatBody, err := in.Chat(history, refs)
	if err != nil {
		return err
	}
	req, err := gateway.ParseRequest(chatBody)
	if err != nil {
		return err
	}
	req.Origin = in.Origin()
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
		return errs.Wrap(err, errs.Upstream, pluginapi.CodeBadResponse, "the provider's answer could not be read")
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
// the conversation it ends. Another tenant's, or a deleted one, is not
// found.
func (s *Server) storedResponse(ctx context.Context, tenantID, id string) (responses.Response, []json.RawMessage, error) {
	run, err := s.storedRun(ctx, tenantID, id)
	if err != nil {
		return responses.Response{}, nil, err
	}
	resp, history, err := responses.Stored(run)
	if err != nil {
		return responses.Response{}, nil, responseNotFound(id) // a run that was no chat call
	}
	return resp, history, nil
}

// failureCode is the error code a failed run was answered with, as its
// last provider.failed event tells it; otherwise the run's status (a run
// recorded before events told it, or blocked).
func failureCode(events []ledger.Event, status string) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != "provider.failed" {
			continue
		}
		var failed struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(events[i].Payload, &failed) == nil && failed.Code != "" {
			return failed.Code
		}
		break
	}
	return status
}

// storedRun is the run behind one of the tenant's responses that was not
// deleted, with the origin its request kept.
func (s *Server) storedRun(ctx context.Context, tenantID, id string) (responses.Run, error) {
	runID, ok := responses.RunID(id)
	if !ok {
		return responses.Run{}, responseNotFound(id)
	}
	deleted, err := s.DeletedResponses.ResponseDeleted(ctx, tenantID, runID)
	if err != nil {
		return responses.Run{}, err
	}
	if deleted {
		return responses.Run{}, responseNotFound(id)
	}
	d, err := s.Runs.Get(ctx, tenantID, runID)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			err = responseNotFound(id)
		}
		return responses.Run{}, err
	}
	run := d.Run
	out := responses.Run{ID: run.ID, CreatedAt: run.CreatedAt.Unix(), Model: run.Model,
		Succeeded: run.Status == ledger.StatusOK, ErrorCode: failureCode(d.Events, run.Status), Error: run.Error,
		Request: run.Request, Response: run.Response}
	if len(d.Events) > 0 && d.Events[0].Type == "request.received" {
		var received struct {
			Origin json.RawMessage `json:"origin"`
		}
		if json.Unmarshal(d.Events[0].Payload, &received) == nil && len(received.Origin) > 0 {
			if err := responses.CheckOrigin(received.Origin); err != nil {
				s.log.Warn("stored response origin unreadable; serving the response without it", "run_id", run.ID, "error", err)
			} else {
				out.Origin = received.Origin
			}
		}
	}
	return out, nil
}

// maxReferences bounds the item_reference items of one request: each may
// name another stored run to read.
const maxReferences = 100

// runReader is the identity that may read the /v1 caller's stored runs (a
// response by id, the conversation of previous_response_id, referenced
// items): the credentials the management API would accept for reading
// them. In account mode a call without them may use the gateway, but never
// read what others sent through it. Their failure draws on the address's
// limit, as every failed management credential does, and a session that
// writes passes the management API's same-origin check.
//
// same is false when those credentials are of another tenant than the
// gateway's identity: the handlers then find nothing. Reading the
// management identity's tenant instead would copy one tenant's
// conversation into a run recorded in another's ledger, so a stored
// response is read only when both identities are of its tenant.
func (s *Server) runReader(r *http.Request) (reader *auth.Identity, same bool, err error) {
	reader, err = s.Auth.Identify(r, auth.ScopeManagement)
	if err != nil {
		if errs.Is(err, errs.Unauthorized) {
			if lerr := s.limit(r, "ip:"+s.clientKey(r)); lerr != nil {
				return nil, false, lerr
			}
		}
		return nil, false, err
	}
	if reader.Via == auth.ViaSession && !safeMethod(r.Method) {
		if err := s.sameOrigin(r); err != nil {
			return nil, false, err
		}
	}
	return reader, reader.TenantID == identity(r).TenantID, nil
}

// orNotFound is err, or when runReader found the response's tenant is not
// the caller's, the response not found.
func orNotFound(err error, id string) error {
	if err != nil {
		return err
	}
	return responseNotFound(id)
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
	if _, same, err := s.runReader(r); err != nil || !same {
		return orNotFound(err, r.PathValue("id"))
	}
	resp, _, err := s.storedResponse(r.Context(), identity(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// Paging of a response's input items, as OpenAI's.
const (
	defaultInputItems = 20
	maxInputItems     = 100
)

// listInputItems is GET /v1/responses/{id}/input_items: the items the
// request's own input made, a page in OpenAI's list shape.
func (s *Server) listInputItems(w http.ResponseWriter, r *http.Request) error {
	if _, same, err := s.runReader(r); err != nil || !same {
		return orNotFound(err, r.PathValue("id"))
	}
	q := r.URL.Query()
	limit := defaultInputItems
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxInputItems {
			return errs.Invalidf("limit", "Invalid 'limit': expected an integer from 1 to %d.", maxInputItems)
		}
		limit = n
	}
	order := q.Get("order")
	switch order {
	case "":
		order = "desc"
	case "asc", "desc":
	default:
		return errs.Invalidf("order", "Invalid 'order': expected 'asc' or 'desc'.")
	}
	id := r.PathValue("id")
	run, err := s.storedRun(r.Context(), identity(r).TenantID, id)
	if err != nil {
		return err
	}
	items, err := responses.InputItems(run)
	if err != nil {
		return responseNotFound(id) // a run that was no chat call
	}
	writeJSON(w, http.StatusOK, responses.ListInputItems(items, order, q.Get("after"), limit))
	return nil
}

// responseDeleted is the answer to DELETE /v1/responses/{id}, as OpenAI's.
type responseDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// deleteResponse is DELETE /v1/responses/{id}. The run stays in the
// ledger, evidence of the call; the response is recorded as deleted and
// the Responses API no longer reads it (by id, its input items,
// previous_response_id or item_reference).
func (s *Server) deleteResponse(w http.ResponseWriter, r *http.Request) error {
	respID := r.PathValue("id")
	id, same, err := s.runReader(r)
	if err != nil || !same {
		return orNotFound(err, respID)
	}
	if _, _, err := s.storedResponse(r.Context(), id.TenantID, respID); err != nil {
		return err
	}
	runID, _ := responses.RunID(respID)
	deleted, err := s.DeletedResponses.DeleteResponse(r.Context(), id.TenantID, runID, s.Now())
	if err != nil {
		return err
	}
	if !deleted { // deleted meanwhile
		return responseNotFound(respID)
	}
	s.Audit.Record(r.Context(), audit.Event{TenantID: id.TenantID, Actor: id.Actor(), Action: "response.delete",
		Decision: audit.Allow, Target: respID, Details: map[string]any{"runId": runID}})
	writeJSON(w, http.StatusOK, responseDeleted{ID: respID, Object: "response", Deleted: true})
	return nil
}

// cancelResponse is POST /v1/responses/{id}/cancel. svc answers every
// response before its call returns, none in the background, so there is
// never one to cancel: OpenAI's answer for a response that was not
// created with background=true.
func (s *Server) cancelResponse(w http.ResponseWriter, r *http.Request) error {
	if _, same, err := s.runReader(r); err != nil || !same {
		return orNotFound(err, r.PathValue("id"))
	}
	if _, _, err := s.storedResponse(r.Context(), identity(r).TenantID, r.PathValue("id")); err != nil {
		return err
	}
	return errs.E(errs.Invalid, "not_background", "Only responses created with background=true can be cancelled.")
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
