package httpapi_test

import (
	"os"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/plugins"
	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// testProviderSecret is the provider key the gateway must never show.
const testProviderSecret = "sk-test-provider-secret-42"

var (
	mockOnce sync.Once
	mockHost *plugins.Host
	mockErr  error
)

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, func() {
		if mockHost != nil {
			mockHost.Close()
		}
	}))
}

// mockProvider is the real provider-mock plugin, one process shared by the
// package's tests (it is safe for concurrent use, as svc uses it).
func mockProvider(t testing.TB) pluginapi.Provider {
	t.Helper()
	mockOnce.Do(func() {
		var cfg *config.Config
		cfg, mockErr = config.FromEnv(func(k string) string {
			if k == "SVC_PLUGIN_DIR" {
				return testbin.PluginDir(t)
			}
			return ""
		})
		if mockErr == nil {
			mockHost, mockErr = plugins.Start(cfg, hclog.NewNullLogger())
		}
	})
	if mockErr != nil {
		t.Fatalf("start the mock provider: %v", mockErr)
	}
	return mockHost.Provider()
}
