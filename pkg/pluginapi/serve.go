package pluginapi

import (
	"os"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ServeProvider serves p as svc's provider plugin. It blocks until svc
// closes the plugin, or until svc is gone (see the package's README);
// call it from main.
func ServeProvider(p Provider) { serve(ProviderName, &ProviderPlugin{Impl: p}) }

// ServeEmail serves t as svc's email transport plugin.
func ServeEmail(t EmailTransport) { serve(EmailName, &EmailPlugin{Impl: t}) }

// ServeSOM serves c as svc's external page compiler plugin.
func ServeSOM(c PageCompiler) { serve(PageCompilerName, &PageCompilerPlugin{Impl: c}) }

// orphanGrace is how long a plugin whose svc is gone has, once its server
// stopped, to return from main before it is ended anyway. (A variable only
// so that tests on a busy machine can give the clean-up more time.)
var orphanGrace = time.Second

func serve(name string, p plugin.Plugin) {
	logger := Logger(name)
	var server atomic.Pointer[grpc.Server]
	stop := watchParent(func() {
		logger.Warn("svc is gone; stopping")
		s := server.Load()
		if s == nil { // not serving yet: nothing to let go of
			os.Exit(1)
		}
		// Serve returns, and main's deferred clean-up runs (a browser to
		// close, files to remove), unless it takes too long.
		time.AfterFunc(orphanGrace, func() { os.Exit(1) })
		s.Stop()
	})
	defer stop()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         map[string]plugin.Plugin{name: p},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			s := newGRPCServer(opts)
			server.Store(s)
			return s
		},
		Logger: logger,
	})
}

// Logger returns the logger a plugin should use: JSON on stderr, which svc
// re-emits under the plugin's name, at the level svc passes in
// SVC_LOG_LEVEL.
func Logger(name string) hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("SVC_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Output: os.Stderr, JSONFormat: true, Level: level})
}
