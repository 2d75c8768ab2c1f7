package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// The headers every gateway answer carries once a run exists.
const (
	headerRunID = "x-svc-run-id"
	headerRoute = "x-svc-route"
)

// chatCompletions is POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	req, err := gateway.ParseRequest(body)
	if err != nil {
		return err
	}
	id := identity(r)
	if req.Stream {
		return s.streamCompletion(w, r, req)
	}
	res, err := s.Gateway.Complete(r.Context(), id, req)
	return writeResult(w, res, err)
}

// writeResult answers with a gateway call's result: its run's headers
// whenever a run was recorded, then the error, or the provider's body as
// it came.
func writeResult(w http.ResponseWriter, res gateway.Result, err error) error {
	if res.RunID != "" {
		setRunHeaders(w, res.RunID, res.Route)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(res.Body)))
	_, _ = w.Write(res.Body)
	return nil
}

func setRunHeaders(w http.ResponseWriter, runID, route string) {
	h := w.Header()
	h[keyRunID] = []string{runID}
	h[keyRoute] = []string{route}
}

// The run headers' keys in canonical form, as Header.Set stores them,
// worked out once rather than on every answer.
var (
	keyRunID    = http.CanonicalHeaderKey(headerRunID)
	keyRoute    = http.CanonicalHeaderKey(headerRoute)
	keyOverhead = http.CanonicalHeaderKey(headerOverhead)
)

// streamCompletion answers with Server-Sent Events: one chunk per event as
// the provider sends it, then "data: [DONE]" once the run is recorded.
func (s *Server) streamCompletion(w http.ResponseWriter, r *http.Request, req *gateway.Request) error {
	sink := &sseSink{w: w, rc: http.NewResponseController(w)}
	res, err := s.Gateway.Stream(r.Context(), identity(r), req, sink)
	if err != nil && !sink.started {
		setRunHeaders(w, res.RunID, res.Route)
		return err
	}
	if errors.Is(err, context.Canceled) {
		info(r).status = httpstatus.ClientClosed
		return nil // nobody is listening
	}
	if err != nil {
		// Mid-stream: the status is sent; say what happened in the stream.
		info(r).code = errs.Code(err)
		b, _ := json.Marshal(providerErrorBody{Error: providerDetail(err)})
		_ = sink.write(b)
		return nil
	}
	if !sink.started {
		if err := sink.Begin(res.RunID, res.Route); err != nil {
			return nil
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = sink.rc.Flush()
	return nil
}

// sseSink writes a stream as Server-Sent Events, flushing each event.
type sseSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	buf     []byte
}

func (s *sseSink) Begin(runID, route string) error {
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	setRunHeaders(s.w, runID, route)
	s.w.WriteHeader(http.StatusOK)
	// Streams may outlive the server's read timeout; each write gets time.
	// The headers leave with the first event, in the same write.
	_ = s.rc.SetWriteDeadline(time.Time{})
	return nil
}

func (s *sseSink) Chunk(data []byte) error { return s.write(data) }

func (s *sseSink) write(data []byte) error {
	s.buf = append(append(append(s.buf[:0], "data: "...), data...), "\n\n"...)
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// modelList answers GET /v1/models in the provider's list shape.
type modelList struct {
	Data   []providerModel `json:"data"`
	Object string          `json:"object"`
}

// providerModel is one model of modelList. svc_kind, an extension the
// provider's clients ignore, says which endpoint answers it: "chat"
// (/v1/chat/completions) or "embedding" (/v1/embeddings).
type providerModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Kind    string `json:"svc_kind"`
}

// models is GET /v1/models, in the provider's list shape.
func (s *Server) models(w http.ResponseWriter, r *http.Request) error {
	models, err := s.Gateway.Models(r.Context())
	if err != nil {
		return err
	}
	data := make([]providerModel, 0, len(models))
	for _, m := range models {
		kind := m.Kind
		switch kind {
		case "":
			kind = pluginapi.KindChat // a plugin older than kinds serves chat
		case pluginapi.KindChat, pluginapi.KindEmbedding:
		default:
			continue // svc has no endpoint that would answer it
		}
		data = append(data, providerModel{ID: m.ID, Object: "model", Created: m.Created, OwnedBy: m.OwnedBy, Kind: kind})
	}
	writeJSON(w, http.StatusOK, modelList{Data: data, Object: "list"})
	return nil
}
