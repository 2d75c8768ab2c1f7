package tracing

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/logtest"
)

// A collector that is down fails every batch: its warnings come at most
// one an interval, and the interval's end tells how many it held back,
// with the last of them, even when no error comes after it.
func TestTracingWarningsAreOneAnInterval(t *testing.T) {
	out := &logtest.Buffer{}
	clock := fakeclock.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	w := &warnings{log: hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Warn}), every: time.Minute,
		now: clock.Now, afterFunc: clock.AfterFunc}
	waitLines := func(n int) []string {
		t.Helper()
		require.Eventually(t, func() bool { return len(out.Lines()) == n }, 10*time.Second, time.Millisecond, "%q", out.Lines())
		return out.Lines()
	}
	for range 5 {
		w.Handle(errors.New("traces not exported: connection refused"))
	}
	clock.Advance(59 * time.Second)
	w.Handle(errors.New("traces not exported: 3 spans dropped"))
	lines := waitLines(1)
	assert.Contains(t, lines[0], `tracing failed: error="traces not exported: connection refused"`)
	assert.Equal(t, 1, clock.Timers(), "one timer for the interval's end")

	clock.Advance(time.Second) // the interval ends: what it held back is told
	lines = waitLines(2)
	assert.Contains(t, lines[1], `error="traces not exported: 3 spans dropped" times_in_the_last_interval=5`)

	clock.Advance(10 * time.Second)
	w.Handle(errors.New("traces not exported: connection refused"))
	require.Eventually(t, func() bool { return clock.Timers() == 1 }, 10*time.Second, time.Millisecond)
	assert.Len(t, out.Lines(), 2, "within a minute of the last warning: held back")
	clock.Advance(time.Minute)
	waitLines(3)

	clock.Advance(time.Hour)
	w.Handle(errors.New("traces not exported: connection refused"))
	waitLines(4) // after a quiet hour, told at once
	assert.Zero(t, clock.Timers())
}
