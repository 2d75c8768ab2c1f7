package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// plainString reads a message's text without decoding it only where that
// text is exactly what json.Unmarshal makes of it, and leaves every other
// string to json.Unmarshal.
func TestPlainStringIsWhatJSONReads(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		plain bool
	}{
		{`"Write one sentence about benchmarks."`, true},
		{`""`, true},
		{`"héllo, 世界 🙂"`, true},
		{`"<b>&amp;</b>"`, true},
		{`"a\"b"`, false},
		{`"line\nbreak"`, false},
		{`"\u00e9"`, false},
		{`"tab` + "\t" + `"`, false},
		{"\"bad \xff utf-8\"", false},
		{`"`, false},
		{`"x`, false},
	} {
		got, ok := plainString([]byte(tc.raw))
		assert.Equal(t, tc.plain, ok, "%q", tc.raw)
		if !ok {
			continue
		}
		var want string
		if assert.NoError(t, json.Unmarshal([]byte(tc.raw), &want), "%q", tc.raw) {
			assert.Equal(t, want, got, "%q", tc.raw)
		}
	}
}

// A message whose text needs decoding is still decoded.
func TestParseRequestDecodesEscapedContent(t *testing.T) {
	r, err := ParseRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"a\"b\n\u00e9"},{"role":"user","content":"plain"}]}`))
	if assert.NoError(t, err) {
		assert.Equal(t, "a\"b\né", r.Messages[0].Content)
		assert.Equal(t, "plain", r.Messages[1].Content)
	}
}
