// Command svc-provider-openai is svc's provider plugin for any
// OpenAI-compatible chat-completions upstream. The provider itself is
// package openai, which svc can also run in its own process.
//
// Environment: PROVIDER_BASE_URL (default https://api.openai.com/v1),
// PROVIDER_API_KEY (none: no Authorization header, as a local vLLM or
// Ollama wants), PROVIDER_TIMEOUT_MS, PROVIDER_HEADERS, SVC_LOG_LEVEL (see
// pluginapi.ProviderConfigFromEnv). stdout belongs to go-plugin's
// handshake: this program logs to stderr only.
package main

import (
	"os"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/plugins/provider-openai/openai"
)

func main() {
	log := pluginapi.Logger(pluginapi.ProviderName) // hclog JSON on stderr, level from SVC_LOG_LEVEL
	cfg, err := pluginapi.ProviderConfigFromEnv()
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	p, err := openai.New(cfg, log)
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	pluginapi.ServeProvider(p)
}
