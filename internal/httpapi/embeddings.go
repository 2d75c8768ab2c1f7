package httpapi

import (
	"net/http"
	"strconv"

	"github.com/svc-gateway/svc/internal/gateway"
)

// embeddings is POST /v1/embeddings.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	req, err := gateway.ParseEmbedRequest(body)
	if err != nil {
		return err
	}
	res, err := s.Gateway.Embed(r.Context(), identity(r), req)
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
