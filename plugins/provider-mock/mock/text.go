package mock

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text helpers shared by the label, JSON and tool heuristics. Everything here
// is pure and deterministic.

// asciiLower lowercases ASCII letters only, so byte offsets into the result
// are offsets into s as well.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func isASCIILetter(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
func isASCIIDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isWordByte(c byte) bool    { return isASCIILetter(c) || isASCIIDigit(c) || c == '_' }
func isHSpace(c byte) bool      { return c == ' ' || c == '\t' }

// skipHSpace returns the first index at or after i that is not a space or tab.
func skipHSpace(s string, i int) int {
	for i < len(s) && isHSpace(s[i]) {
		i++
	}
	return i
}

// isWordRune reports whether r belongs inside a word: a letter, a mark or a
// digit.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		c := byte(r)
		return isASCIILetter(c) || isASCIIDigit(c)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// forEachWord calls fn with every word of s, in order, as a substring of s.
// A word is a run of letters and digits; an apostrophe (' or ’) between two
// letters stays inside the word ("doesn't").
func forEachWord(s string, fn func(w string)) {
	start := -1
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case isWordRune(r):
			if start < 0 {
				start = i
			}
		case (r == '\'' || r == '’') && start >= 0 && i+size < len(s):
			next, _ := utf8.DecodeRuneInString(s[i+size:])
			if !isWordRune(next) {
				fn(s[start:i])
				start = -1
			}
		default:
			if start >= 0 {
				fn(s[start:i])
				start = -1
			}
		}
		i += size
	}
	if start >= 0 {
		fn(s[start:])
	}
}

func lowerWord(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			return strings.ToLower(w)
		}
	}
	return asciiLower(w)
}

// scoringWords turns text into the normalised, stemmed words the label scorer
// compares: lowercased, contractions expanded ("doesn't" → "does not",
// "can't" → "can not"), other clitics dropped ("it's" → "it"), each word
// stemmed.
func scoringWords(text string) []string {
	out := make([]string, 0, 16+len(text)/6)
	forEachWord(text, func(w string) {
		w = lowerWord(w)
		if strings.Contains(w, "’") {
			w = strings.ReplaceAll(w, "’", "'")
		}
		if strings.HasSuffix(w, "n't") {
			base := w[:len(w)-3]
			switch base {
			case "ca":
				base = "can"
			case "wo":
				base = "will"
			case "sha":
				base = "shall"
			}
			if base != "" {
				out = append(out, stem(base))
			}
			out = append(out, "not")
			return
		}
		if i := strings.IndexByte(w, '\''); i > 0 {
			w = w[:i]
		}
		if w == "cannot" {
			out = append(out, "can", "not")
			return
		}
		out = append(out, stem(w))
	})
	return out
}

// stem is a tiny suffix stripper, applied the same way to keywords and to
// text so that "charged", "charges" and "charging" all meet "charge", and
// "cancelled" meets "cancel". It is not linguistics, only a consistent
// normal form.
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		w = w[:n-3] + "y"
	case n > 5 && strings.HasSuffix(w, "ing"):
		w = w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ed"):
		w = w[:n-2]
	case n > 4 && strings.HasSuffix(w, "es"):
		w = w[:n-2]
	case n > 3 && w[n-1] == 's' && w[n-2] != 's' && w[n-2] != 'u' && w[n-2] != 'i':
		w = w[:n-1]
	}
	n = len(w)
	if n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
		n--
	}
	if n > 3 && w[n-1] == w[n-2] && isConsonant(w[n-1]) {
		w = w[:n-1]
	}
	return w
}

func isConsonant(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	}
	return isASCIILetter(c)
}

// stopwords are left out of key-word summaries.
var stopwords = setOf(`a about above after again against all am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
down during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's
me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own
same shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them
themselves then there there's these they they'd they'll they're they've this those through to too under until
up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who
who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
also just please hi hello hey thanks thank dear regards get got can will im ive dont cant us yes ok okay`)

func setOf(words string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// keyWords returns up to max distinct words of text that are not stopwords,
// in their first-seen order and original spelling. Words are white-space
// separated and trimmed of surrounding punctuation, so "maria@example.org"
// and "ORD-12345" stay whole.
func keyWords(text string, max int) []string {
	var out []string
	for rest := text; rest != "" && len(out) < max; {
		i := 0
		for i < len(rest) && isSpaceByte(rest[i]) {
			i++
		}
		j := i
		for j < len(rest) && !isSpaceByte(rest[j]) {
			j++
		}
		w := trimPunct(rest[i:j])
		rest = rest[j:]
		if w == "" {
			continue
		}
		lw := lowerWord(w)
		if strings.Contains(lw, "’") {
			lw = strings.ReplaceAll(lw, "’", "'")
		}
		if stopwords[lw] || (len(lw) == 1 && !isASCIIDigit(lw[0])) {
			continue
		}
		dup := false
		for _, o := range out {
			if strings.EqualFold(o, w) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, w)
		}
	}
	return out
}

// trimPunct trims everything but letters, digits and a few symbols that
// start or end real tokens (#, $, %, @ and +) from both ends of w.
func trimPunct(w string) string {
	keep := func(r rune) bool {
		return isWordRune(r) || r == '#' || r == '$' || r == '%' || r == '+' || r == '@'
	}
	return strings.TrimFunc(w, func(r rune) bool { return !keep(r) })
}

// clip cuts s to at most n bytes on a rune boundary, adding "…" when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimSpace(s[:n]) + "…"
}

// collapseSpace replaces every run of white space with one space and trims.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// findPhrase returns the first index of phrase in lower at word boundaries
// (neither neighbour is a letter, digit or underscore), or -1.
func findPhrase(lower, phrase string) int {
	if phrase == "" {
		return -1
	}
	from := 0
	for from <= len(lower)-len(phrase) {
		i := strings.Index(lower[from:], phrase)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(phrase)
		if (i == 0 || !isWordByte(lower[i-1])) && (end == len(lower) || !isWordByte(lower[end])) {
			return i
		}
		from = i + 1
	}
	return -1
}

// normName puts a property or function name into snake_case lower form:
// "cityName" and "City-Name" both become "city_name".
func normName(name string) string {
	b := make([]byte, 0, len(name)+4)
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'A' <= c && c <= 'Z':
			if i > 0 && len(b) > 0 && b[len(b)-1] != '_' && (('a' <= name[i-1] && name[i-1] <= 'z') || isASCIIDigit(name[i-1])) {
				b = append(b, '_')
			}
			b = append(b, c+'a'-'A')
		case c == '-' || c == ' ' || c == '.':
			b = append(b, '_')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// nameHas reports whether the snake_case name n is one of words or has one
// of them as an underscore-separated part.
func nameHas(n string, words ...string) bool {
	for _, w := range words {
		if n == w {
			return true
		}
		for rest := n; rest != ""; {
			part := rest
			if i := strings.IndexByte(rest, '_'); i >= 0 {
				part, rest = rest[:i], rest[i+1:]
			} else {
				rest = ""
			}
			if part == w {
				return true
			}
		}
	}
	return false
}
