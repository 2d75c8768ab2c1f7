package ledger

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// CheckpointEvent is the webhook event type a new checkpoint is delivered
// as, to the tenant's webhook_url.
const CheckpointEvent = "ledger.checkpoint"

// Checkpoint is a signed commitment to a tenant's ledger, in the manner of
// Certificate Transparency's signed tree heads: the Merkle root of the
// tenant's entries after its previous checkpoint, up to LastSeq, and the
// hash of that previous checkpoint, signed with the ledger key. Whoever
// keeps a checkpoint (from the API or a webhook) can later prove that the
// database still holds what it committed to, and that the checkpoints
// before it were neither rewritten nor dropped.
type Checkpoint struct {
	TenantID string `json:"tenantId"`
	Number   int64  `json:"number"` // 1, 2, … within the tenant
	// FirstSeq and LastSeq bound the entries covered: the tenant's
	// entries after the previous checkpoint's LastSeq, up to LastSeq.
	FirstSeq  int64     `json:"firstSeq"`
	LastSeq   int64     `json:"lastSeq"`
	Entries   int       `json:"entries"`
	Root      Hash      `json:"root"`     // MerkleRoot of the entries' leaf hashes
	Prev      Hash      `json:"prevHash"` // the previous checkpoint's Hash; zero for the first
	CreatedAt time.Time `json:"createdAt"`
	KeyID     string    `json:"keyId"`
	Signature Signature `json:"signature"` // Ed25519 over Message
	// Hash is the checkpoint's Hash, shown so that a reader can check the
	// next one's Prev without encoding anything; it is recomputed, never
	// trusted.
	Hash Hash `json:"hash"`
}

// Signature is an Ed25519 signature, shown as hex.
type Signature [ed25519.SignatureSize]byte

// MarshalJSON writes the signature as a hex string.
func (s Signature) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(s[:])) }

// UnmarshalJSON reads a hex string.
func (s *Signature) UnmarshalJSON(b []byte) error { return unmarshalHex(b, s[:], "signature") }

// checkpointDomain names the signed encoding and its version.
const checkpointDomain = "svc-ledger-checkpoint/v1"

// Message is the checkpoint's canonical encoding, what is signed and
// hashed: every field but the signature and the hash, fixed-width or
// length-prefixed, the time in milliseconds.
func (c *Checkpoint) Message() []byte {
	b := make([]byte, 0, 200+len(c.TenantID)+len(c.KeyID))
	b = append(b, checkpointDomain...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.TenantID)))
	b = append(b, c.TenantID...)
	for _, n := range [...]int64{c.Number, c.FirstSeq, c.LastSeq, int64(c.Entries)} {
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = append(b, c.Root[:]...)
	b = append(b, c.Prev[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.CreatedAt.UnixMilli()))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.KeyID)))
	b = append(b, c.KeyID...)
	return b
}

// ComputeHash is the checkpoint's hash, which the next checkpoint's Prev
// holds: SHA-256 of its Message.
func (c *Checkpoint) ComputeHash() Hash { return sha256.Sum256(c.Message()) }

// sign fills the checkpoint's key id, signature and hash.
func (c *Checkpoint) sign(k *Key) {
	c.KeyID = k.ID
	c.CreatedAt = c.CreatedAt.UTC().Truncate(time.Millisecond)
	copy(c.Signature[:], ed25519.Sign(k.private, c.Message()))
	c.Hash = c.ComputeHash()
}

// ErrBadSignature is matched by CheckSignature's error for a checkpoint
// whose signature does not verify with any of the keys.
var ErrBadSignature = errors.New("ledger: checkpoint signature does not verify")

// CheckSignature verifies the checkpoint's signature with the one of keys
// its key id names, and that its shown hash is its own.
func (c *Checkpoint) CheckSignature(keys []ed25519.PublicKey) error {
	for _, k := range keys {
		if KeyID(k) != c.KeyID {
			continue
		}
		if !ed25519.Verify(k, c.Message(), c.Signature[:]) {
			return fmt.Errorf("%w with key %s", ErrBadSignature, c.KeyID)
		}
		if c.Hash != (Hash{}) && c.Hash != c.ComputeHash() {
			return fmt.Errorf("%w: its hash is not its own", ErrBadSignature)
		}
		return nil
	}
	return fmt.Errorf("%w: signed with key %s, which was not given", ErrBadSignature, c.KeyID)
}
