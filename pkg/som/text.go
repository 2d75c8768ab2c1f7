package som

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// clean collapses whitespace (NBSP included) to single spaces, trims, and
// drops control and format characters: bidi overrides and zero-width
// characters can hide or reorder text a model reads, and page text must
// stay on one line so it cannot start a line of its own in the context.
func clean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			continue
		case unicode.IsSpace(r) || r == '\u00a0':
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// keyName is the form of a name that goes into an identity key: NFKC,
// lowercase, whitespace collapsed, every digit replaced by '#' (so that a
// counter or a date does not move an id), at most 64 runes.
func keyName(s string) string {
	s = norm.NFKC.String(clean(s))
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == 64 {
			break
		}
		switch {
		case unicode.IsDigit(r):
			r = '#'
		default:
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// firstWords returns the first n space-separated words of s.
func firstWords(s string, n int) string {
	i := 0
	for k := 0; k < len(s); k++ {
		if s[k] == ' ' {
			i++
			if i == n {
				return s[:k]
			}
		}
	}
	return s
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// hasToken reports whether the space-separated list attr (a class or an id)
// holds a word from words, where words inside a token are split at '-',
// '_' and case changes are ignored: "site-footer" and "footer__inner" both
// hold "footer". Whole words only, so "navy" is not "nav".
func hasToken(attr string, words map[string]bool) string {
	if attr == "" {
		return ""
	}
	start := -1
	for i := 0; i <= len(attr); i++ {
		var c byte
		if i < len(attr) {
			c = attr[i]
		}
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			w := strings.ToLower(attr[start:i])
			if words[w] {
				return w
			}
			start = -1
		}
	}
	return ""
}
