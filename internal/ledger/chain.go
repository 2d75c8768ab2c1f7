package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svc-gateway/svc/internal/strictjson"
)

// Hash is a SHA-256 link of a run's chain, shown as hex.
type Hash [32]byte

// MarshalJSON writes the hash as a hex string.
func (h Hash) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h[:])) }

// UnmarshalJSON reads a hex string.
func (h *Hash) UnmarshalJSON(b []byte) error { return unmarshalHex(b, h[:], "hash") }

// unmarshalHex reads a JSON string of hex digits into dst, which it must
// fill exactly; what names the value in the error.
func unmarshalHex(b, dst []byte, what string) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != len(dst) {
		return fmt.Errorf("%s must be %d hex characters", what, 2*len(dst))
	}
	copy(dst, raw)
	return nil
}

// String returns the hash as hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// The versions of a run's chain: what its seed binds.
const (
	// ChainV1 seeds bind the tenant and the run id only: runs recorded
	// before the run's fields were bound into its chain.
	ChainV1 = 1
	// ChainV2 seeds also bind the run's Digest, so that a run whose stored
	// fields were changed no longer starts its own chain.
	ChainV2 = 2
)

// Seed is the hash before a run's first event. It binds the chain to its
// tenant and run, so an event copied from another run never verifies, and
// from ChainV2 on to the run's digest, so that an edited field of the run
// breaks its chain at the first event.
func Seed(version int, tenantID, runID string, digest Hash) Hash {
	// One buffer on the stack, hashed at once: no hasher, no copies on
	// the heap (the run's hot path seeds a chain per run).
	var stack [128]byte
	b := stack[:0]
	if version == ChainV1 {
		b = append(b, "svc-ledger/v1"...)
	} else {
		b = append(b, "svc-ledger/v2"...)
	}
	b = appendField(b, tenantID)
	b = appendField(b, runID)
	if version != ChainV1 {
		b = append(b, digest[:]...)
	}
	return sha256.Sum256(b)
}

// Link computes e's hash from the previous one: SHA-256 of the previous
// hash and a length-prefixed encoding of seq, type, time and payload.
func Link(prev Hash, e *Event) Hash {
	// As Seed: one buffer, on the stack for the payloads of most events.
	var stack [512]byte
	b := append(stack[:0], prev[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	b = appendField(b, e.Type)
	b = binary.BigEndian.AppendUint64(b, uint64(e.At.UnixMilli()))
	b = appendField(b, e.Payload)
	return sha256.Sum256(b)
}

// appendField appends b with its length before it, so that no two
// sequences of fields hash alike.
func appendField[T ~string | ~[]byte](dst []byte, b T) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// CanonicalPayload returns an event's payload in the canonical form the
// chain hashes — compact, object keys sorted, numbers as written, <, > and
// & left as they are — so that the bytes hashed are the bytes a verifier
// reads back. (The cache's key form, cache.AppendKeyJSON, is another one.) Payloads must be JSON objects, and no object in
// them may repeat a key in any letter case: the canonical form would keep
// one of the two, and the ledger would record something other than what
// was sent (the error is then a *strictjson.KeyError).
func CanonicalPayload(payload []byte) (json.RawMessage, error) {
	var keyErr *strictjson.KeyError
	if errors.As(strictjson.Check(payload, nil, strictjson.AllowUnknown), &keyErr) {
		return nil, keyErr
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("payload must be a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("payload must be a single JSON object")
	}
	if v == nil {
		return nil, errors.New("payload must be a JSON object, not null")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// chain numbers events from start and links them from prev, returning the
// new head.
func chain(prev Hash, start int, events []Event, at time.Time) Hash {
	for i := range events {
		e := &events[i]
		e.Seq = start + i
		if e.At.IsZero() {
			e.At = at
		}
		e.At = e.At.UTC().Truncate(time.Millisecond)
		e.PrevHash = prev
		e.Hash = Link(prev, e)
		prev = e.Hash
	}
	return prev
}

// Integrity is the result of verifying a run's chain.
type Integrity struct {
	OK       bool   `json:"ok"`
	Events   int    `json:"events"`
	BrokenAt *int   `json:"brokenAt"`
	Reason   string `json:"reason,omitempty"`
}

// The reasons a chain fails to verify.
const (
	ReasonHashMismatch  = "hash_mismatch"      // an event's content was changed
	ReasonPrevMismatch  = "prev_link_mismatch" // an event's link to its predecessor was changed
	ReasonSequenceGap   = "sequence_gap"       // an event is missing or out of order
	ReasonCountMismatch = "count_mismatch"     // events were removed from or added to the end
	ReasonHeadMismatch  = "head_mismatch"      // the last hash is not the one the run recorded
	ReasonNoEvents      = "no_events"          // the run has no events: every recorded run has some
	// ReasonRunMismatch: the first event is whole but was not chained from
	// this run as stored: a field of the run was changed, or the events
	// belong to another run.
	ReasonRunMismatch = "run_mismatch"
)

// Verify recomputes a run's chain from its seed and reports the first
// event that does not verify. A run without events never verifies: every
// run is recorded with some, so none left means they were deleted.
func Verify(seed Hash, events []Event, head Head) Integrity {
	broken := func(i int, reason string) Integrity {
		return Integrity{Events: len(events), BrokenAt: &i, Reason: reason}
	}
	if len(events) == 0 {
		return broken(0, ReasonNoEvents)
	}
	prev := seed
	for i, e := range events {
		switch {
		case e.Seq != i:
			return broken(i, ReasonSequenceGap)
		case e.PrevHash != prev && i == 0 && Link(e.PrevHash, &e) == e.Hash:
			return broken(0, ReasonRunMismatch)
		case e.PrevHash != prev:
			return broken(i, ReasonPrevMismatch)
		case Link(prev, &e) != e.Hash:
			return broken(i, ReasonHashMismatch)
		}
		prev = e.Hash
	}
	if len(events) != head.Count {
		return broken(min(len(events), head.Count), ReasonCountMismatch)
	}
	if prev != head.Hash {
		return broken(len(events)-1, ReasonHeadMismatch)
	}
	return Integrity{OK: true, Events: len(events)}
}
