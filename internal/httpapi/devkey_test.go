package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In open dev mode the official SDKs work with any key that is not an svc_
// key (they refuse to start without one): it counts as no key, on /v1 and
// /api/v1 alike.
func TestOpenDevModePlaceholderKey(t *testing.T) {
	ts := newServer(t, "", nil)

	client := sdkClient(ts, "anything")
	res, err := client.Chat.Completions.New(context.Background(), sdkParams("How do I reverse a list in Python?"))
	require.NoError(t, err)
	require.Len(t, res.Choices, 1)

	for _, token := range []string{"anything", "sk-proj-0123456789"} {
		chat := ts.call(t, "POST", "/v1/chat/completions", token, triage)
		require.Equal(t, http.StatusOK, chat.status, chat.body)
		run := ts.run(t, token, chat.header.Get("x-svc-run-id"))["run"].(map[string]any)
		assert.Equal(t, "optimize", run["mode"])
		assert.Nil(t, run["keyId"], "no key was used")
		assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/settings", token, "").status, "admin, as a headerless call")
	}

	// An unknown svc_ key is refused everywhere: a mistyped real key never
	// becomes admin.
	for _, path := range []string{"/v1/chat/completions", "/api/v1/settings"} {
		method, body := "POST", triage
		if path == "/api/v1/settings" {
			method, body = "GET", ""
		}
		res := ts.call(t, method, path, "svc_mistyped", body)
		assert.Equal(t, http.StatusUnauthorized, res.status, path)
		assert.Equal(t, "invalid_token", res.errorCode(), path)
	}

	// A tenant key keeps its mode and its pinned app; revoked, it is refused.
	id, token := ts.createKey(t, "", `{"name":"pinned","mode":"observe","appId":"billing"}`)
	chat := ts.call(t, "POST", "/v1/chat/completions", token, triage, "X-Svc-App", "web")
	require.Equal(t, http.StatusOK, chat.status, chat.body)
	run := ts.run(t, "", chat.header.Get("x-svc-run-id"))["run"].(map[string]any)
	assert.Equal(t, "observe", run["mode"])
	assert.Equal(t, "billing", run["app"])
	assert.Equal(t, id, run["keyId"])
	revoked := ts.call(t, "POST", "/api/v1/keys/"+id+"/revoke", "", "")
	require.Less(t, revoked.status, 300, revoked.body)
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "POST", "/v1/chat/completions", token, triage).status)
}

// With SVC_API_KEY set nothing changes: a token must be the bootstrap token
// or a key.
func TestBearerModeRefusesPlaceholderKey(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	client := sdkClient(ts, "anything")
	_, err := client.Chat.Completions.New(context.Background(), sdkParams("hi"))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
	for _, path := range []string{"/v1/models", "/api/v1/settings"} {
		res := ts.call(t, "GET", path, "anything", "")
		assert.Equal(t, http.StatusUnauthorized, res.status, path)
		assert.Equal(t, "invalid_token", res.errorCode(), path)
	}
}

// In account mode a placeholder token gets what a headerless call gets,
// never more: /v1 stays open, the management API wants a sign-in.
func TestAccountModePlaceholderKey(t *testing.T) {
	ts := newServer(t, "", map[string]string{"SVC_REQUIRE_LOGIN": "true"})
	for _, token := range []string{"", "anything"} {
		assert.Equal(t, http.StatusOK, ts.call(t, "POST", "/v1/chat/completions", token, triage).status, "token %q", token)
		res := ts.call(t, "GET", "/api/v1/settings", token, "")
		assert.Equal(t, http.StatusUnauthorized, res.status, "token %q", token)
	}
	client := sdkClient(ts, "anything")
	_, err := client.Chat.Completions.New(context.Background(), sdkParams("hi"),
		option.WithHeader("X-Svc-App", "sdk"))
	require.NoError(t, err)
}
