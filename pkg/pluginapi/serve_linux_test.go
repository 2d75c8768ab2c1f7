package pluginapi_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// helperRole names, in the environment, the part the test binary plays
// when a test runs it as another process.
const helperRole = "PLUGINAPI_TEST_ROLE"

// servedMark names the file a helper plugin writes once ServeProvider
// returned.
const servedMark = "PLUGINAPI_TEST_SERVED"

func TestMain(m *testing.M) {
	switch os.Getenv(helperRole) {
	case "parent":
		runParent()
	case "plugin", "plugin-hangs":
		runPlugin()
	default:
		os.Exit(m.Run())
	}
}

// TestServeEndsWhenItsParentIsKilled starts a plugin through a parent
// process, as svc would (but without a parent-death signal), and kills the
// parent with SIGKILL: the plugin notices, its ServeProvider returns so that
// main's clean-up runs, and the process ends, even when main then hangs.
func TestServeEndsWhenItsParentIsKilled(t *testing.T) {
	for _, role := range []string{"plugin", "plugin-hangs"} {
		t.Run(role, func(t *testing.T) {
			mark := filepath.Join(t.TempDir(), "served")
			parent := exec.Command(os.Args[0])
			parent.Env = append(os.Environ(), helperRole+"=parent", "PLUGIN_ROLE="+role, servedMark+"="+mark)
			parent.Stderr = os.Stderr
			out, err := parent.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, parent.Start())
			t.Cleanup(func() { _ = parent.Process.Kill() })
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err, "the parent ends before reporting its plugin")
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			require.NoError(t, err, "the parent says: %s", line)
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			require.False(t, testbin.Ended(pid))

			require.NoError(t, parent.Process.Signal(syscall.SIGKILL))
			_ = parent.Wait()
			require.Eventually(t, func() bool { return testbin.Ended(pid) }, 30*time.Second, 10*time.Millisecond,
				"the plugin outlived its parent")
			assert.FileExists(t, mark, "ServeProvider returned before the plugin ended")
		})
	}
}

// runParent starts the plugin the way go-plugin's client does (cookie,
// protocol versions), waits for its handshake line, prints its pid and
// waits to be killed.
func runParent() {
	plugin := exec.Command(os.Args[0])
	plugin.Env = append(os.Environ(), helperRole+"="+os.Getenv("PLUGIN_ROLE"),
		pluginapi.Handshake.MagicCookieKey+"="+pluginapi.Handshake.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS="+strconv.Itoa(int(pluginapi.Handshake.ProtocolVersion)))
	plugin.Stderr = os.Stderr
	out, err := plugin.StdoutPipe()
	if err == nil {
		err = plugin.Start()
	}
	if err == nil {
		_, err = bufio.NewReader(out).ReadString('\n') // serving from now on
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(plugin.Process.Pid)
	select {}
}

// runPlugin serves a provider, marks that ServeProvider returned, and, as
// plugin-hangs, then never returns from main.
func runPlugin() {
	// The mark must be written before the grace ends the process, however
	// busy the machine; plugin-hangs still shows that the grace ends it.
	pluginapi.SetOrphanGrace(3 * time.Second)
	pluginapi.ServeProvider(&fakeProvider{})
	_ = os.WriteFile(os.Getenv(servedMark), nil, 0o600)
	if os.Getenv(helperRole) == "plugin-hangs" {
		select {}
	}
}
