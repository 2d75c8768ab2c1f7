package ledger_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/ledger"
)

// The chain's hashes are what every recorded run and checkpoint is
// verified against: Seed and Link must hash exactly the encoding written
// here, field by field, whatever buffer they build it in (payloads short
// and long, empty fields).
func TestChainEncodingIsFixed(t *testing.T) {
	field := func(h hash.Hash, b []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		h.Write(b)
	}
	sum := func(h hash.Hash) (out ledger.Hash) {
		h.Sum(out[:0])
		return out
	}
	digest := ledger.Hash{1, 2, 3}
	for _, tc := range []struct{ tenant, run string }{{"", ""}, {"default", "run_01J"}, {strings.Repeat("t", 200), "run_x"}} {
		for _, version := range []int{ledger.ChainV1, ledger.ChainV2} {
			h := sha256.New()
			if version == ledger.ChainV1 {
				h.Write([]byte("svc-ledger/v1"))
			} else {
				h.Write([]byte("svc-ledger/v2"))
			}
			field(h, []byte(tc.tenant))
			field(h, []byte(tc.run))
			if version != ledger.ChainV1 {
				h.Write(digest[:])
			}
			assert.Equal(t, sum(h), ledger.Seed(version, tc.tenant, tc.run, digest), "seed v%d of %q/%q", version, tc.tenant, tc.run)
		}
	}
	prev := ledger.Hash{9, 8, 7}
	for _, payload := range []string{``, `{}`, `{"model":"gpt-4o-mini"}`, `{"text":"` + strings.Repeat("x", 600) + `"}`} {
		e := ledger.Event{Seq: 3, Type: "provider.completed", At: time.UnixMilli(1_700_000_000_123), Payload: json.RawMessage(payload)}
		h := sha256.New()
		h.Write(prev[:])
		h.Write(binary.BigEndian.AppendUint64(nil, 3))
		field(h, []byte(e.Type))
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(e.At.UnixMilli())))
		field(h, e.Payload)
		assert.Equal(t, sum(h), ledger.Link(prev, &e), "link of a payload of %d bytes", len(payload))
	}
}

// Chaining a run's events allocates nothing of its own: the request path
// chains every run it records.
func TestChainAllocatesNothing(t *testing.T) {
	e := ledger.Event{Seq: 1, Type: "route.decided", At: time.UnixMilli(1_700_000_000_000),
		Payload: json.RawMessage(`{"route":"live","reason":"no cached answer; called the provider","policy":"allow"}`)}
	var prev ledger.Hash
	allocs := testing.AllocsPerRun(100, func() {
		prev = ledger.Link(ledger.Seed(ledger.ChainV2, "default", "run_01JABCDEFGHJKMNPQRSTVWXYZ", prev), &e)
	})
	assert.Zero(t, allocs)
}
