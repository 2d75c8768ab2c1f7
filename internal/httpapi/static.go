package httpapi

import "net/http"

// static serves the dashboard's embedded files.
func (s *Server) static(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return methodNotAllowed(w, []string{http.MethodGet, http.MethodHead})
	}
	if r.URL.RawQuery != "" {
		// A query may carry a one-time token: keep the answer out of caches.
		w.Header().Set("Cache-Control", "no-store")
	}
	s.files.ServeHTTP(w, r)
	return nil
}

// page serves the embedded file name at a clean path (/accept-invite is
// accept-invite.html). The account pages read a one-time token from their
// query string, so their answers are never stored by a cache; the request
// log shows the path alone (see logPath).
func (s *Server) page(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, s.Web, name)
		return nil
	}
}
