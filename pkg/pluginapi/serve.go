package pluginapi

import (
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// ServeProvider serves p as svc's provider plugin. It blocks until svc
// closes the plugin; call it from main.
func ServeProvider(p Provider) { serve(ProviderName, &ProviderPlugin{Impl: p}) }

// ServeEmail serves t as svc's email transport plugin.
func ServeEmail(t EmailTransport) { serve(EmailName, &EmailPlugin{Impl: t}) }

// ServeSOM serves c as svc's external page compiler plugin.
func ServeSOM(c PageCompiler) { serve(PageCompilerName, &PageCompilerPlugin{Impl: c}) }

func serve(name string, p plugin.Plugin) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         map[string]plugin.Plugin{name: p},
		GRPCServer:      newGRPCServer,
		Logger:          Logger(name),
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
