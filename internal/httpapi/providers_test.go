package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/testbin"
)

func TestProvidersStatusWithoutAFile(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res := ts.call(t, "GET", "/api/v1/providers", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "", res.json["source"], "the environment's one provider")
	assert.Equal(t, true, res.json["ok"])
	assert.NotEmpty(t, res.json["loadedAt"])
	assert.Equal(t, map[string]any{"maxAttempts": 1.0, "backoffMs": 0.0, "maxBackoffMs": 0.0}, res.json["retries"], "no retry, as before")
	list := res.json["providers"].([]any)
	require.Len(t, list, 1)
	p := list[0].(map[string]any)
	assert.Equal(t, "mock", p["name"])
	assert.Equal(t, "mock", p["plugin"])
	assert.Equal(t, "plugin", p["mode"])
	assert.Equal(t, []any{}, p["models"], "every model")
	assert.Equal(t, 0.0, p["timeoutMs"], "no timeout, as before")
	assert.Equal(t, "closed", p["breaker"].(map[string]any)["state"])
	assert.Equal(t, 0.0, p["breaker"].(map[string]any)["failures"], "no breaker")
	assert.Equal(t, []any{}, res.json["routes"])

	reload := ts.call(t, "POST", "/api/v1/providers/reload", bootstrap, "")
	require.Equal(t, http.StatusOK, reload.status, "nothing to reload: the status as it is")
	assert.Equal(t, res.json["providers"], reload.json["providers"])
	assert.Equal(t, "mock", ts.call(t, "GET", "/health", "", "").json["provider"], "/health unchanged")
	assert.Empty(t, p["baseUrl"], "the mock calls no upstream")

	// A key makes the environment's provider the OpenAI-compatible one, at
	// PROVIDER_BASE_URL, shown without the credentials it may hold.
	ts = newServer(t, bootstrap, map[string]string{"PROVIDER_API_KEY": "sk-test", "PROVIDER_BASE_URL": "https://user:secret@llm.example.com/v1?api-key=secret2#secret3"})
	res = ts.call(t, "GET", "/api/v1/providers", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	p = res.json["providers"].([]any)[0].(map[string]any)
	assert.Equal(t, "openai", p["name"])
	assert.Equal(t, "https://llm.example.com/v1", p["baseUrl"])
	assert.NotContains(t, res.body, "secret")
}

// providersFile writes a providers file of mock instances in a temp folder.
func providersFile(t *testing.T) (string, func(string)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "providers.yaml")
	write := func(doc string) { require.NoError(t, os.WriteFile(path, []byte(doc), 0o600)) }
	return path, write
}

const mockProviders = `
retries: {max_attempts: 2, backoff: 10ms, max_backoff: 50ms}
providers:
  - name: mock-a
    plugin: mock
    api_key_env: SVC_TEST_PROVIDER_KEY
    models: ["gpt-*"]
    timeout: 5s
  - name: mock-b
    plugin: mock
    weight: 2
    breaker: {failures: 2, cooldown: 1s}
routes:
  - model: fast
    strategy: weighted
    targets:
      - {provider: mock-a, model: gpt-4o-mini}
      - {provider: mock-b, model: gpt-4o-mini}
`

