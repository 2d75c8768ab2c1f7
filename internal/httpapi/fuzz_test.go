package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzJSONBodies sends arbitrary bodies to every JSON-decoding endpoint: no
// input may produce a 5xx, and a refusal is always a JSON error.
func FuzzJSONBodies(f *testing.F) {
	for _, seed := range []string{
		`{"name":"k","mode":"observe"}`,
		`{"name":"k","mode":"optimize","appId":"a","admin":true}`,
		`{"key":"retention_days","value":7}`,
		`{"key":"webhook_url","value":"http://2130706433/"}`,
		`{"key":"webhook_secret","value":null}`,
		`{"name":"k","name":"j","mode":"observe"}`,
		`{"NAME":"k","Mode":"observe"}`,
		`{"name":"\u0000","mode":"observe"}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		`{"key":"retention_days","value":1e309}`,
		`{} {}`, `null`, `"str"`, ``, "\xff\xfe",
	} {
		f.Add(uint8(0), seed)
		f.Add(uint8(1), seed)
	}
	ts := newServer(f, bootstrap, map[string]string{"SVC_RATE_LIMIT": "0"})
	handler := ts.Config.Handler
	routes := []struct{ method, path string }{{"POST", "/api/v1/keys"}, {"PUT", "/api/v1/settings"}}
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		rt := routes[int(route)%len(routes)]
		req := httptest.NewRequest(rt.method, rt.path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bootstrap)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: status %d: %s", rt.method, rt.path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && !strings.HasPrefix(rec.Body.String(), `{"error":{"code":`) {
			t.Fatalf("%s %s with %q: error body is not JSON: %s", rt.method, rt.path, body, rec.Body)
		}
		if rec.Code != http.StatusOK && rec.Code != http.StatusCreated && rec.Code != http.StatusBadRequest {
			t.Fatalf("%s %s with %q: unexpected status %d", rt.method, rt.path, body, rec.Code)
		}
	})
}
