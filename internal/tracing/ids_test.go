package tracing

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/fakeclock"
)

// A trace started later has a greater id, whatever its random bytes, and
// its first six bytes are the milliseconds it started at; a trace started
// in the same millisecond differs in the other ten.
func TestOrderedTraceIDs(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	g := orderedIDs{now: clock.Now}
	var prev trace.TraceID
	seen := map[trace.SpanID]bool{}
	for i := range 1000 {
		if i%10 == 0 {
			clock.Advance(time.Millisecond)
		}
		tid, sid := g.NewIDs(context.Background())
		assert.True(t, tid.IsValid() && sid.IsValid())
		assert.Equal(t, uint64(clock.Now().UnixMilli()), uint64(tid[0])<<40|uint64(tid[1])<<32|uint64(tid[2])<<24|
			uint64(tid[3])<<16|uint64(tid[4])<<8|uint64(tid[5]))
		if i%10 == 0 {
			assert.Positive(t, bytes.Compare(tid[:], prev[:]), "a later millisecond sorts later")
			assert.Greater(t, tid.String(), prev.String(), "as hex too")
		} else {
			assert.NotEqual(t, prev, tid, "the same millisecond, random bytes")
		}
		assert.False(t, seen[sid], "span ids are random")
		seen[sid] = true
		seen[g.NewSpanID(context.Background(), tid)] = true
		prev = tid
	}
}
