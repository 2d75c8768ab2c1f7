package httpapi

import "net/http"

// static serves the dashboard's embedded files.
func (s *Server) static(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return methodNotAllowed(w, []string{http.MethodGet, http.MethodHead})
	}
	s.files.ServeHTTP(w, r)
	return nil
}
