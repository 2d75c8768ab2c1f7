// Package plugins runs svc's plugin subprocesses with go-plugin: it finds
// their binaries, starts them with AutoMTLS and a minimal environment, bridges
// their logs into svc's logger, restarts one that died on its next use, and
// kills them all on shutdown. Nothing else in svc touches a plugin.Client.
package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// BinaryPrefix starts every plugin binary's name: svc-<name>.
const BinaryPrefix = "svc-"

// startTimeout bounds a plugin's start and handshake.
const startTimeout = 10 * time.Second

// Slot is one plugin kind with its running process. It starts the process
// lazily, and again, as a new process, after it died. A start runs on the
// slot's launcher goroutine, outside the lock: callers wait for it no
// longer than their context allows, and one start serves every caller
// waiting for it.
type Slot struct {
	kind   string // pluginapi name: provider, email, som
	path   string
	env    []string
	logger hclog.Logger

	// shutdown ends with Kill, and kills every process the slot started
	// that is still there, one being started included.
	shutdown context.Context
	kill     context.CancelFunc

	mu       sync.Mutex
	client   *plugin.Client // the running process; nil before the first start, or once dropped
	impl     any
	starting *start // the start under way; nil when none is
	closed   bool
	// launches takes the slot's starts to its launcher; nil until the
	// first start, closed by Kill.
	launches chan func()
	// started says a process was given out: every start after it is a
	// restart, counted in metrics (SetMetrics; nil counts nothing).
	started bool
	metrics *metrics.Metrics
}

// SetMetrics makes the slot count its restarts in m, by its binary's name.
func (s *Slot) SetMetrics(m *metrics.Metrics) {
	s.mu.Lock()
	s.metrics = m
	s.mu.Unlock()
	m.KnownPlugin(s.name())
}

// name is the slot's plugin as its log lines and metrics name it: its
// binary's file name.
func (s *Slot) name() string { return filepath.Base(s.path) }

// start is one start of the slot's process, and what it gave: every
// caller waiting for it gets the same answer.
type start struct {
	done chan struct{} // closed once impl and err are set
	impl any
	err  error
	// restart says a process of the slot ran before.
	restart bool
}

// errShutDown is the answer of a slot after Kill.
var errShutDown = errors.New("plugin host is shut down")

// NewSlot returns a slot for the binary at path, dispensed as kind, run with
// exactly env (the host environment is not inherited). It checks that the
// binary exists and is executable but does not start it.
func NewSlot(kind, path string, env []string, logger hclog.Logger) (*Slot, error) {
	if err := checkExecutable(path); err != nil {
		return nil, err
	}
	shutdown, kill := context.WithCancel(context.Background())
	return &Slot{kind: kind, path: path, env: env, logger: logger, shutdown: shutdown, kill: kill}, nil
}

// Path is the slot's binary.
func (s *Slot) Path() string { return s.path }

// Dispense returns the plugin's implementation, starting the process when it
// is not running (the first use, or the use after it died), or ctx.Err()
// when ctx ends first.
func (s *Slot) Dispense(ctx context.Context) (any, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errShutDown
	}
	if s.client != nil && !s.client.Exited() {
		impl := s.impl
		s.mu.Unlock()
		return impl, nil
	}
	st := s.starting
	if st == nil {
		st = &start{done: make(chan struct{}), restart: s.started}
		s.starting = st
		dead := s.client
		s.client, s.impl = nil, nil
		s.launch(func() { s.start(dead, st) })
	}
	s.mu.Unlock()
	select {
	case <-st.done:
		return st.impl, st.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// launch runs start on the slot's launcher, starting the launcher on the
// first start. Called with s.mu held and s.closed false. It never blocks:
// a start is queued only when none is under way, and the one the launcher
// may still be finishing has given up its place.
func (s *Slot) launch(start func()) {
	if s.launches == nil {
		s.launches = make(chan func(), 1)
		go launcher(s.launches)
	}
	s.launches <- start
}

// launcher runs every start of one slot on one goroutine locked to its OS
// thread, for as long as the slot lives. On Linux a plugin is started with
// a parent-death signal, which the kernel sends when the thread that
// started the process ends, not the process (golang/go#27505), and Go ends
// a thread when a goroutine locked to it returns. A plugin started from an
// ordinary goroutine would die whenever some later goroutine, landing on
// the same thread, locked it and returned; the launcher's thread is
// nobody else's, and ends only once Kill has closed launches, after every
// process of the slot was killed.
func launcher(launches <-chan func()) {
	runtime.LockOSThread() // never unlocked: the thread ends with the slot
	for start := range launches {
		start()
	}
}

// start replaces the dead process (nil on the first start) with a new one,
// and ends by closing st.done.
func (s *Slot) start(dead *plugin.Client, st *start) {
	if dead != nil {
		s.logger.Warn("plugin exited; restarting", "plugin", s.name())
		dead.Kill()
	}
	// A plugin.Client cannot be started twice: a restart is a new client
	// with a new command.
	cmd := exec.CommandContext(s.shutdown, s.path)
	cmd.Env = s.env
	endWithParent(cmd)
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
	impl, err := dispense(client, s.kind, s.path)
	s.mu.Lock()
	s.starting = nil
	if err == nil && s.closed { // Kill came during the start
		err = errShutDown
	}
	if err == nil {
		s.client, s.impl, s.started = client, impl, true
		st.impl = impl
		if st.restart { // counted once it succeeded: a failed start restarted nothing
			s.metrics.PluginRestart(s.name())
		}
	}
	st.err = err
	s.mu.Unlock()
	close(st.done)
	if err != nil {
		client.Kill() // outside the lock: a graceful kill waits up to 2 s
	}
}

// dispense starts client's process and returns its implementation of kind.
func dispense(client *plugin.Client, kind, path string) (any, error) {
	rpc, err := client.Client()
	if err != nil {
		return nil, fmt.Errorf("start plugin %s (is it an svc plugin built for this machine? run `make build`): %w", path, err)
	}
	impl, err := rpc.Dispense(kind)
	if err != nil {
		return nil, fmt.Errorf("plugin %s does not serve the %s slot: %w", path, kind, err)
	}
	return impl, nil
}

// Reset kills the process if it is still the one that failed, so that the
// next Dispense starts a fresh one. impl is what the caller was using.
func (s *Slot) Reset(impl any) {
	s.mu.Lock()
	var failed *plugin.Client
	if s.client != nil && s.impl == impl {
		failed = s.client
		s.client, s.impl = nil, nil
	}
	s.mu.Unlock()
	if failed != nil {
		failed.Kill()
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

// Kill stops the process (gracefully, then by force), and one being
// started, and refuses later use.
func (s *Slot) Kill() {
	s.mu.Lock()
	wasClosed := s.closed
	s.closed = true
	running, starting := s.client, s.starting
	s.client, s.impl = nil, nil
	s.mu.Unlock()
	if running != nil {
		running.Kill()
	}
	s.kill() // a process being started goes now, which ends its start
	if starting != nil {
		<-starting.done
	}
	// Only now may the launcher's thread end: its end kills, by the
	// parent-death signal, whatever it started, and a plugin asked to stop
	// must be let to finish on its own (a browser to close, files to
	// remove). No start comes after closed was set.
	s.mu.Lock()
	if s.launches != nil && !wasClosed {
		close(s.launches)
	}
	s.mu.Unlock()
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
