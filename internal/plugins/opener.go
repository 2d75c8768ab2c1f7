package plugins

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Opener opens the provider instances of a providers file: a plugin
// process of its own for each instance in plugin mode, or a first-party
// provider of Builtins in svc's process.
type Opener struct {
	cfg     *config.Config
	logger  hclog.Logger
	metrics *metrics.Metrics
}

// SetMetrics makes the slots the opener starts count their restarts in m.
// Call it before the first Open.
func (o *Opener) SetMetrics(m *metrics.Metrics) { o.metrics = m }

var _ providers.Opener = (*Opener)(nil)

// NewOpener returns an opener that finds plugin binaries in cfg's
// SVC_PLUGIN_DIR and gives each the base environment of every plugin.
func NewOpener(cfg *config.Config, logger hclog.Logger) *Opener {
	return &Opener{cfg: cfg, logger: logger}
}

// ProviderPluginPath is the binary of a provider plugin: a first-party
// name's in the plugin folder, or the path as given.
func ProviderPluginPath(cfg *config.Config, plugin string) string {
	if strings.ContainsRune(plugin, '/') {
		return plugin
	}
	return filepath.Join(cfg.PluginDir, BinaryPrefix+"provider-"+plugin)
}

// CheckPlugin says whether Open could find plugin in mode: a built-in
// provider in process, an executable binary otherwise.
func (o *Opener) CheckPlugin(plugin, mode string) error {
	if mode == providers.ModeInProcess {
		if _, ok := Builtins[plugin]; !ok {
			return noBuiltin(plugin)
		}
		return nil
	}
	return checkExecutable(ProviderPluginPath(o.cfg, plugin))
}

var _ providers.PluginChecker = (*Opener)(nil)

func noBuiltin(plugin string) error {
	return fmt.Errorf("the %s provider cannot run in_process: this svc has no built-in %s provider", plugin, plugin)
}

// Open starts one instance. A plugin starts at once, so that a binary that
// is missing or does not run fails the load with its name.
func (o *Opener) Open(ctx context.Context, name, plugin, mode string, pc pluginapi.ProviderConfig) (providers.Instance, error) {
	logger := o.logger.Named(name)
	if plugin == "mock" && pc.MockLatency == 0 {
		// The file has no field for it: MOCK_LATENCY_MS slows every mock.
		pc.MockLatency = time.Duration(o.cfg.MockLatencyMS) * time.Millisecond
	}
	if mode == providers.ModeInProcess {
		newProvider, ok := Builtins[plugin]
		if !ok {
			return nil, noBuiltin(plugin)
		}
		p, err := newProvider(pc, logger)
		if err != nil {
			return nil, fmt.Errorf("the built-in %s provider: %w", plugin, err)
		}
		return inProcess{p}, nil
	}
	env := append(baseEnv(o.cfg), pc.Env()...)
	slot, err := NewSlot(pluginapi.ProviderName, ProviderPluginPath(o.cfg, plugin), env, logger)
	if err != nil {
		return nil, err
	}
	slot.SetMetrics(o.metrics)
	if _, err := slot.Dispense(ctx); err != nil {
		slot.Kill()
		return nil, err
	}
	return &slotProvider{provider: &provider{slot: slot}, slot: slot}, nil
}

// slotProvider is an instance in plugin mode: calls go to its process,
// which restarts once when it died; Close kills it.
type slotProvider struct {
	*provider
	slot *Slot
}

// Slot is the instance's plugin slot, for tests that kill the process.
func (p *slotProvider) Slot() *Slot { return p.slot }

func (p *slotProvider) Close() { p.slot.Kill() }

// inProcess is a first-party provider run in svc's process; it holds
// nothing Close must release, unless the provider says otherwise.
type inProcess struct{ pluginapi.Provider }

func (p inProcess) Embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	e, ok := p.Provider.(pluginapi.Embedder)
	if !ok {
		return pluginapi.EmbedResponse{}, pluginapi.NoEmbeddings(req.Model)
	}
	return e.Embed(ctx, req)
}

// Embeds says whether the provider serves embeddings: the router skips
// one that does not.
func (p inProcess) Embeds() bool {
	_, ok := p.Provider.(pluginapi.Embedder)
	return ok
}

func (p inProcess) Close() {
	if c, ok := p.Provider.(interface{ Close() }); ok {
		c.Close()
	}
}
