// Package pluginapi is the public API of svc's plugins: the interfaces a
// plugin implements, the go-plugin handshake, and the Serve helpers that make
// a plugin's main a few lines.
//
// There are three slots: a model Provider (chat completions), an
// EmailTransport, and a PageCompiler for the semantic web. Each is served
// over gRPC by github.com/hashicorp/go-plugin; chat streams cross the process
// boundary chunk by chunk. Interfaces use plain Go structs so that no gRPC
// type leaks into plugin code.
//
// A plugin must never write to stdout: go-plugin's handshake uses it. Log to
// stderr, preferably as hclog JSON, which svc re-emits under the plugin's
// name.
package pluginapi
