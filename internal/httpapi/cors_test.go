package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The headers the official openai SDK sends from a browser.
var sdkBrowserHeaders = []string{
	"authorization", "content-type", "openai-organization", "openai-project", "openai-beta", "idempotency-key",
	"x-stainless-os", "x-stainless-lang", "x-stainless-package-version", "x-stainless-runtime",
	"x-stainless-runtime-version", "x-stainless-arch", "x-stainless-retry-count", "x-stainless-timeout",
	"x-stainless-helper-method", "x-svc-app",
}

func preflight(t *testing.T, ts *testServer, path, asked string) response {
	t.Helper()
	res := ts.call(t, "OPTIONS", path, "", "", "Origin", "https://app.example",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", asked)
	require.Equal(t, http.StatusNoContent, res.status, res.body)
	assert.Equal(t, "*", res.header.Get("Access-Control-Allow-Origin"))
	assert.Empty(t, res.header.Get("Access-Control-Allow-Credentials"), "cookies never cross origins")
	return res
}

// allowed is the set of header names a preflight's answer allows, lower case.
func allowed(res response) map[string]bool {
	set := map[string]bool{}
	for name := range strings.SplitSeq(res.header.Get("Access-Control-Allow-Headers"), ",") {
		set[strings.ToLower(strings.TrimSpace(name))] = true
	}
	return set
}

// A browser app on the official SDK may call the /v1 gateway: its
// preflight is answered with the headers it asked for.
func TestCORSGatewayAllowsTheSDKHeaders(t *testing.T) {
	ts := newServer(t, "", nil)
	for _, path := range []string{"/v1/chat/completions", "/v1/models"} {
		res := preflight(t, ts, path, strings.Join(sdkBrowserHeaders, ","))
		got := allowed(res)
		for _, h := range sdkBrowserHeaders {
			assert.True(t, got[h], "%s: %s allowed", path, h)
		}
		assert.Contains(t, res.header.Values("Vary"), "Access-Control-Request-Headers")
	}

	res := ts.call(t, "POST", "/v1/chat/completions", "", triage, "Origin", "https://app.example", "x-stainless-os", "MacOS")
	require.Equal(t, http.StatusOK, res.status, res.body)
	expose := res.header.Get("Access-Control-Expose-Headers")
	for _, h := range []string{"x-svc-run-id", "x-svc-route", "x-svc-overhead-ms", "retry-after"} {
		assert.Contains(t, expose, h)
	}
	assert.Empty(t, res.header.Get("Access-Control-Allow-Credentials"))
}

// What is not a list of header names gets the fixed list, and so does the
// management API.
func TestCORSAllowsOnlyHeaderNames(t *testing.T) {
	ts := newServer(t, "", nil)
	fixed := allowed(preflight(t, ts, "/api/v1/keys", "authorization, x-stainless-os"))
	assert.False(t, fixed["x-stainless-os"], "the management API keeps its fixed list")
	assert.True(t, fixed["authorization"])
	assert.True(t, fixed["x-svc-app"])

	many := make([]string, 65)
	for i := range many {
		many[i] = "x-h" + strings.Repeat("a", i)
	}
	for _, asked := range []string{"authorization, bad header", "x-a, x(b)", "x-a,\"b\"", strings.Join(many, ",")} {
		got := allowed(preflight(t, ts, "/v1/chat/completions", asked))
		assert.Equal(t, fixed, got, "%q", asked)
	}
	got := allowed(preflight(t, ts, "/v1/chat/completions", " x-stainless-arch ,, authorization "))
	assert.Equal(t, map[string]bool{"x-stainless-arch": true, "authorization": true}, got)
}
