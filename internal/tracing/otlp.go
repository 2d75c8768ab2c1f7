package tracing

import (
	"math"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP field numbers the encoder writes (opentelemetry/proto's
// trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto
// and collector/trace/v1/trace_service.proto).
const (
	fieldResourceSpans = 1 // ExportTraceServiceRequest

	fieldRSResource  = 1 // ResourceSpans
	fieldRSScopes    = 2
	fieldRSSchemaURL = 3

	fieldResourceAttributes = 1 // Resource

	fieldSSScope     = 1 // ScopeSpans
	fieldSSSpans     = 2
	fieldSSSchemaURL = 3

	fieldScopeName       = 1 // InstrumentationScope
	fieldScopeVersion    = 2
	fieldScopeAttributes = 3

	fieldSpanTraceID       = 1 // Span
	fieldSpanSpanID        = 2
	fieldSpanTraceState    = 3
	fieldSpanParentSpanID  = 4
	fieldSpanName          = 5
	fieldSpanKind          = 6
	fieldSpanStart         = 7
	fieldSpanEnd           = 8
	fieldSpanAttributes    = 9
	fieldSpanDroppedAttrs  = 10
	fieldSpanEvents        = 11
	fieldSpanDroppedEvents = 12
	fieldSpanLinks         = 13
	fieldSpanDroppedLinks  = 14
	fieldSpanStatus        = 15
	fieldSpanFlags         = 16

	fieldEventTime         = 1 // Span.Event
	fieldEventName         = 2
	fieldEventAttributes   = 3
	fieldEventDroppedAttrs = 4

	fieldLinkTraceID      = 1 // Span.Link
	fieldLinkSpanID       = 2
	fieldLinkAttributes   = 4
	fieldLinkDroppedAttrs = 5
	fieldLinkFlags        = 6

	fieldStatusMessage = 2 // Status
	fieldStatusCode    = 3

	fieldKVKey   = 1 // KeyValue
	fieldKVValue = 2

	fieldAnyString = 1 // AnyValue
	fieldAnyBool   = 2
	fieldAnyInt    = 3
	fieldAnyDouble = 4
	fieldAnyArray  = 5
	fieldAnyKVList = 6
	fieldAnyBytes  = 7

	fieldArrayValues  = 1 // ArrayValue
	fieldKVListValues = 1 // KeyValueList
)

// The OTLP status codes (their numbers differ from the SDK's codes) and
// span flags.
const (
	statusOK    = 1
	statusError = 2

	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// encoder writes the SDK's finished spans as an OTLP
// ExportTraceServiceRequest in protobuf, straight from the spans: the
// stock exporter first copies every span into the generated structs and
// then marshals those, which costs as much again as recording the span.
// The output decodes to what the stock exporter sends (a test compares
// them); an encoder keeps its scratch between exports, so it is not for
// concurrent use.
type encoder struct {
	groups []group
}

// group is the spans of one resource and instrumentation scope.
type group struct {
	res   *resource.Resource
	scope instrumentation.Scope
}

// appendRequest appends spans, grouped by resource and then scope (each
// in the order it first appears), to b.
func (e *encoder) appendRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	e.groups = e.groups[:0]
	for _, s := range spans {
		if s == nil {
			continue
		}
		g := group{res: s.Resource(), scope: s.InstrumentationScope()}
		if e.find(g) < 0 {
			e.groups = append(e.groups, g)
		}
	}
	for i, g := range e.groups {
		if e.firstOfResource(i) != i {
			continue // written with the first group of its resource
		}
		var rs int
		b, rs = openField(b, fieldResourceSpans)
		if g.res != nil {
			var r int
			b, r = openField(b, fieldRSResource)
			for it := g.res.Iter(); it.Next(); {
				b = appendKeyValue(b, fieldResourceAttributes, it.Attribute())
			}
			b = closeField(b, r)
		}
		for j := i; j < len(e.groups); j++ {
			if e.firstOfResource(j) == i {
				b = appendScopeSpans(b, e.groups[j], spans)
			}
		}
		if g.res != nil {
			b = appendString(b, fieldRSSchemaURL, g.res.SchemaURL())
		}
		b = closeField(b, rs)
	}
	return b
}

// find is the index of g among the groups, -1 when it is not yet one.
func (e *encoder) find(g group) int {
	for i, h := range e.groups {
		if h.scope == g.scope && sameResource(h.res, g.res) {
			return i
		}
	}
	return -1
}

// firstOfResource is the index of the first group of group i's resource.
func (e *encoder) firstOfResource(i int) int {
	for j := range i {
		if sameResource(e.groups[j].res, e.groups[i].res) {
			return j
		}
	}
	return i
}

// sameResource says whether two resources are one: the same pointer (the
// provider's, for every span it made), or the same attributes.
func sameResource(a, b *resource.Resource) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Equivalent() == b.Equivalent()
}

func appendScopeSpans(b []byte, g group, spans []sdktrace.ReadOnlySpan) []byte {
	var ss int
	b, ss = openField(b, fieldRSScopes)
	if g.scope != (instrumentation.Scope{}) {
		var sc int
		b, sc = openField(b, fieldSSScope)
		b = appendString(b, fieldScopeName, g.scope.Name)
		b = appendString(b, fieldScopeVersion, g.scope.Version)
		for it := g.scope.Attributes.Iter(); it.Next(); {
			b = appendKeyValue(b, fieldScopeAttributes, it.Attribute())
		}
		b = closeField(b, sc)
	}
	for _, s := range spans {
		if s != nil && s.InstrumentationScope() == g.scope && sameResource(s.Resource(), g.res) {
			b = appendSpan(b, s)
		}
	}
	b = appendString(b, fieldSSSchemaURL, g.scope.SchemaURL)
	return closeField(b, ss)
}

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	var sp int
	b, sp = openField(b, fieldSSSpans)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, fieldSpanTraceID, tid[:])
	b = appendBytes(b, fieldSpanSpanID, sid[:])
	b = appendString(b, fieldSpanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, fieldSpanParentSpanID, psid[:])
	}
	b = appendString(b, fieldSpanName, s.Name())
	if k := s.SpanKind(); k >= trace.SpanKindInternal && k <= trace.SpanKindConsumer {
		b = appendVarint(b, fieldSpanKind, uint64(k)) // the SDK's kinds are OTLP's numbers
	}
	b = appendFixed64(b, fieldSpanStart, unixNano(s.StartTime().UnixNano()))
	b = appendFixed64(b, fieldSpanEnd, unixNano(s.EndTime().UnixNano()))
	b = appendKeyValues(b, fieldSpanAttributes, s.Attributes())
	b = appendVarint(b, fieldSpanDroppedAttrs, count(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		var e int
		b, e = openField(b, fieldSpanEvents)
		b = appendFixed64(b, fieldEventTime, unixNano(ev.Time.UnixNano()))
		b = appendString(b, fieldEventName, ev.Name)
		b = appendKeyValues(b, fieldEventAttributes, ev.Attributes)
		b = appendVarint(b, fieldEventDroppedAttrs, count(ev.DroppedAttributeCount))
		b = closeField(b, e)
	}
	b = appendVarint(b, fieldSpanDroppedEvents, count(s.DroppedEvents()))
	for _, l := range s.Links() {
		var lk int
		b, lk = openField(b, fieldSpanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = appendBytes(b, fieldLinkTraceID, ltid[:])
		b = appendBytes(b, fieldLinkSpanID, lsid[:])
		b = appendKeyValues(b, fieldLinkAttributes, l.Attributes)
		b = appendVarint(b, fieldLinkDroppedAttrs, count(l.DroppedAttributeCount))
		b = appendFixed32(b, fieldLinkFlags, flags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = closeField(b, lk)
	}
	b = appendVarint(b, fieldSpanDroppedLinks, count(s.DroppedLinks()))
	// The status is always written, unset too, as the stock exporter does.
	st := s.Status()
	var stf int
	b, stf = openField(b, fieldSpanStatus)
	b = appendString(b, fieldStatusMessage, st.Description)
	switch st.Code {
	case codes.Ok:
		b = appendVarint(b, fieldStatusCode, statusOK)
	case codes.Error:
		b = appendVarint(b, fieldStatusCode, statusError)
	}
	b = closeField(b, stf)
	b = appendFixed32(b, fieldSpanFlags, flags(sc.TraceFlags(), parent))
	return closeField(b, sp)
}

// flags are a span's or a link's OTLP flags: its trace flags, and whether
// its parent (a link's context) is remote.
func flags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// appendKeyValues writes each of kvs as a KeyValue field num.
func appendKeyValues(b []byte, num protowire.Number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendKeyValue(b, num, kv)
	}
	return b
}

func appendKeyValue(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	var f int
	b, f = openField(b, num)
	b = appendString(b, fieldKVKey, string(kv.Key))
	b = appendAnyValue(b, fieldKVValue, kv.Value)
	return closeField(b, f)
}

// appendAnyValue writes v as an AnyValue, as the stock exporter converts
// it: an empty value is an AnyValue with nothing set, a type it does not
// know the string "INVALID".
func appendAnyValue(b []byte, num protowire.Number, v attribute.Value) []byte {
	var f int
	b, f = openField(b, num)
	switch v.Type() {
	case attribute.EMPTY:
	case attribute.BOOL:
		b = protowire.AppendTag(b, fieldAnyBool, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, fieldAnyInt, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendTag(b, fieldAnyDouble, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = protowire.AppendTag(b, fieldAnyString, protowire.BytesType)
		b = protowire.AppendString(b, validUTF8(v.AsString()))
	case attribute.BYTESLICE:
		b = protowire.AppendTag(b, fieldAnyBytes, protowire.BytesType)
		b = protowire.AppendBytes(b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		b = appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		b = appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		b = appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		b = appendArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		b = appendArray(b, v.AsSlice(), func(x attribute.Value) attribute.Value { return x })
	case attribute.MAP:
		var m int
		b, m = openField(b, fieldAnyKVList)
		b = appendKeyValues(b, fieldKVListValues, v.AsMap())
		b = closeField(b, m)
	default:
		b = protowire.AppendTag(b, fieldAnyString, protowire.BytesType)
		b = protowire.AppendString(b, "INVALID")
	}
	return closeField(b, f)
}

// appendArray writes xs as an AnyValue's ArrayValue, each element as value
// makes it.
func appendArray[T any](b []byte, xs []T, value func(T) attribute.Value) []byte {
	var a int
	b, a = openField(b, fieldAnyArray)
	for _, x := range xs {
		b = appendAnyValue(b, fieldArrayValues, value(x))
	}
	return closeField(b, a)
}

// openField starts a message field: its tag, and one byte for its length,
// which closeField writes (a message under 128 bytes, most, needs no more).
// It returns where the message's bytes start.
func openField(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = append(b, 0)
	return b, len(b)
}

// zeros make room for a length longer than openField's byte.
var zeros [binary64]byte

const binary64 = 10 // the longest varint

// closeField writes the length of the message that started at start,
// moving it along when its length needs more than one byte.
func closeField(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	size := protowire.SizeVarint(uint64(n))
	b = append(b, zeros[:size-1]...)
	copy(b[start+size-1:], b[start:start+n])
	protowire.AppendVarint(b[:start-1], uint64(n))
	return b
}

// The scalar fields, left out when zero as proto3 does.

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, validUTF8(s))
}

// validUTF8 is s with each invalid byte sequence replaced by U+FFFD: a
// protobuf string is UTF-8, and the stock exporter fails the whole batch
// on one that is not (an upstream's error text may not be), where this
// exporter sends it mended.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

// unixNano is a time as OTLP's unsigned nanoseconds, 0 before 1970.
func unixNano(ns int64) uint64 { return uint64(max(0, ns)) }

// count is a dropped count as OTLP's uint32, clamped.
func count(n int) uint64 { return uint64(min(max(n, 0), math.MaxUint32)) }
