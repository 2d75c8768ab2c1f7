package pluginapi

import (
	"strings"
	"unicode/utf8"
)

// Redacted stands in an error's text for a secret taken out of it.
const Redacted = "[REDACTED]"

// ellipsis marks where Truncate cut a text.
const ellipsis = "…"

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut
// with "…", and replaces what is not UTF-8: an upstream's words reach
// svc's answers, runs and logs bounded and readable.
func Truncate(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + ellipsis
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Redact takes secret out of s: each whole occurrence, and the start of
// one that Truncate's cut left before its "…" (however the cut text was
// then quoted), which would otherwise show all of the secret but its last
// characters.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	if strings.Contains(s, secret) {
		s = strings.ReplaceAll(s, secret, Redacted)
	}
	if !strings.Contains(s, ellipsis) {
		return s
	}
	parts := strings.Split(s, ellipsis)
	for i, part := range parts[:len(parts)-1] {
		for n := min(len(secret)-1, len(part)); n > 0; n-- {
			if strings.HasSuffix(part, secret[:n]) {
				parts[i] = part[:len(part)-n] + Redacted
				break
			}
		}
	}
	return strings.Join(parts, ellipsis)
}
