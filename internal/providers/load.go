package providers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/conffile"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Build opens the instances of f into a Set. An instance of old whose
// Fingerprint is unchanged is kept as it is (its process, and the router
// keeps its breaker); the others are opened through opener. On an error
// the instances it opened are closed and old is untouched. The caller
// retires old's instances that the new set no longer holds (Retire).
func Build(ctx context.Context, f *File, opener Opener, old *Set) (*Set, error) {
	kept := map[string]*Provider{}
	if old != nil {
		for _, p := range old.Providers {
			kept[p.Fingerprint] = p
		}
	}
	set := &Set{Routes: f.Routes, Retries: f.Retries, Source: f.Source, Providers: make([]*Provider, 0, len(f.Providers))}
	var opened []*counted
	for i := range f.Providers {
		s := &f.Providers[i]
		p := s.Provider
		if prev, ok := kept[s.Fingerprint]; ok && prev.Impl != nil {
			p.Impl = prev.Impl
		} else {
			inst, err := opener.Open(ctx, s.Name, s.Plugin, s.Mode, s.Config)
			if err != nil {
				for _, c := range opened {
					c.retire()
				}
				return nil, fmt.Errorf("%s: providers[%d] (name %q): %w", baseName(f.Source), i, s.Name, err)
			}
			c := &counted{inst: inst, done: make(chan struct{})}
			opened = append(opened, c)
			p.Impl = c
		}
		set.Providers = append(set.Providers, &p)
	}
	return set, nil
}

// Retire closes the instances of old that next does not hold, each once
// the calls in flight on it have ended. Either may be nil.
func Retire(old, next *Set) {
	if old == nil {
		return
	}
	keep := map[pluginapi.Provider]bool{}
	if next != nil {
		for _, p := range next.Providers {
			keep[p.Impl] = true
		}
	}
	for _, p := range old.Providers {
		if c, ok := p.Impl.(*counted); ok && !keep[p.Impl] {
			c.retire()
		}
	}
}

// Close closes every instance of set Build opened, each once its calls in
// flight have ended: at shutdown.
func (s *Set) Close() { Retire(s, nil) }

// counted is an opened instance that counts the calls in flight on it, so
// that a reload that drops it closes it only after the last one ends. The
// count and two flags share one word, changed by compare-and-swap: a call
// costs two atomic operations, no lock.
type counted struct {
	inst  Instance
	state atomic.Int64  // calls in flight, | retiredBit | closedBit
	done  chan struct{} // closed once the instance is
}

const (
	retiredBit = 1 << 62 // no longer in the current set: closes when idle
	closedBit  = 1 << 61 // closed: calls are refused
	countMask  = closedBit - 1
)

var (
	_ pluginapi.Provider = (*counted)(nil)
	_ pluginapi.Embedder = (*counted)(nil)
)

// errRetired answers a call that began after its instance was closed: a
// plan made on the set a reload replaced, started late. The router takes
// it as an unavailable provider.
var errRetired = &pluginapi.UnavailableError{Err: errors.New("the provider instance was closed by a reload")}

// Unwrap is the opened instance.
func (c *counted) Unwrap() pluginapi.Provider { return c.inst }

// enter counts a call in, unless the instance is closed.
func (c *counted) enter() error {
	for {
		s := c.state.Load()
		if s&closedBit != 0 {
			return errRetired
		}
		if c.state.CompareAndSwap(s, s+1) {
			return nil
		}
	}
}

// leave counts a call out; the last call out of a retired instance closes
// it.
func (c *counted) leave() {
	if c.state.Add(-1) == retiredBit {
		c.closeIdle()
	}
}

// retire marks the instance out of use, and closes it now when no call is
// in flight on it.
func (c *counted) retire() {
	if c.state.Or(retiredBit)&(countMask|retiredBit) == 0 {
		c.closeIdle()
	}
}

// closeIdle closes a retired instance that no call is in, once: a call
// that slipped in since makes the swap fail, and its leave closes it.
func (c *counted) closeIdle() {
	if c.state.CompareAndSwap(retiredBit, retiredBit|closedBit) {
		c.inst.Close()
		close(c.done)
	}
}

func (c *counted) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if err := c.enter(); err != nil {
		return pluginapi.ChatResponse{}, err
	}
	defer c.leave()
	return c.inst.Chat(ctx, req)
}

func (c *counted) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.leave()
	return c.inst.StreamChat(ctx, req, send)
}

func (c *counted) Models(ctx context.Context) ([]pluginapi.Model, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.inst.Models(ctx)
}

