package app

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/testbin"
)

// The stack Close unwinds, as svc runs: each component stops before what it
// uses, the job workers right after the server, the database last.
func TestCloseOrder(t *testing.T) {
	cfg, err := config.FromEnv(func(k string) string {
		switch k {
		case "SVC_ADDR":
			return "127.0.0.1:0"
		case "SVC_PLUGIN_DIR":
			return testbin.PluginDir(t)
		case "SVC_LEARNING_INTERVAL":
			return "1h"
		case "SVC_PPROF_ADDR", "SVC_METRICS_ADDR":
			return "127.0.0.1:0"
		}
		return ""
	})
	require.NoError(t, err)
	a, err := New(context.Background(), Options{Config: cfg, DataDir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))

	var order []string
	a.mu.Lock()
	for i := len(a.stack) - 1; i >= 0; i-- {
		order = append(order, a.stack[i].name)
	}
	a.mu.Unlock()
	assert.Equal(t, []string{
		"timers", "http", "jobs", "learning", "metrics", "pprof", "web sessions", "budget alerts", "recorder", "checkpoints", "mailer",
		"plugins", "database", "tracing",
	}, order)
	require.NoError(t, a.Close())
	assert.Empty(t, a.stack)
}
