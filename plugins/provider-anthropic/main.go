// Command svc-provider-anthropic is svc's provider plugin for Anthropic's
// Messages API: chat completions in, Messages API calls out.
//
// Environment: PROVIDER_API_KEY (sent as x-api-key), PROVIDER_BASE_URL
// (default https://api.anthropic.com), PROVIDER_TIMEOUT_MS,
// PROVIDER_HEADERS, SVC_LOG_LEVEL. stdout belongs to go-plugin's
// handshake: this program logs to stderr only.
package main

import (
	"os"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/plugins/provider-anthropic/anthropic"
)

func main() {
	log := pluginapi.Logger(pluginapi.ProviderName)
	cfg, err := pluginapi.ProviderConfigFromEnv()
	if err != nil {
		log.Error("bad configuration", "error", err)
		os.Exit(1)
	}
	p, err := anthropic.New(cfg, log)
	if err != nil {
		log.Error("bad configuration", "error", err)
		os.Exit(1)
	}
	pluginapi.ServeProvider(p)
}
