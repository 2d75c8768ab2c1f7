//go:build !windows

package pluginapi

import (
	"os"
	"time"
)

// parentCheck is how often a plugin looks whether svc is still there.
const parentCheck = 250 * time.Millisecond

// watchParent calls gone, once, when the process that started this one has
// died, however it died, and returns a function that ends the watch. A
// process whose parent dies is adopted by init or a subreaper, so its
// parent id changes. A plugin started by PID 1 (svc as a container's init)
// never sees it change, and needs not: its container ends with svc.
func watchParent(gone func()) (stop func()) {
	parent := os.Getppid()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(parentCheck)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if os.Getppid() != parent {
					gone()
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
