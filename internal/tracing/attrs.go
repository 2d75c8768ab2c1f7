package tracing

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Attrs gathers a span's attributes so that they are set in one call, at
// its end: the SDK copies what it is given into a list of the span's own,
// which then grows once, to its size, rather than once a call; and the
// scratch list comes from a pool, where a list built for the call would be
// garbage as soon as the SDK had copied it.
type Attrs struct {
	list []attribute.KeyValue
}

var attrsPool = sync.Pool{New: func() any { return &Attrs{list: make([]attribute.KeyValue, 0, 16)} }}

// NewAttrs is an empty list, to be given back by SetOn.
func NewAttrs() *Attrs { return attrsPool.Get().(*Attrs) }

// Add appends attributes to the list.
func (a *Attrs) Add(kv ...attribute.KeyValue) { a.list = append(a.list, kv...) }

// SetOn sets the list's attributes on span and gives the list back: a is
// not to be used after it.
func (a *Attrs) SetOn(span trace.Span) {
	span.SetAttributes(a.list...)
	clear(a.list) // no value held past its span
	a.list = a.list[:0]
	attrsPool.Put(a)
}