// Embeds says whether the instance serves embeddings: the router skips
// one that does not. A plugin's may still answer NoEmbeddings.
func (c *counted) Embeds() bool { return Embeds(c.inst) }

// Embed calls the instance's embeddings; one without answers as a
// provider with no embeddings model does.
func (c *counted) Embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	e, ok := c.inst.(pluginapi.Embedder)
	if !ok {
		return pluginapi.EmbedResponse{}, pluginapi.NoEmbeddings(req.Model)
	}
	if err := c.enter(); err != nil {
		return pluginapi.EmbedResponse{}, err
	}
	defer c.leave()
	return e.Embed(ctx, req)
}

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	Path   string // SVC_PROVIDERS_FILE
	Opener Opener
	Logger hclog.Logger
	Now    func() time.Time
	// Env and ReadFile read the keys (ReadFile the file too); nil are
	// os.LookupEnv and conffile.Read of at most maxFileSize bytes.
	Env      Env
	ReadFile ReadFile
}

// Manager loads the providers file into a Router, and again on a reload.
type Manager struct {
	o      ManagerOptions
	router *Router
	mu     sync.Mutex // one load at a time
}

// Load reads, validates and opens the providers file: its error (naming
// the file, entries and fields) stops svc. The Manager's Router serves the
// set from then on.
func Load(ctx context.Context, o ManagerOptions) (*Manager, error) {
	if o.Env == nil {
		o.Env = os.LookupEnv
	}
	if o.ReadFile == nil {
		o.ReadFile = func(name string) ([]byte, error) { return conffile.Read(name, maxFileSize) }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	m := &Manager{o: o}
	set, err := m.build(ctx, nil)
	if err != nil {
		return nil, err
	}
	m.router = NewRouter(set, o.Now)
	m.router.SetLoadStatus(o.Path, o.Now(), nil)
	return m, nil
}

// Router is the router over the loaded set.
func (m *Manager) Router() *Router { return m.router }

// Reload reads the file again and swaps the new set in: unchanged
// instances are kept, new ones opened, and those the file dropped or
// changed closed once their calls in flight end. A file that does not load
// leaves the last good set serving; the error is logged and the router's
// status says it.
func (m *Manager) Reload(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.router.Current()
	set, err := m.buildLocked(ctx, old)
	if err != nil {
		// The status first: once the line is out, the API says the same.
		m.router.SetLoadStatus(m.o.Path, m.o.Now(), err)
		m.o.Logger.Error("providers reload refused; the previous providers keep serving", "error", err)
		return err
	}
	m.router.Swap(set)
	m.router.SetLoadStatus(m.o.Path, m.o.Now(), nil)
	Retire(old, set)
	m.o.Logger.Info("providers reloaded", "providers", Names(set))
	return nil
}

// Close closes the current set's instances, once their calls end.
func (m *Manager) Close() { m.router.Current().Close() }

func (m *Manager) build(ctx context.Context, old *Set) (*Set, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buildLocked(ctx, old)
}

func (m *Manager) buildLocked(ctx context.Context, old *Set) (*Set, error) {
	data, err := m.o.ReadFile(m.o.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot be read: %w", baseName(m.o.Path), pathless(err))
	}
	var check func(plugin, mode string) error
	if c, ok := m.o.Opener.(PluginChecker); ok {
		check = c.CheckPlugin
	}
	f, err := ParseChecked(m.o.Path, data, m.o.Env, m.o.ReadFile, check)
	if err != nil {
		return nil, err
	}
	set, err := Build(ctx, f, m.o.Opener, old)
	if err != nil {
		return nil, err
	}
	for _, s := range f.Providers {
		if s.Config.APIKey != "" {
			set.Secrets = append(set.Secrets, s.Config.APIKey)
		}
	}
	return set, nil
}

// Names are the set's provider names, for the log.
func Names(set *Set) []string {
	names := make([]string, len(set.Providers))
	for i, p := range set.Providers {
		names[i] = p.Name
	}
	return names
}

// Plugins are the distinct plugins of the set, in order, joined with ","
// ("openai,anthropic"): what /health names.
func Plugins(set *Set) string {
	var out []string
	seen := map[string]bool{}
	for _, p := range set.Providers {
		if !seen[p.Plugin] {
			seen[p.Plugin] = true
			out = append(out, p.Plugin)
		}
	}
	return strings.Join(out, ",")
}

// baseName is a path's file name: messages name the file, not the folder
// it is in, which stays private to the operator.
func baseName(p string) string { return filepath.Base(p) }
