// Command svc-provider-openai is svc's provider plugin for any
// OpenAI-compatible chat-completions upstream.
//
// Environment: PROVIDER_API_KEY (required), PROVIDER_BASE_URL (default
// https://api.openai.com/v1), SVC_LOG_LEVEL. stdout belongs to go-plugin's
// handshake: this program logs to stderr only.
package main

import (
	"net/url"
	"os"
	"strings"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func main() {
	log := pluginapi.Logger(pluginapi.ProviderName) // hclog JSON on stderr, level from SVC_LOG_LEVEL

	key := strings.TrimSpace(os.Getenv("PROVIDER_API_KEY"))
	if key == "" {
		log.Error("PROVIDER_API_KEY is not set")
		os.Exit(1)
	}
	base := strings.TrimSpace(os.Getenv("PROVIDER_BASE_URL"))
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		log.Error("PROVIDER_BASE_URL must be an absolute http(s) URL")
		os.Exit(1)
	}

	p := New(base, key)
	p.Logger = log
	log.Debug("serving provider", "base_url", u.Redacted())
	pluginapi.ServeProvider(p)
}
