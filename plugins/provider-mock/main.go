// Command svc-provider-mock is svc's deterministic provider plugin, used
// when no live provider key is set: demos, the learning loop and benchmarks
// run against it. The provider itself is package mock, which svc can also
// run in its own process.
//
// Environment: MOCK_LATENCY_MS (whole milliseconds waited before each
// answer; default 0), SVC_LOG_LEVEL. stdout belongs to go-plugin's
// handshake: this program logs to stderr only, as hclog JSON.
package main

import (
	"os"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/plugins/provider-mock/mock"
)

func main() {
	log := pluginapi.Logger(pluginapi.ProviderName) // hclog JSON on stderr
	cfg, err := pluginapi.ProviderConfigFromEnv()
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	p, err := mock.New(cfg, log)
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	log.Debug("serving mock provider", "latency_ms", cfg.MockLatency.Milliseconds())
	pluginapi.ServeProvider(p)
}