func TestProvidersStatusAndReloadWithAFile(t *testing.T) {
	t.Setenv("SVC_TEST_PROVIDER_KEY", testProviderSecret)
	path, write := providersFile(t)
	write(mockProviders)
	ts := newServer(t, bootstrap, map[string]string{"SVC_PROVIDERS_FILE": path, "SVC_PLUGIN_DIR": testbin.PluginDir(t)})

	res := ts.call(t, "GET", "/api/v1/providers", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.NotContains(t, res.body, testProviderSecret, "never a key")
	assert.Equal(t, path, res.json["source"])
	assert.Equal(t, true, res.json["ok"])
	assert.Equal(t, map[string]any{"maxAttempts": 2.0, "backoffMs": 10.0, "maxBackoffMs": 50.0}, res.json["retries"])
	list := res.json["providers"].([]any)
	require.Len(t, list, 2)
	a, b := list[0].(map[string]any), list[1].(map[string]any)
	assert.Equal(t, "mock-a", a["name"])
	assert.Equal(t, []any{"gpt-*"}, a["models"])
	assert.Equal(t, 5000.0, a["timeoutMs"])
	assert.Equal(t, map[string]any{"state": "closed", "consecutiveFailures": 0.0, "failures": 5.0, "cooldownMs": 30000.0}, a["breaker"])
	assert.Equal(t, map[string]any{"attempts": 0.0, "failures": 0.0}, a["stats"])
	assert.Equal(t, 2.0, b["weight"])
	assert.Equal(t, 60000.0, b["timeoutMs"], "the default timeout")
	assert.Equal(t, 2.0, b["breaker"].(map[string]any)["failures"])
	assert.Equal(t, []any{map[string]any{"model": "fast", "strategy": "weighted", "targets": []any{
		map[string]any{"provider": "mock-a", "model": "gpt-4o-mini", "weight": 1.0},
		map[string]any{"provider": "mock-b", "model": "gpt-4o-mini", "weight": 2.0},
	}}}, res.json["routes"])
	assert.Equal(t, "mock", ts.call(t, "GET", "/health", "", "").json["provider"], "the distinct plugins of the set")

	chat := ts.call(t, "POST", "/v1/chat/completions", bootstrap, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, chat.status, chat.body)

	// A bad file: 400 with the file's words, the last set serving.
	write(strings.Replace(mockProviders, "routes:", "  - name: mock-c\n    plugin: mock\n    api_key: sk-literal\nroutes:", 1))
	bad := ts.call(t, "POST", "/api/v1/providers/reload", bootstrap, "")
	require.Equal(t, http.StatusBadRequest, bad.status, bad.body)
	assert.Equal(t, "providers_invalid", bad.errorCode())
	msg := bad.json["error"].(map[string]any)["message"].(string)
	assert.Contains(t, msg, `providers.yaml: providers[2] (name "mock-c"): api_key: a key is never written in the providers file`)
	assert.NotContains(t, msg, filepath.Dir(path), "the file's folder stays out of the message")
	status := bad.json["status"].(map[string]any)
	assert.Equal(t, false, status["ok"])
	assert.Len(t, status["providers"], 2, "the last good set serves")
	list2 := ts.call(t, "GET", "/api/v1/providers", bootstrap, "")
	assert.Equal(t, false, list2.json["ok"])
	assert.Contains(t, list2.json["error"], "api_key")
	chat = ts.call(t, "POST", "/v1/chat/completions", bootstrap, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, chat.status, "the last good set keeps serving: %s", chat.body)

	// A good file.
	write("providers:\n  - name: mock-b\n    plugin: mock\n    weight: 2\n    breaker: {failures: 2, cooldown: 1s}\n  - name: mock-c\n    plugin: mock\n")
	good := ts.call(t, "POST", "/api/v1/providers/reload", bootstrap, "")
	require.Equal(t, http.StatusOK, good.status, good.body)
	assert.Equal(t, true, good.json["ok"])
	assert.NotContains(t, good.json, "error")
	names := []any{}
	for _, p := range good.json["providers"].([]any) {
		names = append(names, p.(map[string]any)["name"])
	}
	assert.Equal(t, []any{"mock-b", "mock-c"}, names)
	assert.Equal(t, []any{}, good.json["routes"])
	chat = ts.call(t, "POST", "/v1/chat/completions", bootstrap, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, chat.status, "the new set serves: %s", chat.body)

	events := ts.call(t, "GET", "/api/v1/audit?action=providers.reload", bootstrap, "").json["events"].([]any)
	require.Len(t, events, 2, "each reload is audited")
	assert.Equal(t, "allow", events[0].(map[string]any)["decision"])
	assert.Equal(t, "deny", events[1].(map[string]any)["decision"])
}

func TestProvidersNeedAnAdmin(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	_, member, err := ts.keys.Create(context.Background(), "default", auth.NewKey{Name: "reader", Mode: auth.Optimize})
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, ts.call(t, "GET", "/api/v1/providers", member, "").status)
	assert.Equal(t, http.StatusForbidden, ts.call(t, "POST", "/api/v1/providers/reload", member, "").status)

	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirAdmin, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize, Admin: true})
	require.NoError(t, err)
	read := ts.call(t, "GET", "/api/v1/providers", theirAdmin, "")
	assert.Equal(t, http.StatusForbidden, read.status, "another org's admin may not read the operator's upstreams either")
	assert.Equal(t, "admin_required", read.errorCode())
	refused := ts.call(t, "POST", "/api/v1/providers/reload", theirAdmin, "")
	assert.Equal(t, http.StatusForbidden, refused.status, "the providers serve every org: another org's admin may not reload them")
	assert.Equal(t, "admin_required", refused.errorCode())
	assert.Empty(t, ts.call(t, "GET", "/api/v1/audit?action=providers.reload", bootstrap, "").json["events"], "a refused caller reloads nothing")
}

func TestHealthNamesTheFilesPlugins(t *testing.T) {
	t.Setenv("SVC_TEST_PROVIDER_KEY", testProviderSecret)
	path, write := providersFile(t)
	write("providers:\n  - name: local\n    plugin: mock\n  - name: hosted\n    plugin: openai\n    base_url: http://127.0.0.1:9/v1\n" +
		"    api_key_env: SVC_TEST_PROVIDER_KEY\n  - name: local-2\n    plugin: mock\n")
	ts := newServer(t, bootstrap, map[string]string{"SVC_PROVIDERS_FILE": path, "SVC_PLUGIN_DIR": testbin.PluginDir(t)})
	assert.Equal(t, "mock,openai", ts.call(t, "GET", "/health", "", "").json["provider"])
}
