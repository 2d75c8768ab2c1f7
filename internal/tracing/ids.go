package tracing

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// orderedIDs makes the ids of svc's spans. A trace that starts at svc has
// an id that begins with the time, in milliseconds, as a run's id does
// (ids.Ordered): the runs of later traces then sort later in the index
// that finds runs by their trace (runs_by_trace_id), so that each ledger
// commit appends to its last pages instead of writing a random page of it
// for each traced run. The other ten bytes are random, the right-most ones
// as W3C Trace Context recommends (the SDK's ratio sampler reads bytes 8
// to 15); span ids are random, as the SDK's are.
type orderedIDs struct {
	now func() time.Time
}

// NewIDs returns a new trace's id and its first span's.
func (g orderedIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID // never zero: it holds the time
	binary.BigEndian.PutUint64(tid[:8], uint64(g.now().UnixMilli())<<16|rand.Uint64()&0xffff)
	binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	return tid, newSpanID()
}

// NewSpanID returns a new span's id.
func (orderedIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
