package plugins_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/plugins"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// slotted is an instance in plugin mode.
type slotted interface{ Slot() *plugins.Slot }

func TestOpenerStartsAProcessPerInstance(t *testing.T) {
	o := plugins.NewOpener(configFor(t, map[string]string{"SVC_PLUGIN_DIR": testbin.PluginDir(t)}), hclog.NewNullLogger())
	ctx := context.Background()
	a, err := o.Open(ctx, "a", "mock", providers.ModePlugin, pluginapi.ProviderConfig{})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	b, err := o.Open(ctx, "b", "mock", providers.ModePlugin, pluginapi.ProviderConfig{BaseURL: "http://127.0.0.1:9/v1", Headers: map[string]string{"X-Team": "b"}})
	require.NoError(t, err)
	t.Cleanup(b.Close)

	pa, pb := a.(slotted).Slot().Pid(), b.(slotted).Slot().Pid()
	assert.NotZero(t, pa, "started at once")
	assert.NotZero(t, pb)
	assert.NotEqual(t, pa, pb, "the same binary serves two instances, each its own process")
	assert.Equal(t, filepath.Join(testbin.PluginDir(t), "svc-provider-mock"), a.(slotted).Slot().Path())
	chat(t, a)
	chat(t, b)
	if environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pb)); err == nil {
		env := strings.Split(string(environ), "\x00")
		assert.Contains(t, env, "PROVIDER_BASE_URL=http://127.0.0.1:9/v1", "the instance's configuration")
		assert.Contains(t, env, `PROVIDER_HEADERS={"X-Team":"b"}`)
		assert.Contains(t, env, "GOMAXPROCS="+fmt.Sprint(max(1, runtime.NumCPU()/4)), "the base environment")
	}

	// A dead process is restarted once, as the provider slot's.
	require.NoError(t, syscall.Kill(pa, syscall.SIGKILL))
	require.Eventually(t, func() bool { return a.(slotted).Slot().Pid() == 0 }, 30*time.Second, 10*time.Millisecond)
	chat(t, a)
	assert.NotEqual(t, pa, a.(slotted).Slot().Pid())

	b.Close()
	require.Eventually(t, func() bool { return testbin.Ended(pb) }, 30*time.Second, 10*time.Millisecond, "Close kills the process")
}

func TestOpenerRefusesABrokenBinaryByName(t *testing.T) {
	dir := t.TempDir()
	o := plugins.NewOpener(configFor(t, map[string]string{"SVC_PLUGIN_DIR": dir}), hclog.NewNullLogger())
	_, err := o.Open(context.Background(), "a", "openai", providers.ModePlugin, pluginapi.ProviderConfig{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "svc-provider-openai"))

	broken := filepath.Join(dir, "broken")
	require.NoError(t, os.WriteFile(broken, []byte("#!/bin/sh\nexit 3\n"), 0o755))
	_, err = o.Open(context.Background(), "b", broken, providers.ModePlugin, pluginapi.ProviderConfig{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), broken)
}

// CheckPlugin finds what Open would: a binary in the plugin folder, or a
// built-in provider in process.
func TestOpenerChecksAPluginBeforeOpening(t *testing.T) {
	dir := t.TempDir()
	o := plugins.NewOpener(configFor(t, map[string]string{"SVC_PLUGIN_DIR": dir}), hclog.NewNullLogger())
	err := o.CheckPlugin("openai", providers.ModePlugin)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "svc-provider-openai")+" not found")
	assert.NoError(t, o.CheckPlugin("openai", providers.ModeInProcess), "built in: no binary needed")
	assert.ErrorContains(t, o.CheckPlugin("vllm", providers.ModeInProcess), "the vllm provider cannot run in_process")

	o = plugins.NewOpener(configFor(t, map[string]string{"SVC_PLUGIN_DIR": testbin.PluginDir(t)}), hclog.NewNullLogger())
	assert.NoError(t, o.CheckPlugin("openai", providers.ModePlugin))
	notExecutable := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(notExecutable, []byte("x"), 0o644))
	assert.ErrorContains(t, o.CheckPlugin(notExecutable, providers.ModePlugin), "is not executable")
}

// echoProvider is a built-in provider a test registers.
type echoProvider struct{ cfg pluginapi.ProviderConfig }

func (p *echoProvider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	return pluginapi.ChatResponse{Body: []byte(p.cfg.BaseURL)}, nil
}

