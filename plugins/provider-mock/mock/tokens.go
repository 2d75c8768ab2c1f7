package mock

import (
	"unicode"
	"unicode/utf8"
)

// Token estimate.
//
// The mock has no real tokenizer; it estimates counts with a heuristic that
// stays within roughly 10–20% of cl100k/o200k on ordinary English:
//
//   - a word (a run of letters, including one that starts with an
//     apostrophe, as in "'t") costs one token per started 7 letters, so
//     common words are one token and "classification" is two;
//   - a run of digits costs one token per started 3 digits;
//   - a run of punctuation or symbols costs one token per started 2
//     characters;
//   - each CJK, kana or hangul character is one token;
//   - spaces and tabs are free (they ride on the next token); a run of line
//     breaks is one token.
//
// Chat framing follows OpenAI's published accounting: every message costs 3
// tokens plus its role and content (so about 4 for the envelope), a name 1
// more, and the reply is primed with 3. Tool definitions and a json_schema
// count their names, descriptions and schema text (JSON punctuation is
// free), plus a small fixed overhead.
const (
	tokensPerMessage  = 3
	tokensPerName     = 1
	tokensReplyPrime  = 3
	tokensPerImage    = 85 // a low-detail image
	tokensToolsHeader = 12
	tokensPerTool     = 8
	tokensSchema      = 8
	tokensPerToolCall = 4
	lettersPerToken   = 7
	digitsPerToken    = 3
	symbolsPerToken   = 2
)

// estimateTokens estimates the token count of s.
func estimateTokens(s string) int {
	n, _, _ := scanTokens(s, -1, false)
	return n
}

// estimateJSONTokens estimates the tokens of the words in a JSON text,
// treating its structural punctuation as free, which is closer to how
// providers render tool and schema definitions for the model.
func estimateJSONTokens(s string) int {
	n, _, _ := scanTokens(s, -1, true)
	return n
}

// truncateTokens cuts s to the longest prefix, ending on a token boundary,
// whose estimate is at most limit. It returns the prefix, its estimate and
// whether anything was cut.
func truncateTokens(s string, limit int) (string, int, bool) {
	n, cut, truncated := scanTokens(s, limit, false)
	if truncated {
		return s[:cut], n, true
	}
	return s, n, false
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func isJSONPunct(c byte) bool {
	switch c {
	case '{', '}', '[', ']', '"', ':', ',':
		return true
	}
	return false
}

// scanTokens walks s segment by segment. With limit >= 0 it stops before
// the first segment that would take the count over limit and reports where.
func scanTokens(s string, limit int, jsonMode bool) (tokens, cut int, truncated bool) {
	lastEnd := 0
	for i := 0; i < len(s); {
		c := s[i]
		t := 0
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '\n':
			for i < len(s) && (s[i] == '\n' || s[i] == '\r') {
				i++
			}
			t = 1
		case jsonMode && isJSONPunct(c):
			i++
			continue
		case isASCIIDigit(c):
			n := 0
			for i < len(s) && isASCIIDigit(s[i]) {
				i++
				n++
			}
			t = (n + digitsPerToken - 1) / digitsPerToken
		default:
			r, size := rune(c), 1
			if c >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[i:])
			}
			switch {
			case r >= utf8.RuneSelf && isCJK(r):
				i += size
				t = 1
			case isLetterRune(r) || ((r == '\'' || r == '’') && i+size < len(s) && startsLetter(s[i+size:])):
				i += size
				n := 0
				if r != '\'' && r != '’' {
					n = 1
				}
				for i < len(s) {
					r2, sz := rune(s[i]), 1
					if s[i] >= utf8.RuneSelf {
						r2, sz = utf8.DecodeRuneInString(s[i:])
						if isCJK(r2) {
							break
						}
					}
					if !isLetterRune(r2) {
						break
					}
					i += sz
					n++
				}
				t = (n + lettersPerToken - 1) / lettersPerToken
				if t == 0 {
					t = 1
				}
			case unicode.IsSpace(r):
				i += size
				continue
			default:
				n := 0
				for i < len(s) {
					c2 := s[i]
					if c2 < utf8.RuneSelf {
						if c2 == ' ' || c2 == '\t' || c2 == '\n' || c2 == '\r' || isASCIILetter(c2) || isASCIIDigit(c2) || (jsonMode && isJSONPunct(c2)) {
							break
						}
						if (c2 == '\'') && n > 0 && i+1 < len(s) && startsLetter(s[i+1:]) {
							break
						}
						i++
						n++
						continue
					}
					r2, sz := utf8.DecodeRuneInString(s[i:])
					if isLetterRune(r2) || unicode.IsDigit(r2) || unicode.IsSpace(r2) || isCJK(r2) {
						break
					}
					i += sz
					n++
				}
				if n == 0 { // a lone non-ASCII digit or similar
					i += size
					n = 1
				}
				t = (n + symbolsPerToken - 1) / symbolsPerToken
			}
		}
		if limit >= 0 && tokens+t > limit {
			return tokens, lastEnd, true
		}
		tokens += t
		lastEnd = i
	}
	return tokens, len(s), false
}

func isLetterRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIILetter(byte(r))
	}
	return unicode.IsLetter(r) || unicode.Is(unicode.Mn, r)
}

func startsLetter(s string) bool {
	if s == "" {
		return false
	}
	if s[0] < utf8.RuneSelf {
		return isASCIILetter(s[0])
	}
	r, _ := utf8.DecodeRuneInString(s)
	return isLetterRune(r) && !isCJK(r)
}
