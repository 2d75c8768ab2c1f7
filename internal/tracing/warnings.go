package tracing

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// warnings logs what goes wrong with tracing (a failed export, dropped
// spans, a trace context that could not be read), at most once an
// interval: a collector that is down fails every batch, and a warning a
// batch would grow with the traffic. What comes within the interval is
// counted, and told at its end with the last of those errors, so that
// nothing is lost when the trouble stops.
type warnings struct {
	log       hclog.Logger
	every     time.Duration
	now       func() time.Time
	afterFunc func(time.Duration, func()) func() bool

	mu      sync.Mutex
	last    time.Time // of the last warning logged
	left    int       // errors not logged since
	lastErr error     // the latest of them
	pending bool      // the interval's end will tell them
}

// warningInterval is the least time between two tracing warnings.
const warningInterval = time.Minute

// Handle is the SDK's error handler.
func (w *warnings) Handle(err error) {
	w.mu.Lock()
	now := w.now()
	if !w.last.IsZero() && now.Sub(w.last) < w.every {
		w.left++
		w.lastErr = err
		if !w.pending {
			w.pending = true
			w.afterFunc(w.last.Add(w.every).Sub(now), w.flush)
		}
		w.mu.Unlock()
		return
	}
	w.last = now
	w.mu.Unlock()
	w.log.Warn("tracing failed", "error", err)
}

// flush tells the errors the interval held back.
func (w *warnings) flush() {
	w.mu.Lock()
	left, err := w.left, w.lastErr
	w.pending, w.left, w.lastErr = false, 0, nil
	if left > 0 {
		w.last = w.now()
	}
	w.mu.Unlock()
	if left > 0 {
		w.log.Warn("tracing failed", "error", err, "times_in_the_last_interval", left)
	}
}
