package pluginapi

import "github.com/hashicorp/go-plugin"

// Handshake is the go-plugin handshake shared by svc and its plugins. The
// cookie only stops a plugin binary being run by hand by mistake; it is not
// a security measure. ProtocolVersion rises whenever an interface changes.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "SVC_PLUGIN_COOKIE",
	MagicCookieValue: "4d2b1f5e-3c64-4a8e-9b1d-7f0c2e6a9d53",
}

// The names under which each slot's plugin is dispensed.
const (
	ProviderName     = "provider"
	EmailName        = "email"
	PageCompilerName = "som"
)

// PluginMap returns the plugins svc can dispense, for plugin.ClientConfig.
func PluginMap() map[string]plugin.Plugin {
	return map[string]plugin.Plugin{
		ProviderName:     &ProviderPlugin{},
		EmailName:        &EmailPlugin{},
		PageCompilerName: &PageCompilerPlugin{},
	}
}
