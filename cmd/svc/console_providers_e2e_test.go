package main_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browsertest"
)

// consoleProviders is a providers file of an upstream that fails (its
// breaker opens at the first failure) and two mock instances, one in each
// mode, with a route that falls back from the first to the second.
const consoleProviders = `retries: {max_attempts: 3, backoff: 10ms, max_backoff: 50ms}
providers:
  - name: flaky
    plugin: openai
    base_url: BASE/v1
    models: [gpt-4o-mini]
    timeout: 5s
    breaker: {failures: 1, cooldown: 10m}
  - name: mock-a
    plugin: mock
  - name: mock-b
    plugin: mock
    mode: in_process
    weight: 2
routes:
  - model: fast
    targets:
      - {provider: flaky, model: gpt-4o-mini}
      - {provider: mock-a, model: gpt-4o-mini}
`

// The providers view shows each instance with its mode and breaker, the
// route, and follows the breakers while open; a refused reload is shown
// in the loader's words with the last good set still listed. A run that
// fell back from one provider to another shows its attempts.
func TestBrowserConsoleProviders(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"message":"upstream overloaded","type":"server_error"}}`))
	}))
	t.Cleanup(down.Close)
	file := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(consoleProviders, "BASE", down.URL, 1)), 0o600))
	p := start(t, "SVC_PROVIDERS_FILE="+file)
	b := browsertest.Start(t)

	visit(b, p, "providers", "Providers")
	b.WaitText(`#nav-list a[aria-current="page"]`, "Providers")
	b.WaitText(".reload-ok", "Loaded 3 providers")
	b.WaitText(".providers-source", "providers.yaml")
	b.WaitText("#providers-retries", "up to 3 attempts a call")
	b.WaitText(`.breaker[data-provider="flaky"]`, "closed")
	b.WaitText(`article[data-provider="flaky"] .breaker-facts`, "0 failures in a row (opens at 1")
	b.WaitText(`.breaker[data-provider="mock-a"]`, "closed")
	b.WaitText(`.breaker[data-provider="mock-b"]`, "closed")
	b.WaitText(`article[data-provider="mock-a"] h3`, "plugin")
	b.WaitText(`article[data-provider="mock-b"] h3`, "in process")
	b.WaitText("#providers-body", down.URL+"/v1")
	b.WaitText(".route-model", "fast")
	b.WaitText(".route-targets", "flaky → gpt-4o-mini")
	b.WaitText(".route-targets", "mock-a → gpt-4o-mini")

	// A call on the route: flaky fails, its breaker opens, mock-a answers.
	// The open page follows: the breaker turns open without a reload.
	status, runID, body := p.chat(t, "", `{"model":"fast","messages":[{"role":"user","content":"hello"}]}`)
	require.Equal(t, http.StatusOK, status, body)
	b.WaitText(`.breaker[data-provider="flaky"] .badge[data-kind="bad"]`, "open")
	b.WaitText(`article[data-provider="flaky"] .breaker-facts`, "open until")
	b.WaitText(`article[data-provider="flaky"]`, "1, 1 failure")
	b.WaitText(`article[data-provider="flaky"] .provider-error`, "upstream overloaded")
	b.WaitText(`article[data-provider="mock-a"]`, "1, 0 failures")
	shoot(t, b, "providers")

	// A broken file: the reload is refused in the loader's words, the
	// status says so, and the last good set is still listed.
	require.NoError(t, os.WriteFile(file, []byte("providers:\n  - name: mock-a\n    plugin: mock\n    timeout: soon\n"), 0o600))
	b.Click("#providers-reload")
	b.WaitText(".reload-result", `timeout: "soon" is not a duration`)
	b.WaitText(".reload-result", "providers_invalid")
	b.WaitText(".reload-failed", "last good set stays in use")
	b.WaitText(`.breaker[data-provider="flaky"]`, "open")
	b.WaitText(`.breaker[data-provider="mock-b"]`, "closed")
	b.WaitText("#status", "the providers file did not load")
	shoot(t, b, "providers-refused")

	// The run: who answered, every attempt, and the fallback.
	visit(b, p, "runs/"+runID, "Run")
	b.WaitText("#run-facts", "mock-a")
	b.WaitText("#run-explanation", "The candidate providers, in the order they would be tried: flaky (gpt-4o-mini), mock-a (gpt-4o-mini).")
	b.WaitText("#run-explanation", "Provider mock-a answered, on attempt 2 of the call.")
	b.WaitText(`#run-explanation li[data-part="fallback"]`, "Provider flaky failed, so provider mock-a answered instead")
	b.WaitText("#run-attempts tbody tr:first-child", "flaky")
	b.WaitText("#run-attempts tbody tr:first-child", "503")
	b.WaitText("#run-attempts tbody tr:first-child", "upstream overloaded")
	b.WaitText("#run-attempts tbody tr:nth-child(2)", "mock-a")
	b.WaitText(`#run-attempts tbody tr:nth-child(2) .badge[data-kind="ok"]`, "ok")
	shoot(t, b, "run-attempts")

	// The next call passes over the open breaker: the run says why.
	status, runID, body = p.chat(t, "", `{"model":"fast","messages":[{"role":"user","content":"hello again"}]}`)
	require.Equal(t, http.StatusOK, status, body)
	visit(b, p, "runs/"+runID, "Run")
	b.WaitText("#run-explanation", "Not sent to provider flaky: circuit breaker open until")
	b.WaitText("#run-explanation", "Provider mock-a answered.")
	assertNoPageErrors(t, b)
}

