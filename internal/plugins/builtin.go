package plugins

import (
	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Builtins are the first-party providers svc can run inside its own
// process (mode in_process in the providers file), by plugin name: the
// same packages their plugin binaries serve, called through the same
// pluginapi.Provider interface without the two gRPC legs.
var Builtins = map[string]func(pluginapi.ProviderConfig, hclog.Logger) (pluginapi.Provider, error){}
