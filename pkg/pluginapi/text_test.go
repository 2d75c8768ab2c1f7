package pluginapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func TestTruncate(t *testing.T) {
	assert.Equal(t, "short", pluginapi.Truncate("short", 10))
	assert.Equal(t, "abc…", pluginapi.Truncate("abcdef", 3))
	assert.Equal(t, "a…", pluginapi.Truncate("aé", 2), "never inside a rune")
	assert.Equal(t, "bad \uFFFD", pluginapi.Truncate("bad \xff", 10))
}

func TestRedact(t *testing.T) {
	const key = "sk-test-SECRET-123"
	assert.Equal(t, "no secret here", pluginapi.Redact("no secret here", key))
	assert.Equal(t, "key [REDACTED] refused, [REDACTED]", pluginapi.Redact("key "+key+" refused, "+key, key))
	assert.Equal(t, "untouched", pluginapi.Redact("untouched", ""))

	// A cut through the key leaves no part of it.
	for n := 1; n < len(key); n++ {
		msg := strings.Repeat("x", 20) + key
		cut := pluginapi.Truncate(msg, 20+n)
		got := pluginapi.Redact(cut, key)
		assert.Equal(t, strings.Repeat("x", 20)+"[REDACTED]…", got, "cut %d bytes into the key", n)
	}
	// Also when the cut text is quoted inside another.
	inner := pluginapi.Truncate("see "+key, 10)
	assert.Equal(t, `provider said "see [REDACTED]…" (HTTP 500)`, pluginapi.Redact(`provider said "`+inner+`" (HTTP 500)`, key))
	// A text that merely ends like the key's start, uncut, is left alone.
	assert.Equal(t, "ask", pluginapi.Redact("ask", key))
}
