package pluginapi

import "time"

// SetOrphanGrace lets a test's plugin process wait longer than a second for
// its clean-up, so that a slow machine does not end it first.
func SetOrphanGrace(d time.Duration) { orphanGrace = d }
