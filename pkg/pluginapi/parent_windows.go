package pluginapi

import "os"

// watchParent calls gone, once, when the process that started this one has
// exited, and returns a function that ends the watch. Windows gives an
// orphan no new parent, so the watch waits on the parent's process handle
// instead of its id.
func watchParent(gone func()) (stop func()) {
	parent, err := os.FindProcess(os.Getppid())
	if err != nil { // already gone, or not ours to watch
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		_, _ = parent.Wait()
		select {
		case <-done:
		default:
			gone()
		}
	}()
	return func() { close(done); _ = parent.Release() }
}
