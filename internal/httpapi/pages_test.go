package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/httpapi"
	"github.com/svc-gateway/svc/internal/logtest"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/pkg/netguard"
	"github.com/svc-gateway/svc/web"
)

// pagesHandler is svc's handler over the real embedded console, logging
// into buf.
func pagesHandler(t *testing.T, buf *logtest.Buffer) http.Handler {
	t.Helper()
	logger := hclog.New(&hclog.LoggerOptions{Output: buf, JSONFormat: true, Level: hclog.Info})
	cfg, err := config.FromEnv(func(string) string { return "" })
	require.NoError(t, err)
	s := storetest.Open(t)
	keys := auth.NewKeys(s, nil)
	return httpapi.New(httpapi.Deps{
		Config: cfg, Logger: logger, Store: s, Auth: auth.NewAuthenticator(cfg.APIKey, keys, nil), Keys: keys,
		Settings: settings.NewService(s, &netguard.Guard{}, nil), Audit: audit.NewLog(s, logger, nil), Web: web.FS,
	}).Handler()
}

func TestAccountPagesAreServedAtCleanPaths(t *testing.T) {
	var buf logtest.Buffer
	h := pagesHandler(t, &buf)
	for path, script := range map[string]string{
		"/accept-invite":  "/accept-invite.js",
		"/reset-password": "/reset-password.js",
		"/verify-email":   "/verify-email.js",
		"/":               "/console/app.js",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		assert.Contains(t, rec.Header().Get("Content-Type"), "text/html", path)
		assert.Contains(t, rec.Header().Get("Content-Security-Policy"), "script-src 'self'", path)
		body := rec.Body.String()
		assert.Contains(t, body, `<script type="module" src="`+script+`"></script>`, path)
		assert.Contains(t, body, `aria-live="polite"`, path)
		assert.Contains(t, body, "<main", path)
		assert.NotContains(t, body, "<style", "styles live in style.css: %s", path)
		assert.NotContains(t, body, "style=", "no inline style: %s", path)
		assert.NotRegexp(t, `<script>|<script [^>]*>[^<]`, body, "no inline script: %s", path)

		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", script, nil))
		require.Equal(t, http.StatusOK, rec.Code, script)
		assert.Contains(t, rec.Header().Get("Content-Type"), "javascript", "modules need a script type under nosniff: %s", script)
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("HEAD", "/accept-invite", nil))
	assert.Equal(t, http.StatusOK, rec.Code, "HEAD works")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/accept-invite", strings.NewReader("{}")))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code, "the pages are GET and HEAD only")
}

// The token in a page's link reaches neither the request log nor a cache,
// nor another site through the Referer header.
func TestAccountPageTokensAreNotLoggedOrCached(t *testing.T) {
	var buf logtest.Buffer
	h := pagesHandler(t, &buf)
	const secret = "tok-0123456789abcdefSECRET"
	paths := []string{"/accept-invite", "/reset-password", "/verify-email", "/accept-invite.html"}
	for _, path := range paths {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path+"?token="+secret, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"), path)
		assert.Equal(t, "no-referrer", rec.Header().Get("Referrer-Policy"), path)
	}
	lines := jsonLines(&buf)
	require.Len(t, lines, len(paths), "one log line per page request")
	for i, line := range lines {
		assert.Equal(t, paths[i], line["path"])
	}
	assert.NotContains(t, buf.String(), secret, "the token is never logged")
	assert.NotContains(t, buf.String(), "token=")
}
