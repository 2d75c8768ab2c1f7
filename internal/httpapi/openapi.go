package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of every route in
// routes.go, built into the binary. Its schemas describe the JSON of the
// answer and request types. The tests check that it names every route
// routes.go registers and nothing the router does not serve, and that it
// describes every field of those types; edit it with the route or type.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI answers the API description. It is public: it describes the API,
// not a tenant's data, and tools read it before they hold a key.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	writeRawJSON(w, http.StatusOK, openAPIDocument)
	return nil
}
