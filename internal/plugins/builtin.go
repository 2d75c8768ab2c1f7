package plugins

import (
	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/plugins/provider-anthropic/anthropic"
	"github.com/svc-gateway/svc/plugins/provider-mock/mock"
	"github.com/svc-gateway/svc/plugins/provider-openai/openai"
)

// Builtins are the first-party providers svc can run inside its own
// process (mode in_process in the providers file), by plugin name: the
// same packages their plugin binaries serve, called through the same
// pluginapi.Provider interface without the two gRPC legs.
var Builtins = map[string]func(pluginapi.ProviderConfig, hclog.Logger) (pluginapi.Provider, error){
	"openai":    openai.New,
	"anthropic": anthropic.New,
	"mock":      mock.New,
}
