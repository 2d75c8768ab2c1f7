package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/pkg/chromium"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Host owns every plugin slot of one svc process.
type Host struct {
	provider *Slot
	email    *Slot
	som      *Slot // nil when no external page compiler is installed
	logger   hclog.Logger
}

// ProviderBinary names the provider plugin to run: the operator's override,
// else provider-openai when a provider key is set, else provider-mock.
func ProviderBinary(cfg *config.Config) string {
	if cfg.ProviderPlugin != "" {
		return cfg.ProviderPlugin
	}
	return filepath.Join(cfg.PluginDir, BinaryPrefix+"provider-"+cfg.ProviderName())
}

// SOMBinary names the external page compiler's binary.
func SOMBinary(cfg *config.Config) string {
	if cfg.SOMPlugin != "" {
		return cfg.SOMPlugin
	}
	return filepath.Join(cfg.PluginDir, BinaryPrefix+"som-external")
}

// Start finds the plugins and starts the provider, so that a missing or
// broken binary stops svc at start with a message naming the file. With a
// providers file (SVC_PROVIDERS_FILE) there is no provider slot here: the
// Opener starts each instance the file declares.
func Start(cfg *config.Config, logger hclog.Logger) (*Host, error) {
	h := &Host{logger: logger}
	var err error
	if cfg.ProvidersFile == "" {
		h.provider, err = NewSlot(pluginapi.ProviderName, ProviderBinary(cfg), ProviderEnv(cfg), logger)
		if err != nil {
			return nil, err
		}
		if _, err := h.provider.Dispense(context.Background()); err != nil {
			h.provider.Kill()
			return nil, err
		}
	}
	// The email transport starts on its first message; a missing binary
	// stops svc now.
	h.email, err = NewSlot(pluginapi.EmailName, EmailBinary(cfg), EmailEnv(cfg), logger)
	if err != nil {
		h.Close()
		return nil, err
	}
	if cfg.SOMPlugin != "" || checkExecutable(SOMBinary(cfg)) == nil {
		// The external compiler needs a browser; without one svc compiles
		// every page itself and says external: false.
		if _, err := chromium.Find(); err != nil {
			logger.Warn("external page compiler installed but no browser found; pages are compiled by svc alone",
				"plugin", SOMBinary(cfg), "error", err)
			return h, nil
		}
		h.som, err = NewSlot(pluginapi.PageCompilerName, SOMBinary(cfg), SOMEnv(cfg), logger)
		if err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// Provider returns the provider slot as a Provider: each call uses the
// running plugin, restarting it when it died. Nil with a providers file.
func (h *Host) Provider() pluginapi.Provider {
	if h.provider == nil {
		return nil
	}
	return &provider{slot: h.provider}
}

// SetMetrics makes every slot count its restarts in m.
func (h *Host) SetMetrics(m *metrics.Metrics) {
	for _, s := range []*Slot{h.provider, h.email, h.som} {
		if s != nil {
			s.SetMetrics(m)
		}
	}
}

// ProviderSlot exposes the provider's slot, for tests that kill it.
func (h *Host) ProviderSlot() *Slot { return h.provider }

// Email returns the email slot as an EmailTransport.
func (h *Host) Email() pluginapi.EmailTransport { return &email{slot: h.email} }

// External reports whether an external page compiler is installed.
func (h *Host) External() bool { return h.som != nil }

// Close kills every plugin process, in parallel.
func (h *Host) Close() {
	var wg sync.WaitGroup
	for _, s := range []*Slot{h.provider, h.email, h.som} {
		if s != nil {
			wg.Go(s.Kill)
		}
	}
	wg.Wait()
}

// baseEnv is what every plugin gets: enough to run and to reach the network
// through the operator's proxy, and nothing of svc's own secrets.
func baseEnv(cfg *config.Config) []string {
	env := []string{"SVC_LOG_LEVEL=" + cfg.LogLevel.String(), "GOMAXPROCS=" + strconv.Itoa(cfg.PluginGOMAXPROCS()),
		"GOGC=" + config.PluginGOGC(os.LookupEnv)}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
		"http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// SOMEnv is the environment of the external page compiler: the base, the
// browser, and the address rules its proxy applies (the operator's
// exceptions).
func SOMEnv(cfg *config.Config) []string {
	env := baseEnv(cfg)
	if v, ok := os.LookupEnv(chromium.EnvBrowser); ok {
		env = append(env, chromium.EnvBrowser+"="+v)
	}
	// Private addresses stay closed to the browser even in open dev mode:
	// the plugin cannot tell who asked, and its pages fall back to svc's
	// own compiler.
	return append(env, "SVC_WEB_ALLOW_PRIVATE="+cfg.WebAllowPrivate.String())
}

// ProviderEnv is the environment of the provider plugin: the base, the live
// provider's key and URL when set, and the mock's latency.
func ProviderEnv(cfg *config.Config) []string {
	env := baseEnv(cfg)
	if cfg.ProviderAPIKey != "" {
		env = append(env, "PROVIDER_API_KEY="+cfg.ProviderAPIKey, "PROVIDER_BASE_URL="+cfg.ProviderBaseURL)
	}
	if cfg.MockLatencyMS > 0 {
		env = append(env, "MOCK_LATENCY_MS="+strconv.Itoa(cfg.MockLatencyMS))
	}
	return env
}

// provider calls the plugin in the provider slot. When the process turns
// out to be gone, it restarts it and tries once more, as long as nothing
// reached the client yet: the dead process's answer is lost anyway.
type provider struct{ slot dispenser }

var _ pluginapi.Provider = (*provider)(nil)

// dispenser is what a call needs of its slot (a *Slot): the plugin, and a
// way to drop one that failed.
type dispenser interface {
	Dispense(ctx context.Context) (any, error)
	Reset(impl any)
}

// retry runs call on the slot's plugin. When the plugin was unreachable it
// drops the process, and runs call once more on a fresh one unless call
// had already answered in part.
func retry[T any](ctx context.Context, slot dispenser, call func(T) error) error {
	for attempt := 0; ; attempt++ {
		v, err := slot.Dispense(ctx)
		if ctx.Err() != nil {
			return ctx.Err() // the caller gave up waiting for a start
		}
		if err != nil {
			return &pluginapi.UnavailableError{Err: err}
		}
		impl := v.(T)
		err = call(impl)
		var unavailable *pluginapi.UnavailableError
		if !errors.As(err, &unavailable) {
			return err
		}
		slot.Reset(impl)
		var partial *partialAnswer
		if attempt > 0 || errors.As(err, &partial) {
			return err
		}
	}
}

// partialAnswer is a stream that failed after part of it reached the
// client: no retry can continue it. The cause stays inspectable (a
// cancellation is the client's, an unavailable plugin is svc's).
type partialAnswer struct{ err error }

func (e *partialAnswer) Error() string { return "provider stream interrupted: " + e.err.Error() }

func (e *partialAnswer) Unwrap() error { return e.err }

func (p *provider) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	var res pluginapi.ChatResponse
	err := retry(ctx, p.slot, func(impl pluginapi.Provider) error {
		var err error
		res, err = impl.Chat(ctx, req)
		return err
	})
	return res, err
}

func (p *provider) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	return retry(ctx, p.slot, func(impl pluginapi.Provider) error {
		sent := false
		err := impl.StreamChat(ctx, req, func(c pluginapi.ChatChunk) error {
			sent = true
			return send(c)
		})
		if err != nil && sent {
			return &partialAnswer{err: err}
		}
		return err
	})
}

func (p *provider) Models(ctx context.Context) ([]pluginapi.Model, error) {
	var models []pluginapi.Model
	err := retry(ctx, p.slot, func(impl pluginapi.Provider) error {
		var err error
		models, err = impl.Models(ctx)
		return err
	})
	return models, err
}

// Compiler returns the external page compiler, or nil when none is
// installed (or no browser is there for it).
func (h *Host) Compiler() pluginapi.PageCompiler {
	if h.som == nil {
		return nil
	}
	return &compiler{slot: h.som}
}

// compiler calls the plugin in the page-compiler slot, restarting it like
// provider.
type compiler struct{ slot dispenser }

func (c *compiler) Compile(ctx context.Context, page pluginapi.Page) ([]byte, error) {
	var out []byte
	err := retry(ctx, c.slot, func(impl pluginapi.PageCompiler) error {
		var err error
		out, err = impl.Compile(ctx, page)
		return err
	})
	return out, err
}

// email calls the plugin in the email slot, restarting it like provider.
type email struct{ slot dispenser }

func (e *email) Send(ctx context.Context, msg pluginapi.EmailMessage) (string, error) {
	var id string
	err := retry(ctx, e.slot, func(impl pluginapi.EmailTransport) error {
		var err error
		id, err = impl.Send(ctx, msg)
		return err
	})
	return id, err
}

// EmailBinary names the email transport to run: the operator's override,
// else email-http when an email provider key is set, else email-smtp when
// an SMTP host is, else email-console.
func EmailBinary(cfg *config.Config) string {
	switch {
	case cfg.EmailPlugin != "":
		return cfg.EmailPlugin
	case cfg.EmailProviderKey != "":
		return filepath.Join(cfg.PluginDir, BinaryPrefix+"email-http")
	case cfg.SMTPHost != "":
		return filepath.Join(cfg.PluginDir, BinaryPrefix+"email-smtp")
	}
	return filepath.Join(cfg.PluginDir, BinaryPrefix+"email-console")
}

// EmailEnv is the environment of the email plugin: the base and the
// settings of the transports.
func EmailEnv(cfg *config.Config) []string {
	env := baseEnv(cfg)
	if cfg.EmailProviderKey != "" {
		env = append(env, "EMAIL_PROVIDER_API_KEY="+cfg.EmailProviderKey, "EMAIL_PROVIDER_URL="+cfg.EmailProviderURL)
	}
	if cfg.SMTPHost != "" {
		env = append(env, "SMTP_HOST="+cfg.SMTPHost, "SMTP_PORT="+strconv.Itoa(cfg.SMTPPort), "SMTP_USERNAME="+cfg.SMTPUsername,
			"SMTP_PASSWORD="+cfg.SMTPPassword, "SMTP_TLS="+cfg.SMTPTLS)
	}
	return env
}
