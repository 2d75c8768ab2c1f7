package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// The kinds of ledger entries.
const (
	EntryRun   = "run"   // a run was stored with its events
	EntryEvent = "event" // an event was appended to a run's chain
	EntryPrune = "prune" // the retention sweep deleted the tenant's runs created before RunAt
	// EntryLegacy enters a run stored before the ledger existed, with its
	// digest and head as found when svc first started with the ledger:
	// from then on, like every run, it is named by an entry.
	EntryLegacy = "legacy"
)

// Entry is one leaf of the ledger: a change to a tenant's runs, written by
// the store in the transaction of the change. Checkpoints commit to
// entries, so a run, an event or a head that no longer matches its newest
// entry is found, and so is a run deleted other than by the retention
// sweep.
type Entry struct {
	Seq      int64 // orders every entry of every tenant
	TenantID string
	RunID    string // empty for a prune
	Kind     string
	// EventCount and Head are the run's chain after the change.
	EventCount int
	Head       Hash
	Digest     Hash      // the run's Digest (EntryRun; zero otherwise)
	RunAt      time.Time // the run's creation; a prune's cutoff
	CreatedAt  time.Time
}

// entryDomain names the leaf encoding and its version.
const entryDomain = "svc-ledger-entry/v1"

// Leaf is the entry's canonical encoding: every field, fixed-width or
// length-prefixed, times in milliseconds.
func (e *Entry) Leaf() []byte {
	b := make([]byte, 0, 160+len(e.TenantID)+len(e.RunID))
	b = append(b, entryDomain...)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	for _, s := range [...]string{e.TenantID, e.RunID, e.Kind} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(e.EventCount))
	b = append(b, e.Head[:]...)
	b = append(b, e.Digest[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(e.RunAt.UnixMilli()))
	b = binary.BigEndian.AppendUint64(b, uint64(e.CreatedAt.UnixMilli()))
	return b
}

// LeafHash is the entry's leaf hash in the Merkle tree (RFC 6962: SHA-256
// of 0x00 and the leaf).
func (e *Entry) LeafHash() Hash {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(e.Leaf())
	var out Hash
	h.Sum(out[:0])
	return out
}
