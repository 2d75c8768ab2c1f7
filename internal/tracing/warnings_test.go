package tracing

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/fakeclock"
)

// A collector that is down fails every batch: its warnings come at most
// one an interval, the next one counting those left out.
func TestTracingWarningsAreOneAnInterval(t *testing.T) {
	var out bytes.Buffer
	clock := fakeclock.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	w := &warnings{log: hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Warn}), every: time.Minute, now: clock.Now}
	refused := errors.New("traces not exported: connection refused")
	for range 5 {
		w.Handle(refused)
	}
	clock.Advance(59 * time.Second)
	w.Handle(refused)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Len(t, lines, 1, out.String())
	assert.Contains(t, lines[0], "tracing failed: error=\"traces not exported: connection refused\"")

	clock.Advance(time.Second)
	w.Handle(refused)
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Len(t, lines, 2, out.String())
	assert.Contains(t, lines[1], "others_since_last_warning=5")
}
