// Package ids mints record identifiers, from the runtime's ChaCha8
// generator (seeded from the operating system's entropy, and cheap: no
// system call, no lock), and secret tokens, from crypto/rand.
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	mathrand "math/rand/v2"
	"strings"
	"time"
)

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// New returns prefix + "_" + 20 random base32 characters (100 bits): unique
// without coordination and safe to show, but never a secret.
func New(prefix string) string {
	b := randomBytes()
	return prefix + "_" + lowerBase32.EncodeToString(b[:])[:20]
}

// sortedBase32 has New's characters in byte order, so that an Ordered id's
// time prefix sorts as text.
var sortedBase32 = base32.NewEncoding(sortedAlphabet).WithPadding(base32.NoPadding)

const sortedAlphabet = "234567abcdefghijklmnopqrstuvwxyz"

// Ordered is New with the first 9 characters taken from t's milliseconds,
// so that ids minted later sort later: records written in time order then
// append to their indexes instead of touching a random page each, which is
// what keeps the run ledger's writes cheap. The other 11 characters (55
// bits) are random. Valid accepts both forms.
func Ordered(prefix string, t time.Time) string {
	ms := uint64(t.UnixMilli())
	b := randomBytes()
	// 45 bits of milliseconds (until the year 3084) in the top bits.
	hi := ms << 19
	for i := range 5 {
		b[i] = byte(hi >> (56 - 8*i))
	}
	b[5] = byte(hi>>16)&0xf8 | b[5]&0x07 // the last 5 bits of ms, then randomness
	return prefix + "_" + sortedBase32.EncodeToString(b[:])[:20]
}

// randomBytes are an id's random bits: unpredictable to whoever does not
// hold the generator's state, which is all an id needs; a secret takes
// crypto/rand's.
func randomBytes() [13]byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], mathrand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], mathrand.Uint64())
	return [13]byte(b[:13])
}

// Secret returns 256 random bits, base64url without padding (43 characters),
// for tokens that prove possession: API keys, session ids, invite links.
func Secret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Valid reports whether s looks like an id of the given prefix. Handlers use
// it to answer "not found" for garbage without a query.
func Valid(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix+"_")
	if !ok || len(rest) != 20 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// OrderedTime is the time an Ordered id was minted at, to the millisecond;
// false for an id of another form.
func OrderedTime(id string) (time.Time, bool) {
	_, rest, ok := strings.Cut(id, "_")
	if !ok || len(rest) != 20 {
		return time.Time{}, false
	}
	var ms int64
	for i := range 9 {
		v := strings.IndexByte(sortedAlphabet, rest[i])
		if v < 0 {
			return time.Time{}, false
		}
		ms = ms<<5 | int64(v)
	}
	return time.UnixMilli(ms), true
}