// Members get no providers page, nor does an owner of another
// organization: the providers serve every organization, and the API keeps
// them to the admins of the operator's default organization.
func TestBrowserConsoleProvidersRoles(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(file, []byte(twoMockInstances), 0o600))
	p := startAccounts(t, "SVC_PROVIDERS_FILE="+file)
	owner := newPerson(t, p)
	owner.login(t, adminEmail, adminPassword)
	status, inv := owner.call(t, "POST", "/api/v1/orgs/active/invites", map[string]string{"email": "max.member@example.com", "role": "member"})
	require.Equal(t, http.StatusCreated, status, inv)
	raw := inv["acceptUrl"].(string)[strings.Index(inv["acceptUrl"].(string), "token=")+len("token="):]
	status, out := newPerson(t, p).call(t, "POST", "/api/v1/invites/"+raw+"/accept", map[string]string{"name": "Max Member", "password": "max-password-1"})
	require.Equal(t, http.StatusOK, status, out)
	status, out = owner.call(t, "POST", "/api/v1/orgs", map[string]string{"name": "Elsewhere"})
	require.Equal(t, http.StatusCreated, status, out)

	b := browsertest.Start(t)
	signIn(b, p, "max.member@example.com", "max-password-1")
	b.WaitText("#nav-list", "Policies")
	assert.True(t, b.Hidden(`#nav-list a[data-route="providers"]`), "a member has no providers page")
	visit(b, p, "providers", "Providers")
	b.WaitText("#view .status", "The providers could not be loaded")
	assert.True(t, b.Hidden("#providers-reload"))

	b.Click("#sign-out")
	b.WaitText("#sign-in-title", "Sign in")
	signIn(b, p, adminEmail, adminPassword)
	b.WaitText(`#nav-list a[data-route="providers"]`, "Providers")
	visit(b, p, "providers", "Providers")
	b.WaitText("#providers-reload", "Reload the providers file")
	b.WaitText(`article[data-provider="mock-b"]`, "every model")
	b.WaitText(".route-targets", "mock-a → gpt-4o-mini")
	b.Choose("#org-select", "Elsewhere")
	b.Click("#switch-submit")
	b.WaitText("#status", "Switched to Elsewhere.")
	assert.True(t, b.Hidden(`#nav-list a[data-route="providers"]`), "another organization's owner has no providers page")
	visit(b, p, "providers", "Providers")
	b.WaitText("#view .status", "The providers could not be loaded")
	assert.True(t, b.Hidden("#providers-reload"), "only the default organization's admins may reload")
	assertNoPageErrors(t, b)
}
