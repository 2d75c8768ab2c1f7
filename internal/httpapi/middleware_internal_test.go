package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The security headers' values are shared by every answer: a handler that
// adds to one, or sets it anew, changes its own answer only.
func TestSecurityHeadersAreNotSharedAcrossAnswers(t *testing.T) {
	s := &Server{}
	h := s.securityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if add := r.URL.Query().Get("add"); add != "" {
			w.Header().Add("Cache-Control", add)
			w.Header().Add("X-Frame-Options", "SAMEORIGIN-"+add)
		}
	}))
	for _, path := range []string{"/v1/models", "/"} {
		first := httptest.NewRecorder()
		h.ServeHTTP(first, httptest.NewRequest("GET", path+"?add=private", nil))
		second := httptest.NewRecorder()
		h.ServeHTTP(second, httptest.NewRequest("GET", path, nil))
		// A third answer that adds something else must not write over what
		// the first one added (as it would if they shared spare room).
		third := httptest.NewRecorder()
		h.ServeHTTP(third, httptest.NewRequest("GET", path+"?add=public", nil))
		assert.Equal(t, []string{"nosniff"}, second.Header().Values("X-Content-Type-Options"), path)
		if path == "/" {
			assert.Equal(t, []string{"DENY", "SAMEORIGIN-private"}, first.Header().Values("X-Frame-Options"))
			assert.Equal(t, []string{"DENY", "SAMEORIGIN-public"}, third.Header().Values("X-Frame-Options"))
			assert.Equal(t, []string{"DENY"}, second.Header().Values("X-Frame-Options"))
			assert.Equal(t, []string{"no-referrer"}, second.Header().Values("Referrer-Policy"))
		} else {
			assert.Equal(t, []string{"no-store", "private"}, first.Header().Values("Cache-Control"))
			assert.Equal(t, []string{"no-store", "public"}, third.Header().Values("Cache-Control"))
			assert.Equal(t, []string{"no-store"}, second.Header().Values("Cache-Control"))
		}
	}
}
