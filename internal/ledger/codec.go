package ledger

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"time"
)

// The journal's record encoding: a version byte, then every field of the
// run, its head and its events in a fixed order, strings and bytes
// length-prefixed. It is private to the journal (a process writes it and
// the next start of the same build reads it back), so it favours speed over
// self-description. Versions 1 and 2, still read, are journals left by
// builds before standings counted their decisions (1) and before a run's
// digest entered its chain (1 and 2: their runs are ChainV1), and before
// runs named their trace (1 to 3).
const codecVersion = 4

var errCorrupt = errors.New("ledger: corrupt journal record")

// appendRecord appends rec's encoding to dst.
func appendRecord(dst []byte, rec *Record) ([]byte, error) {
	explanation, err := rec.ExplanationJSON()
	if err != nil {
		return dst, err
	}
	r := rec.Run
	dst = append(dst, codecVersion)
	for _, s := range [...]string{r.ID, r.TenantID, r.Route, r.Status, r.Model, r.App, r.Agent, r.Subject, r.Mode, r.KeyID, r.Provider, r.Error} {
		dst = appendBytes(dst, []byte(s))
	}
	for _, n := range [...]int64{r.CreatedAt.UnixMilli(), int64(r.HTTPStatus), r.PromptTokens, r.CompletionTokens, r.TotalTokens, int64(r.EventCount), int64(rec.Head.Count)} {
		dst = binary.AppendVarint(dst, n)
	}
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(r.CostUSD))
	for _, f := range [...]float64{r.LatencyMS, r.SavedUSD, r.SavedMS, r.GhostSavedUSD} {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	}
	dst = append(dst, flags(r.Stream, r.UsageUnknown, r.PriceUnknown))
	dst = appendBytes(dst, explanation)
	dst = appendBytes(dst, r.Request)
	dst = appendNullable(dst, r.Response)
	dst = append(dst, rec.Head.Hash[:]...)
	dst = append(dst, byte(rec.Chain))
	dst = append(dst, rec.Digest[:]...)
	dst = binary.AppendUvarint(dst, uint64(len(rec.Events)))
	for i := range rec.Events {
		e := &rec.Events[i]
		dst = binary.AppendVarint(dst, int64(e.Seq))
		dst = binary.AppendVarint(dst, e.At.UnixMilli())
		dst = appendBytes(dst, []byte(e.Type))
		dst = appendBytes(dst, e.Payload)
		dst = append(dst, e.PrevHash[:]...)
		dst = append(dst, e.Hash[:]...)
	}
	if st := rec.Standing; st != nil {
		dst = append(dst, 1)
		dst = appendBytes(dst, []byte(st.Trust))
		dst = binary.AppendVarint(dst, int64(st.AllowStreak))
		dst = binary.AppendVarint(dst, int64(st.Denies))
		dst = binary.AppendVarint(dst, st.Decisions)
	} else {
		dst = append(dst, 0)
	}
	dst = appendBytes(dst, []byte(r.TraceID))
	return dst, nil
}

func flags(bits ...bool) byte {
	var b byte
	for i, set := range bits {
		if set {
			b |= 1 << i
		}
	}
	return b
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// appendNullable keeps nil apart from empty: 0 is nil, n+1 is n bytes.
func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendUvarint(dst, 0)
	}
	return append(binary.AppendUvarint(dst, uint64(len(b))+1), b...)
}

// decodeRecord reads one record written by appendRecord.
func decodeRecord(b []byte) (*Record, error) {
	d := decoder{b: b}
	version := d.byte()
	if version < 1 || version > codecVersion {
		return nil, errCorrupt
	}
	r := &Run{}
	for _, s := range [...]*string{&r.ID, &r.TenantID, &r.Route, &r.Status, &r.Model, &r.App, &r.Agent, &r.Subject, &r.Mode, &r.KeyID, &r.Provider, &r.Error} {
		*s = string(d.bytes())
	}
	var created, status, count, headCount int64
	for _, n := range [...]*int64{&created, &status, &r.PromptTokens, &r.CompletionTokens, &r.TotalTokens, &count, &headCount} {
		*n = d.varint()
	}
	r.CreatedAt, r.HTTPStatus, r.EventCount = time.UnixMilli(created).UTC(), int(status), int(count)
	r.CostUSD = math.Float64frombits(d.uint64())
	for _, f := range [...]*float64{&r.LatencyMS, &r.SavedUSD, &r.SavedMS, &r.GhostSavedUSD} {
		*f = math.Float64frombits(d.uint64())
	}
	f := d.byte()
	r.Stream, r.UsageUnknown, r.PriceUnknown = f&1 != 0, f&2 != 0, f&4 != 0
	explanation := d.bytes()
	r.Request = json.RawMessage(d.bytes())
	if res := d.nullable(); res != nil {
		r.Response = json.RawMessage(res)
	}
	rec := &Record{Run: r, Head: Head{Count: int(headCount)}, explanation: explanation}
	copy(rec.Head.Hash[:], d.fixed(len(rec.Head.Hash)))
	rec.Chain = ChainV1
	if version >= 3 {
		rec.Chain = int(d.byte())
		copy(rec.Digest[:], d.fixed(len(rec.Digest)))
		if rec.Chain != ChainV1 && rec.Chain != ChainV2 {
			return nil, errCorrupt
		}
	}
	n := d.uvarint()
	if n > uint64(len(d.b)) { // each event takes more than a byte
		return nil, errCorrupt
	}
	rec.Events = make([]Event, n)
	for i := range rec.Events {
		e := &rec.Events[i]
		e.Seq = int(d.varint())
		e.At = time.UnixMilli(d.varint()).UTC()
		e.Type = string(d.bytes())
		e.Payload = json.RawMessage(d.bytes())
		copy(e.PrevHash[:], d.fixed(len(e.PrevHash)))
		copy(e.Hash[:], d.fixed(len(e.Hash)))
	}
	switch d.byte() {
	case 0:
	case 1:
		st := &Standing{Trust: string(d.bytes()), AllowStreak: int(d.varint()), Denies: int(d.varint())}
		if version > 1 {
			st.Decisions = d.varint()
		}
		rec.Standing = st
	default:
		return nil, errCorrupt
	}
	if version >= 4 {
		r.TraceID = string(d.bytes())
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, errCorrupt
	}
	if err := json.Unmarshal(explanation, &r.Explanation); err != nil {
		return nil, errCorrupt
	}
	if version < 3 {
		rec.Digest = Digest(r, explanation) // for its ledger entry; its chain does not bind it
	}
	return rec, nil
}

// decoder reads fields off b; the first short read sets err and every
// later read returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fixed(n int) []byte {
	if d.err != nil || len(d.b) < n {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if b := d.fixed(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) uint64() uint64 {
	if b := d.fixed(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return nil
	}
	return d.fixed(int(n))
}

func (d *decoder) nullable() []byte {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	if n-1 > uint64(len(d.b)) {
		d.err = errCorrupt
		return nil
	}
	return d.fixed(int(n - 1))
}
