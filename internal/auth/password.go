package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/svc-gateway/svc/internal/errs"
)

// Argon2Params are the cost parameters of argon2id. Every hash carries its
// own, so they can be raised later without invalidating stored passwords.
type Argon2Params struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// DefaultArgon2 is OWASP's minimum for argon2id (Password Storage Cheat
// Sheet): 19 MiB of memory, 2 passes, 1 lane.
var DefaultArgon2 = Argon2Params{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

// Password length bounds. The upper bound keeps hashing cost predictable.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 256
)

const (
	saltLen = 16
	keyLen  = 32
)

// Hasher hashes and verifies passwords with argon2id.
type Hasher struct {
	Params Argon2Params
	// dummy is a hash of nothing anyone knows, verified against when no
	// account matches, so that an unknown email costs as much time as a
	// wrong password.
	dummy string
	// slots bounds concurrent hashes: each holds Params.MemoryKiB of
	// memory, and a burst of logins must not exhaust it.
	slots chan struct{}
}

// NewHasher returns a hasher that hashes with p.
func NewHasher(p Argon2Params) *Hasher {
	h := &Hasher{Params: p, slots: make(chan struct{}, 2*runtime.NumCPU())}
	h.dummy = h.mustHash(rand.Text())
	return h
}

// ValidatePassword checks a new password's length.
func ValidatePassword(password string) error {
	n := utf8.RuneCountInString(password)
	if n < MinPasswordLen || len(password) > MaxPasswordLen {
		return errs.Invalidf("password", "the password must have at least %d characters and at most %d bytes", MinPasswordLen, MaxPasswordLen)
	}
	return nil
}

// Hash returns the encoded argon2id hash of password:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key>, base64 without
// padding, the format of the reference implementation.
func (h *Hasher) Hash(password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	p := h.Params
	key := h.derive([]byte(password), salt, p, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

func (h *Hasher) mustHash(password string) string {
	s, err := h.Hash(password)
	if err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return s
}

// Verify reports whether password matches encoded, in constant time over
// the derived key. An empty encoded hash (no such account) is checked
// against a dummy hash so that it takes as long as a real miss.
func (h *Hasher) Verify(password, encoded string) bool {
	if encoded == "" {
		h.verify(password, h.dummy)
		return false
	}
	return h.verify(password, encoded)
}

func (h *Hasher) verify(password, encoded string) bool {
	p, salt, key, err := decodeHash(encoded)
	if err != nil {
		return false
	}
	got := h.derive([]byte(password), salt, p, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}

// derive runs argon2id in one of the hasher's slots.
func (h *Hasher) derive(password, salt []byte, p Argon2Params, n uint32) []byte {
	h.slots <- struct{}{}
	defer func() { <-h.slots }()
	return argon2.IDKey(password, salt, p.Time, p.MemoryKiB, p.Threads, n)
}

// NeedsRehash reports whether encoded was made with weaker parameters than
// the hasher's, so a successful login can store a stronger hash.
func (h *Hasher) NeedsRehash(encoded string) bool {
	p, _, _, err := decodeHash(encoded)
	return err != nil || p.MemoryKiB < h.Params.MemoryKiB || p.Time < h.Params.Time
}

// decodeHash parses the encoded form Hash writes.
func decodeHash(encoded string) (Argon2Params, []byte, []byte, error) {
	var p Argon2Params
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, fmt.Errorf("not an argon2id hash")
	}
	var threads uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &threads); err != nil {
		return p, nil, nil, fmt.Errorf("argon2id parameters: %w", err)
	}
	if p.MemoryKiB == 0 || p.Time == 0 || threads == 0 || threads > 255 || p.MemoryKiB > 1<<20 || p.Time > 64 {
		return p, nil, nil, fmt.Errorf("argon2id parameters out of range")
	}
	p.Threads = uint8(threads)
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return p, nil, nil, fmt.Errorf("argon2id salt: %w", err)
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return p, nil, nil, fmt.Errorf("argon2id key")
	}
	return p, salt, key, nil
}
