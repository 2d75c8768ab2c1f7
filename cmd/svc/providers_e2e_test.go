package main_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const twoMockInstances = `retries: {max_attempts: 2}
providers:
  - name: mock-a
    plugin: mock
  - name: mock-b
    plugin: mock
routes:
  - model: fast
    targets:
      - {provider: mock-a, model: gpt-4o-mini}
      - {provider: mock-b, model: gpt-4o-mini}
`

// providerNames lists the instances GET /api/v1/providers shows, and
// whether the last load succeeded.
func providerNames(t *testing.T, p *proc) ([]string, bool) {
	t.Helper()
	status, out := p.call(t, "GET", "/api/v1/providers", "", "")
	require.Equal(t, http.StatusOK, status)
	var names []string
	for _, pr := range out["providers"].([]any) {
		names = append(names, pr.(map[string]any)["name"].(string))
	}
	return names, out["ok"].(bool)
}

func TestProvidersFileServesAndReloadsOnSIGHUP(t *testing.T) {
	file := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(file, []byte(twoMockInstances), 0o600))
	p := start(t, "SVC_PROVIDERS_FILE="+file)
	chat := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	status, runID, body := p.chat(t, "", chat)
	require.Equal(t, http.StatusOK, status, body)
	assert.NotEmpty(t, runID)
	names, ok := providerNames(t, p)
	assert.Equal(t, []string{"mock-a", "mock-b"}, names)
	assert.True(t, ok)
	_, health := p.call(t, "GET", "/health", "", "")
	assert.Equal(t, "mock", health["provider"])

	// A changed file: mock-a goes, mock-c comes.
	require.NoError(t, os.WriteFile(file, []byte("providers:\n  - name: mock-b\n    plugin: mock\n  - name: mock-c\n    plugin: mock\n"), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	line := p.waitLog(t, "providers reloaded")
	assert.Equal(t, []any{"mock-b", "mock-c"}, line["providers"])
	names, ok = providerNames(t, p)
	assert.Equal(t, []string{"mock-b", "mock-c"}, names)
	assert.True(t, ok)
	status, _, body = p.chat(t, "", chat)
	require.Equal(t, http.StatusOK, status, "the new set serves: %s", body)

	// A bad file: logged, the last good set serving.
	require.NoError(t, os.WriteFile(file, []byte("providers:\n  - name: mock-b\n    plugin: mock\n    timeout: soon\n"), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	line = p.waitLog(t, "providers reload refused")
	assert.Contains(t, line["error"], `providers.yaml: providers[0] (name "mock-b"): timeout: "soon" is not a duration`)
	names, ok = providerNames(t, p)
	assert.Equal(t, []string{"mock-b", "mock-c"}, names, "the last good set stays")
	assert.False(t, ok)
	status, _, body = p.chat(t, "", chat)
	require.Equal(t, http.StatusOK, status, "the last good set keeps serving: %s", body)
}

func TestABadProvidersFileStopsTheStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(file, []byte("providers:\n  - name: a\n    plugin: openai\n    api_key: sk-literal-key\n"), 0o600))
	out, err := execSVC(t, "SVC_PROVIDERS_FILE="+file).CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), `providers.yaml: providers[0] (name "a"): api_key: a key is never written in the providers file`)
	assert.NotContains(t, string(out), "sk-literal-key")
}
