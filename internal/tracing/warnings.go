package tracing

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// warnings logs what goes wrong with tracing (a failed export, dropped
// spans, a trace context that could not be read), at most once an
// interval: a collector that is down fails every batch, and a warning a
// batch would grow with the traffic. The next warning says how many were
// left out since the last.
type warnings struct {
	log   hclog.Logger
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last time.Time // of the last warning logged
	left int       // errors not logged since
}

// warningInterval is the least time between two tracing warnings.
const warningInterval = time.Minute

// Handle is the SDK's error handler.
func (w *warnings) Handle(err error) {
	w.mu.Lock()
	now := w.now()
	if !w.last.IsZero() && now.Sub(w.last) < w.every {
		w.left++
		w.mu.Unlock()
		return
	}
	left := w.left
	w.last, w.left = now, 0
	w.mu.Unlock()
	if left > 0 {
		w.log.Warn("tracing failed", "error", err, "others_since_last_warning", left)
		return
	}
	w.log.Warn("tracing failed", "error", err)
}
