package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/webhook"
)

func TestSignIsHMACOfTimestampDotBody(t *testing.T) {
	body := []byte(`{"id":"job_x","type":"policy.denied"}`)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("1780315200." + string(body)))
	assert.Equal(t, "sha256="+hex.EncodeToString(m.Sum(nil)), webhook.Sign(secret, 1780315200, body))
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_780_315_200, 0)
	body := []byte(`{"id":"job_x","type":"policy.denied","data":{"amount":10}}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := webhook.Sign(secret, now.Unix(), body)
	require.NoError(t, webhook.Verify(secret, ts, body, sig, now, time.Minute))
	require.NoError(t, webhook.Verify(secret, ts, body, sig, now.Add(4*time.Minute), 0), "within the default tolerance")
	require.NoError(t, webhook.Verify(secret, ts, body, sig, now.Add(-time.Minute), time.Minute), "a receiver clock behind")

	for _, tc := range []struct {
		name              string
		secret, timestamp string
		body              []byte
		sig               string
		now               time.Time
		want              error
	}{
		{"tampered body", secret, ts, []byte(`{"id":"job_x","type":"policy.denied","data":{"amount":99}}`), sig, now, webhook.ErrInvalidSignature},
		{"body with a trailing newline", secret, ts, append(body, '\n'), sig, now, webhook.ErrInvalidSignature},
		{"other secret", "another-secret", ts, body, sig, now, webhook.ErrInvalidSignature},
		{"no secret", "", ts, body, sig, now, webhook.ErrInvalidSignature},
		{"timestamp changed", secret, strconv.FormatInt(now.Unix()+1, 10), body, sig, now, webhook.ErrInvalidSignature},
		{"no signature", secret, ts, body, "", now, webhook.ErrInvalidSignature},
		{"other scheme", secret, ts, body, "sha1=" + sig[len("sha256="):], now, webhook.ErrInvalidSignature},
		{"not hex", secret, ts, body, "sha256=zz", now, webhook.ErrInvalidSignature},
		{"truncated", secret, ts, body, sig[:len(sig)-2], now, webhook.ErrInvalidSignature},
		{"timestamp not a number", secret, "yesterday", body, sig, now, webhook.ErrTimestamp},
		{"replayed later", secret, ts, body, sig, now.Add(2 * time.Minute), webhook.ErrTimestamp},
		{"from the future", secret, ts, body, sig, now.Add(-2 * time.Minute), webhook.ErrTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := webhook.Verify(tc.secret, tc.timestamp, tc.body, tc.sig, tc.now, time.Minute)
			require.ErrorIs(t, err, tc.want)
		})
	}
}
