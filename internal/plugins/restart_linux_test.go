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
	assert.Equal(t, map[string]float64{name: 0}, metricstest.Samples(t, m, "svc_plugin_restarts_total"),
		"a first start, then the running process: the series shows, at zero")

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

func init() { helperRoles["once-plugin"] = serveOnce }

// onceMark names the file whose presence makes the once-plugin fail.
const onceMark = "PLUGINS_TEST_ONCE"

// serveOnce serves as a plugin the first time, and fails to start every
// time after.
func serveOnce() {
	f, err := os.OpenFile(os.Getenv(onceMark), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		os.Exit(1)
	}
	_ = f.Close()
	serveBarePlugin()
}

// A restart that fails to start restarted nothing: it is not counted.
func TestAFailedRestartIsNotCounted(t *testing.T) {
	m := metrics.New(metrics.Options{})
	mark := filepath.Join(t.TempDir(), "started")
	slot, err := plugins.NewSlot(pluginapi.ProviderName, os.Args[0], []string{helperRole + "=once-plugin", onceMark + "=" + mark}, hclog.NewNullLogger())
	require.NoError(t, err)
	t.Cleanup(slot.Kill)
	slot.SetMetrics(m)
	ctx := context.Background()
	impl, err := slot.Dispense(ctx)
	require.NoError(t, err)
	slot.Reset(impl)
	_, err = slot.Dispense(ctx)
	require.Error(t, err, "the second process exits at once")
	assert.Equal(t, map[string]float64{filepath.Base(os.Args[0]): 0}, metricstest.Samples(t, m, "svc_plugin_restarts_total"))
}
