package plugins_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/plugins"
	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func init() {
	helperRoles["host"] = runHost
	helperRoles["bare-plugin"] = serveBarePlugin
	helperRoles["host-close"] = runClosingHost
	helperRoles["slow-plugin"] = serveSlowPlugin
}

// cleanedMark names the file the slow plugin writes when its clean-up is
// done.
const cleanedMark = "PLUGINS_TEST_CLEANED"

// TestKillLetsThePluginCleanUp closes a slot whose plugin takes a moment
// to clean up after it was asked to stop: the end of the slot's launcher
// thread, whose parent-death signal would kill the plugin, must wait for
// it.
func TestKillLetsThePluginCleanUp(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "cleaned")
	host := exec.Command(os.Args[0])
	host.Env = append(os.Environ(), helperRole+"=host-close", cleanedMark+"="+mark)
	out, err := host.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.FileExists(t, mark, "the plugin was killed before its clean-up was done")
}

// runClosingHost starts the slow plugin in a slot and kills the slot.
func runClosingHost() {
	runtime.LockOSThread() // keeps the launcher off the main thread, which never ends
	slot, err := plugins.NewSlot(pluginapi.ProviderName, os.Args[0],
		[]string{helperRole + "=slow-plugin", cleanedMark + "=" + os.Getenv(cleanedMark)}, hclog.NewNullLogger())
	if err == nil {
		_, err = slot.Dispense(context.Background())
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	slot.Kill()
}

// serveSlowPlugin serves like the bare plugin, then cleans up for a
// moment before it exits, as the page compiler closes its browser.
func serveSlowPlugin() {
	serveBarePlugin()
	time.Sleep(300 * time.Millisecond)
	_ = os.WriteFile(os.Getenv(cleanedMark), nil, 0o600)
}

// TestPluginEndsWhenItsHostIsKilled kills, with SIGKILL, a host that runs a
// plugin which does not watch its parent itself: the kernel must end the
// plugin, within seconds. The host first ends many of its own threads the
// way a goroutine that returns locked to its thread does; the plugin must
// live through that, because the thread that started it is not one of
// them.
func TestPluginEndsWhenItsHostIsKilled(t *testing.T) {
	host := exec.Command(os.Args[0])
	host.Env = append(os.Environ(), helperRole+"=host")
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the host ends before reporting its plugin")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err, "the host says: %s", line)
	require.False(t, testbin.Ended(pid))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	require.NoError(t, host.Process.Signal(syscall.SIGKILL))
	_ = host.Wait()
	require.Eventually(t, func() bool { return testbin.Ended(pid) }, 30*time.Second, 10*time.Millisecond,
		"the plugin outlived its host's kill -9")
}

// runHost starts the bare plugin in a slot, ends many threads, checks that
// the plugin still answers (a few times over, each on a new process),
// prints its pid and waits to be killed.
func runHost() {
	// Held here, this goroutine's thread cannot be the one that starts the
	// plugin, and every other thread can be ended below.
	runtime.LockOSThread()
	fail := func(err error) {
		fmt.Println(err)
		os.Exit(1)
	}
	slot, err := plugins.NewSlot(pluginapi.ProviderName, os.Args[0], []string{helperRole + "=bare-plugin"}, hclog.NewNullLogger())
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	// A few starts: the thread a start happens to use may be one the
	// churn cannot take (blocked in a system call), so one try alone
	// would often not tell.
	for round := range 4 {
		impl, err := slot.Dispense(ctx)
		if err != nil {
			fail(err)
		}
		if !endThreads(64) {
			fail(fmt.Errorf("the host's threads did not end: the test would prove nothing"))
		}
		if _, err := impl.(pluginapi.Provider).Models(ctx); err != nil {
			fail(fmt.Errorf("the plugin died when the host's threads ended: %w", err))
		}
		if round < 3 {
			slot.Reset(impl)
		}
	}
	fmt.Println(slot.Pid())
	select {}
}

// endThreads ends n threads of the process: n goroutines each take a
// thread, lock it and return, which ends it. It reports whether the threads
// were gone within 30 seconds.
func endThreads(n int) bool {
	var taken sync.WaitGroup
	release := make(chan struct{})
	for range n {
		taken.Add(1)
		go func() {
			runtime.LockOSThread()
			taken.Done()
			<-release
		}()
	}
	taken.Wait()
	close(release)
	for deadline := time.Now().Add(30 * time.Second); threads() >= n; {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// threads counts the process's OS threads.
func threads() int {
	entries, _ := os.ReadDir("/proc/self/task")
	return len(entries)
}

// serveBarePlugin serves a provider through go-plugin alone, without
// pluginapi's helpers and so without their watch of the parent: only the
// kernel can end it when its host dies.
func serveBarePlugin() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pluginapi.Handshake,
		Plugins:         map[string]plugin.Plugin{pluginapi.ProviderName: &pluginapi.ProviderPlugin{Impl: bareProvider{}}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

type bareProvider struct{}

func (bareProvider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	return pluginapi.ChatResponse{}, nil
}

func (bareProvider) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}

func (bareProvider) Models(context.Context) ([]pluginapi.Model, error) {
	return []pluginapi.Model{{ID: "bare"}}, nil
}
