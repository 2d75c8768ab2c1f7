package redact_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/redact"
)

func TestEachClassIsMasked(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"email":           {"write to jane.doe+billing@example.co.uk today", "write to [email] today"},
		"card":            {"card 4111 1111 1111 1111 exp 12/30", "card [card] exp 12/30"},
		"card with dash":  {"5500-0000-0000-0004", "[card]"},
		"not a card":      {"order 4111111111111112 shipped", "order 4111111111111112 shipped"},
		"openai key":      {"key sk-proj-abcdefghijklmnop1234 leaked", "key [secret] leaked"},
		"svc key":         {"svc_0123456789abcdefghij", "[secret]"},
		"github token":    {"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[secret]"},
		"aws key id":      {"AKIAIOSFODNN7EXAMPLE", "[secret]"},
		"bearer":          {"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def", "Authorization: [secret]"},
		"ipv4":            {"from 203.0.113.42 and 10.0.0.1", "from [ip] and [ip]"},
		"not an ipv4":     {"version 1.2.3.999", "version 1.2.3.999"},
		"ipv6":            {"host 2001:db8::8a2e:370:7334 up", "host [ip] up"},
		"phone":           {"call +1 (415) 555-0132 now", "call [phone] now"},
		"phone intl":      {"tel: +44 20 7946 0958", "tel: [phone]"},
		"short number":    {"room 42, floor 3", "room 42, floor 3"},
		"date":            {"due 2024-01-15, paid 15.01.2024", "due 2024-01-15, paid 15.01.2024"},
		"bare number":     {"order 12345678 of 2 items", "order 12345678 of 2 items"},
		"local phone":     {"call 415 555 0132", "call [phone]"},
		"nothing to mask": {"The sky is blue because of Rayleigh scattering.", "The sky is blue because of Rayleigh scattering."},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.want, redact.String(c.in))
		})
	}
}

func TestMaskedJSONStaysJSON(t *testing.T) {
	in := []byte(`{"messages":[{"role":"user","content":"I am bob@example.com, card 4111-1111-1111-1111, ip 192.168.1.20"}]}`)
	out := redact.Bytes(in)
	assert.True(t, json.Valid(out))
	assert.JSONEq(t, `{"messages":[{"role":"user","content":"I am [email], card [card], ip [ip]"}]}`, string(out))
	assert.Nil(t, redact.Bytes(nil))
	assert.Equal(t, `[1000000,{"n":4111111111111111,"s":"[card]"}]`, string(redact.Bytes([]byte(`[1000000, {"n": 4111111111111111, "s": "4111111111111111"}]`))),
		"only strings are masked; numbers and the shape stay")
}

func FuzzString(f *testing.F) {
	f.Add(`{"content":"bob@example.com 4111 1111 1111 1111 +1 415 555 0132"}`)
	f.Fuzz(func(t *testing.T, s string) {
		if out := redact.Bytes([]byte(s)); json.Valid([]byte(s)) && !json.Valid(out) {
			t.Fatalf("masking broke JSON: %q → %q", s, out)
		}
		out := redact.String(s)
		if again := redact.String(out); again != out {
			t.Fatalf("masking is not stable: %q → %q → %q", s, out, again)
		}
	})
}
