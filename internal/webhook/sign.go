package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// signaturePrefix names the scheme in X-Svc-Signature.
const signaturePrefix = "sha256="

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock when Verify is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// ErrInvalidSignature is matched with errors.Is by Verify errors for a
// signature header that is missing, malformed or does not match the body,
// the timestamp and the secret.
var ErrInvalidSignature = errors.New("webhook: invalid signature")

// ErrTimestamp is matched with errors.Is by Verify errors for a timestamp
// that is not a number of Unix seconds or is further from now than the
// tolerance: a delivery replayed later is refused even with its signature.
var ErrTimestamp = errors.New("webhook: timestamp outside the tolerance")

// Sign returns the X-Svc-Signature value of body sent at timestamp (Unix
// seconds): "sha256=" and the lowercase hex HMAC-SHA256, keyed with secret,
// of the decimal timestamp, a dot, and the body's bytes.
func Sign(secret string, timestamp int64, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, strconv.FormatInt(timestamp, 10), body))
}

func mac(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a delivery as its receiver got it: timestamp is the
// X-Svc-Timestamp header, body the raw request body (before any JSON
// decoding), signatureHeader the X-Svc-Signature header and secret the
// tenant's webhook_secret. The signature is compared in constant time. It
// returns nil for an authentic delivery sent within tolerance of now
// (DefaultTolerance when tolerance is 0 or less), an error matching
// ErrInvalidSignature for a bad signature and one matching ErrTimestamp
// for a bad or stale timestamp.
func Verify(secret, timestamp string, body []byte, signatureHeader string, now time.Time, tolerance time.Duration) error {
	if secret == "" {
		return fmt.Errorf("%w: no secret to verify with", ErrInvalidSignature)
	}
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(signatureHeader), signaturePrefix)
	if !ok {
		return fmt.Errorf("%w: the header must start with %q", ErrInvalidSignature, signaturePrefix)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: the signature is not %d hex bytes", ErrInvalidSignature, sha256.Size)
	}
	sent, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not Unix seconds", ErrTimestamp, timestamp)
	}
	if !hmac.Equal(got, mac(secret, timestamp, body)) {
		return fmt.Errorf("%w: it does not match the body, timestamp and secret", ErrInvalidSignature)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if skew := now.Sub(time.Unix(sent, 0)).Abs(); skew > tolerance {
		return fmt.Errorf("%w: sent %s from now, more than %s", ErrTimestamp, skew.Truncate(time.Second), tolerance)
	}
	return nil
}
