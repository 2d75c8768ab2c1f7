package plugins_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
	"github.com/svc-gateway/svc/internal/plugins"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// A plugin's first start is no restart; a start after its process died,
// or was dropped as failed, is.
func TestRestartsAreCounted(t *testing.T) {
	m := metrics.New(metrics.Options{})
	slot, err := plugins.NewSlot(pluginapi.ProviderName, os.Args[0], []string{helperRole + "=bare-plugin"}, hclog.NewNullLogger())
	require.NoError(t, err)
	t.Cleanup(slot.Kill)
	slot.SetMetrics(m)
	ctx := context.Background()
	name := filepath.Base(os.Args[0])

	impl, err := slot.Dispense(ctx)
	require.NoError(t, err)
	_, err = slot.Dispense(ctx)
	require.NoError(t, err)
	assert.Empty(t, metricstest.Samples(t, m, "svc_plugin_restarts_total"), "a first start, then the running process")

	slot.Reset(impl)
	_, err = slot.Dispense(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{name: 1}, metricstest.Samples(t, m, "svc_plugin_restarts_total"))

	pid := slot.Pid()
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return slot.Pid() == 0 }, 30*time.Second, 10*time.Millisecond, "the process is seen dead")
	_, err = slot.Dispense(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{name: 2}, metricstest.Samples(t, m, "svc_plugin_restarts_total"))
}