func (p *echoProvider) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}

func (p *echoProvider) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

func TestOpenerRunsABuiltinInProcess(t *testing.T) {
	plugins.Builtins["echo"] = func(cfg pluginapi.ProviderConfig, _ hclog.Logger) (pluginapi.Provider, error) {
		return &echoProvider{cfg: cfg}, nil
	}
	t.Cleanup(func() { delete(plugins.Builtins, "echo") })
	o := plugins.NewOpener(configFor(t, map[string]string{"SVC_PLUGIN_DIR": t.TempDir()}), hclog.NewNullLogger())
	inst, err := o.Open(context.Background(), "e", "echo", providers.ModeInProcess, pluginapi.ProviderConfig{BaseURL: "http://upstream"})
	require.NoError(t, err)
	defer inst.Close()
	_, isSlot := inst.(slotted)
	assert.False(t, isSlot, "no process")
	res, err := inst.Chat(context.Background(), pluginapi.ChatRequest{})
	require.NoError(t, err)
	assert.Equal(t, "http://upstream", string(res.Body), "the instance's configuration, given directly")
	_, err = inst.(pluginapi.Embedder).Embed(context.Background(), pluginapi.EmbedRequest{Model: "m"})
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, err, &pe, "no embeddings: the provider's own 404")
	assert.True(t, pluginapi.IsNoEmbeddings(err))
	assert.False(t, providers.Embeds(inst), "the router skips it for embeddings")

	_, err = o.Open(context.Background(), "x", "vllm", providers.ModeInProcess, pluginapi.ProviderConfig{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the vllm provider cannot run in_process")
}

// The first-party providers run in process through the packages their
// plugins serve.
func TestOpenerRunsTheFirstPartyProvidersInProcess(t *testing.T) {
	o := plugins.NewOpener(configFor(t, map[string]string{"SVC_PLUGIN_DIR": t.TempDir()}), hclog.NewNullLogger())
	for _, name := range []string{"openai", "anthropic", "mock"} {
		inst, err := o.Open(context.Background(), name, name, providers.ModeInProcess,
			pluginapi.ProviderConfig{BaseURL: "http://127.0.0.1:9", APIKey: "k"})
		require.NoError(t, err, name)
		_, isSlot := inst.(slotted)
		assert.False(t, isSlot, name)
		assert.Equal(t, name != "anthropic", providers.Embeds(inst), "%s: embeddings served", name)
		inst.Close()
	}
	inst, err := o.Open(context.Background(), "m", "mock", providers.ModeInProcess, pluginapi.ProviderConfig{})
	require.NoError(t, err)
	defer inst.Close()
	res, err := inst.Chat(context.Background(), pluginapi.ChatRequest{Model: "gpt-4o-mini",
		Body: []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`)})
	require.NoError(t, err)
	assert.Contains(t, string(res.Body), `"chat.completion"`)
}

func TestNoProviderSlotBesideAProvidersFile(t *testing.T) {
	h, _ := startHost(t, map[string]string{"SVC_PROVIDERS_FILE": "/etc/svc/providers.yaml"})
	assert.Nil(t, h.Provider(), "the opener starts the file's instances")
	assert.Nil(t, h.ProviderSlot())
}

// A retired in-process provider keeps no idle connection to its upstream.
func TestClosingAnInProcessProviderDropsItsIdleConnections(t *testing.T) {
	for _, name := range []string{"openai", "anthropic"} {
		t.Run(name, func(t *testing.T) {
			var closed atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"object":"list","data":[],"has_more":false}`))
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateClosed {
					closed.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			base := srv.URL
			if name == "openai" {
				base += "/v1"
			}
			o := plugins.NewOpener(configFor(t, map[string]string{"SVC_PLUGIN_DIR": t.TempDir()}), hclog.NewNullLogger())
			inst, err := o.Open(context.Background(), name, name, providers.ModeInProcess, pluginapi.ProviderConfig{BaseURL: base, APIKey: "k"})
			require.NoError(t, err)
			_, err = inst.Models(context.Background())
			require.NoError(t, err)
			assert.Zero(t, closed.Load(), "the connection is kept alive")
			inst.Close()
			assert.Eventually(t, func() bool { return closed.Load() == 1 }, 10*time.Second, time.Millisecond, "the idle connection is closed")
		})
	}
}
