package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/logtest"
	"github.com/svc-gateway/svc/internal/plugins"
	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// A providers file that does not load stops svc with the file's words;
// one that loads serves, names its providers in the start-up line, and
// reloads.
func TestProvidersFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "providers.yaml")
	write := func(doc string) { require.NoError(t, os.WriteFile(path, []byte(doc), 0o600)) }

	write("providers:\n  - name: a\n    plugin: mock\n    weight: 0\n")
	_, err := app.New(context.Background(), app.Options{Config: configFor(t, map[string]string{"SVC_PROVIDERS_FILE": path}), DataDir: dir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "providers (SVC_PROVIDERS_FILE):")
	assert.Contains(t, err.Error(), `providers.yaml: providers[0] (name "a"): weight: must be between 1`)

	write("providers:\n  - name: a\n    plugin: mock\n  - name: b\n    plugin: mock\n")
	var logs logtest.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, JSONFormat: true, Level: hclog.Info})
	a, err := app.New(context.Background(), app.Options{Config: configFor(t, map[string]string{"SVC_PROVIDERS_FILE": path}), DataDir: dir, Logger: logger})
	require.NoError(t, err, "the database was released by the failed start")
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = a.Close()
		}
	})
	require.NoError(t, a.Start(context.Background()))
	status, _, body := post(t, a, "/v1/chat/completions", chatBody)
	require.Equal(t, http.StatusOK, status, body)
	var listening map[string]any
	for line := range strings.SplitSeq(logs.String(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["@message"] == "listening" {
			listening = entry
		}
	}
	assert.Equal(t, "a,b", listening["providers"], "the start-up line names the providers")

	// The instances' processes, through the reference count around them.
	pid := func(i int) int {
		p := a.Providers.Current().Providers[i].Impl
		require.Implements(t, (*interface{ Unwrap() pluginapi.Provider })(nil), p)
		return p.(interface{ Unwrap() pluginapi.Provider }).Unwrap().(interface{ Slot() *plugins.Slot }).Slot().Pid()
	}
	pidA, pidB := pid(0), pid(1)
	require.NotZero(t, pidA)
	write("providers:\n  - name: b\n    plugin: mock\n")
	st, err := a.ReloadProviders(context.Background())
	require.NoError(t, err)
	assert.True(t, st.OK)
	require.Len(t, st.Providers, 1)
	require.Eventually(t, func() bool { return testbin.Ended(pidA) }, 30*time.Second, 10*time.Millisecond, "the removed instance's process ends")
	assert.Equal(t, pidB, pid(0), "the unchanged instance keeps its process")
	status, _, body = post(t, a, "/v1/chat/completions", chatBody)
	require.Equal(t, http.StatusOK, status, "the reloaded set serves: %s", body)

	write("providers: [")
	st, err = a.ReloadProviders(context.Background())
	require.Error(t, err)
	assert.False(t, st.OK)
	assert.Contains(t, logs.String(), "providers reload refused")
	status, _, _ = post(t, a, "/v1/chat/completions", chatBody)
	require.Equal(t, http.StatusOK, status, "the last good set keeps serving")

	require.NoError(t, a.Close())
	closed = true
	assert.True(t, testbin.Ended(pidB) || assert.Eventually(t, func() bool { return testbin.Ended(pidB) }, 30*time.Second, 10*time.Millisecond),
		"Close ends the instances' processes")
}
