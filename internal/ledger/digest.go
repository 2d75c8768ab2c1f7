package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// digestDomain names the encoding Digest hashes, and its version: a change
// to the fields or their order is a new version, never an edit of this one.
const digestDomain = "svc-run/v1"

// Digest is a SHA-256 over every field of a run the API shows, in a fixed,
// length-prefixed order: identity, time, route, status, usage, cost,
// latency, savings, error, the route explanation, the request and
// response bodies, and the trace id when the run has one. Only the event count is left out: it is the chain's,
// which the seed this digest enters binds in its own way.
//
// explanation is the route explanation's JSON as stored (see
// Record.ExplanationJSON), hashed as bytes: the journal and the store keep
// those bytes exactly, so a digest is recomputed from what the store reads
// back without decoding anything. Times count in milliseconds, as stored;
// floats by their bits, -0 as 0 (SQLite stores an integral REAL as an
// integer and so reads -0 back as 0).
func Digest(r *Run, explanation []byte) Hash {
	h := sha256.New()
	// The short fields go through one buffer, so that hashing a run costs
	// two allocations, not one per field.
	buf := make([]byte, 0, 256)
	buf = append(buf, digestDomain...)
	for _, s := range [...]string{r.ID, r.TenantID, r.Route, r.Status, r.Model, r.App, r.Agent, r.Subject, r.Mode,
		r.KeyID, r.Provider, r.Error} {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	for _, v := range [...]int64{r.CreatedAt.UnixMilli(), int64(r.HTTPStatus), r.PromptTokens, r.CompletionTokens, r.TotalTokens} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(v))
	}
	for _, f := range [...]float64{r.CostUSD, r.LatencyMS, r.SavedUSD, r.SavedMS, r.GhostSavedUSD} {
		if f == 0 {
			f = 0 // -0 too
		}
		buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
	}
	buf = append(buf, flags(r.Stream, r.UsageUnknown, r.PriceUnknown))
	h.Write(buf)
	for _, b := range [...][]byte{explanation, r.Request} {
		h.Write(binary.BigEndian.AppendUint32(buf[:0], uint32(len(b))))
		h.Write(b)
	}
	// The answer: 0 when missing, else 1 and the field. An empty answer
	// is a missing one: the store reads either back as missing, and the API
	// shows neither.
	if len(r.Response) == 0 {
		h.Write(append(buf[:0], 0))
	} else {
		h.Write(binary.BigEndian.AppendUint32(append(buf[:0], 1), uint32(len(r.Response))))
		h.Write(r.Response)
	}
	// The trace id only when there is one, so that the digests of runs
	// recorded before runs named their trace stay what they were.
	if r.TraceID != "" {
		h.Write(binary.BigEndian.AppendUint32(append(buf[:0], 2), uint32(len(r.TraceID))))
		h.Write([]byte(r.TraceID))
	}
	var out Hash
	h.Sum(out[:0])
	return out
}

// StoredRun is a run as the store holds it, with what verifying it reads.
type StoredRun struct {
	Run         Run    // with its request and response
	Explanation []byte // the route explanation's JSON, the bytes stored
	Chain       int    // the chain version the run was recorded with
	Events      []Event
	Head        Head
}

// Digest recomputes the run's digest from its stored fields.
func (s *StoredRun) Digest() Hash { return Digest(&s.Run, s.Explanation) }

// Seed is the seed the run's chain must start from, as the run is stored.
func (s *StoredRun) Seed() Hash { return Seed(s.Chain, s.Run.TenantID, s.Run.ID, s.Digest()) }

// Verify checks the run's chain against the run as stored: an edited field
// of a ChainV2 run is ReasonRunMismatch at event 0.
func (s *StoredRun) Verify() Integrity { return Verify(s.Seed(), s.Events, s.Head) }
