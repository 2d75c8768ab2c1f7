//go:build !linux

package plugins

import "os/exec"

// endWithParent does nothing where the kernel has no parent-death signal:
// there the plugin's own watch of its parent (pluginapi's Serve helpers)
// ends it when svc dies.
func endWithParent(*exec.Cmd) {}
