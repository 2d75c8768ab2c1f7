package httpapi

import (
	"net/http"

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
	return writeResult(w, res, err)
}
