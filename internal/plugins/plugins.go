// Package plugins runs svc's plugin subprocesses with go-plugin: it finds
// their binaries, starts them with AutoMTLS and a minimal environment, bridges
// their logs into svc's logger, restarts one that died on its next use, and
// kills them all on shutdown. Nothing else in svc touches a plugin.Client.
package plugins

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// BinaryPrefix starts every plugin binary's name: svc-<name>.
const BinaryPrefix = "svc-"

// startTimeout bounds a plugin's start and handshake.
const startTimeout = 10 * time.Second

// Slot is one plugin kind with its running process. It starts the process
// lazily, and again, as a new process, after it died.
type Slot struct {
	kind   string // pluginapi name: provider, email, som
	path   string
	env    []string
	logger hclog.Logger

	mu     sync.Mutex
	client *plugin.Client
	impl   any
	closed bool
}

// NewSlot returns a slot for the binary at path, dispensed as kind, run with
// exactly env (the host environment is not inherited). It checks that the
// binary exists and is executable but does not start it.
func NewSlot(kind, path string, env []string, logger hclog.Logger) (*Slot, error) {
	if err := checkExecutable(path); err != nil {
		return nil, err
	}
	return &Slot{kind: kind, path: path, env: env, logger: logger}, nil
}

// Path is the slot's binary.
func (s *Slot) Path() string { return s.path }

// Dispense returns the plugin's implementation, starting the process when it
// is not running (the first use, or the use after it died).
func (s *Slot) Dispense() (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("plugin host is shut down")
	}
	if s.client != nil && !s.client.Exited() {
		return s.impl, nil
	}
	if s.client != nil {
		s.logger.Warn("plugin exited; restarting", "plugin", filepath.Base(s.path))
		s.client.Kill()
	}
	// A plugin.Client cannot be started twice: a restart is a new client
	// with a new command.
	cmd := exec.Command(s.path)
	cmd.Env = s.env
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		Plugins:          pluginapi.PluginMap(),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  pluginapi.DialOptions(),
		Managed:          true,
		StartTimeout:     startTimeout,
		Logger:           s.logger,
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("start plugin %s (is it an svc plugin built for this machine? run `make build`): %w", s.path, err)
	}
	impl, err := rpc.Dispense(s.kind)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("plugin %s does not serve the %s slot: %w", s.path, s.kind, err)
	}
	s.client, s.impl = client, impl
	return impl, nil
}

// Reset kills the process if it is still the one that failed, so that the
// next Dispense starts a fresh one. impl is what the caller was using.
func (s *Slot) Reset(impl any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil && s.impl == impl {
		s.client.Kill()
	}
}

// Pid returns the plugin's process id, or 0 when it is not running.
func (s *Slot) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil || s.client.Exited() {
		return 0
	}
	if rc := s.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Kill stops the process (gracefully, then by force) and refuses later use.
func (s *Slot) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.client != nil {
		s.client.Kill()
	}
}

// checkExecutable reports a missing or unusable plugin binary in words that
// say what to do.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("plugin binary %s not found: run `make build`, or point the slot at a binary (SVC_PLUGIN_DIR, SVC_PROVIDER_PLUGIN, SVC_EMAIL_PLUGIN, SVC_SOM_PLUGIN)", path)
	case err != nil:
		return fmt.Errorf("plugin binary %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("plugin binary %s is not a regular file", path)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("plugin binary %s is not executable (chmod +x it, or run `make build`)", path)
	}
	return nil
}
