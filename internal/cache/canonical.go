package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendKeyJSON appends v, a JSON value, in the canonical form cache keys
// are made from: compact, object keys sorted (the last of duplicate keys
// kept), strings re-encoded as encoding/json writes them (<, > and &
// escaped), numbers as written. Two documents that differ
// only in key order or white space give the same bytes.
//
// It reads v in one pass, writing each value's canonical form straight
// into dst, so a request costs no map or intermediate value per field: it
// runs on every chat request's way to the exact cache.
func AppendKeyJSON(dst []byte, v json.RawMessage) ([]byte, error) {
	s := scanner{src: bytes.TrimSpace(v)}
	if len(s.src) == 0 {
		return dst, errors.New("cache: empty JSON value")
	}
	dst, err := s.value(dst)
	if err != nil {
		return dst, err
	}
	if s.ws(); s.i != len(s.src) {
		return dst, errSyntax
	}
	return dst, nil
}

var (
	errSyntax = errors.New("cache: invalid JSON value")
	errDepth  = errors.New("cache: JSON nested too deeply")
)

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

// scanner reads one JSON document.
type scanner struct {
	src   []byte
	i     int
	depth int
	// dropTop names members of the top-level object left out.
	dropTop []string
}

func (s *scanner) ws() {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value(dst []byte) ([]byte, error) {
	s.ws()
	if s.i >= len(s.src) {
		return dst, errSyntax
	}
	switch c := s.src[s.i]; {
	case c == '{':
		return s.object(dst)
	case c == '[':
		return s.array(dst)
	case c == '"':
		raw, text, err := s.stringToken()
		if err != nil {
			return dst, err
		}
		return appendJSONString(dst, raw, text)
	case c == 't':
		return s.literal(dst, "true")
	case c == 'f':
		return s.literal(dst, "false")
	case c == 'n':
		return s.literal(dst, "null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number(dst)
	}
	return dst, errSyntax
}

func (s *scanner) literal(dst []byte, word string) ([]byte, error) {
	if !bytes.HasPrefix(s.src[s.i:], []byte(word)) {
		return dst, errSyntax
	}
	s.i += len(word)
	return append(dst, word...), nil
}

// number copies a number as written, after checking its grammar.
func (s *scanner) number(dst []byte) ([]byte, error) {
	start := s.i
	if s.src[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.src) && s.src[s.i] == '0':
		s.i++
	case s.i < len(s.src) && s.src[s.i] >= '1' && s.src[s.i] <= '9':
		s.digits()
	default:
		return dst, errSyntax
	}
	if s.i < len(s.src) && s.src[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return dst, errSyntax
		}
	}
	if s.i < len(s.src) && (s.src[s.i] == 'e' || s.src[s.i] == 'E') {
		s.i++
		if s.i < len(s.src) && (s.src[s.i] == '+' || s.src[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return dst, errSyntax
		}
	}
	return append(dst, s.src[start:s.i]...), nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.src) && s.src[s.i] >= '0' && s.src[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// textFlags say what a string token holds, as stringToken finds it.
type textFlags uint8

const (
	// escapedText: a backslash escape.
	escapedText textFlags = 1 << iota
	// rewrittenText: text encoding/json writes otherwise (<, >, &, U+2028,
	// U+2029).
	rewrittenText
	// lossyText: what encoding/json turns into U+FFFD, a byte that is not
	// UTF-8 or an escaped surrogate that is not the first half of a pair
	// followed by the second.
	lossyText
)

// stringToken returns a string's raw token, quotes included, and what it
// holds, after checking it. The scan reads every byte anyway, so telling
// costs no second pass.
func (s *scanner) stringToken() ([]byte, textFlags, error) {
	start := s.i
	s.i++ // the opening quote
	var text textFlags
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '"':
			s.i++
			return s.src[start:s.i], text, nil
		case c == '\\':
			text |= escapedText
			if s.i+1 >= len(s.src) {
				return nil, 0, errSyntax
			}
			switch s.src[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				r, ok := hex4(s.src, s.i)
				if !ok {
					return nil, 0, errSyntax
				}
				s.i += 6
				if !utf16.IsSurrogate(r) {
					break
				}
				// As encoding/json reads it: a pair is taken whole, and
				// anything after an unpaired half is read on its own.
				if r2, ok := hex4(s.src, s.i); ok && utf16.DecodeRune(r, r2) != unicode.ReplacementChar {
					s.i += 6
				} else {
					text |= lossyText
				}
			default:
				return nil, 0, errSyntax
			}
		case c < 0x20:
			return nil, 0, errSyntax
		case c < utf8.RuneSelf:
			if c == '<' || c == '>' || c == '&' {
				text |= rewrittenText
			}
			s.i++
		default:
			r, size := utf8.DecodeRune(s.src[s.i:])
			switch {
			case r == utf8.RuneError && size == 1:
				text |= lossyText
			case r == '\u2028' || r == '\u2029':
				text |= rewrittenText
			}
			s.i += size
		}
	}
	return nil, 0, errSyntax
}

// hex4 reads the \uXXXX escape at b[i:], if there is one.
func hex4(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendJSONString appends a string token as encoding/json encodes its
// value. A token without escapes whose text encoding/json would write
// unchanged is copied; any other goes through a decode and an encode.
//
// A lossy token is copied as written: invalid UTF-8 and lone surrogates
// decode to U+FFFD, but the provider reads the bytes as sent, so kept as
// written they never share a key with a real U+FFFD or with each other.
func appendJSONString(dst, raw []byte, text textFlags) ([]byte, error) {
	if text&lossyText != 0 || text&(escapedText|rewrittenText) == 0 {
		return append(dst, raw...), nil
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return dst, errSyntax
	}
	return appendString(dst, []byte(str)), nil
}

// writtenAsIs reports whether encoding/json writes text unchanged inside
// quotes: valid UTF-8 with no control character, quote, backslash, HTML
// special character or line or paragraph separator.
func writtenAsIs(text []byte) bool {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

func appendString(dst, s []byte) []byte {
	if writtenAsIs(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(string(s)) // a string always encodes
	return append(dst, b...)
}

func (s *scanner) array(dst []byte) ([]byte, error) {
	if s.depth++; s.depth > maxDepth {
		return dst, errDepth
	}
	defer func() { s.depth-- }()
	s.i++ // [
	dst = append(dst, '[')
	if s.ws(); s.i < len(s.src) && s.src[s.i] == ']' {
		s.i++
		return append(dst, ']'), nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = s.value(dst); err != nil {
			return dst, err
		}
		s.ws()
		if s.i >= len(s.src) {
			return dst, errSyntax
		}
		switch s.src[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return append(dst, ']'), nil
		default:
			return dst, errSyntax
		}
	}
}

// member is an object member whose canonical value has been written to
// dst[start:end].
type member struct {
	// key is the decoded key, or for a lossy one lossyKey and its token:
	// bytes of the document itself for a key without escapes, which is
	// most, so that a key costs no copy.
	key        []byte
	start, end int
}

// lossyKey starts the key of a member whose key is kept as written. No
// decoded key starts with it, being UTF-8, so the two never meet, and
// lossy keys sort after the others; it costs member no field.
const lossyKey = "\xff"

func (s *scanner) object(dst []byte) ([]byte, error) {
	if s.depth++; s.depth > maxDepth {
		return dst, errDepth
	}
	defer func() { s.depth-- }()
	s.i++ // {
	if s.ws(); s.i < len(s.src) && s.src[s.i] == '}' {
		s.i++
		return append(dst, '{', '}'), nil
	}
	base := len(dst)
	var stack [16]member
	members := stack[:0]
	for {
		s.ws()
		if s.i >= len(s.src) || s.src[s.i] != '"' {
			return dst, errSyntax
		}
		raw, text, err := s.stringToken()
		if err != nil {
			return dst, err
		}
		key, err := decodeKey(raw, text)
		if err != nil {
			return dst, err
		}
		if s.ws(); s.i >= len(s.src) || s.src[s.i] != ':' {
			return dst, errSyntax
		}
		s.i++
		start := len(dst)
		if dst, err = s.value(dst); err != nil {
			return dst, err
		}
		if s.depth == 1 && s.dropped(key) {
			dst = dst[:start]
		} else {
			if text&lossyText != 0 {
				// Kept as written, as a lossy value is: two such keys never
				// collapse into one U+FFFD, nor meet a real one.
				key = append([]byte(lossyKey), raw...)
			}
			members = append(members, member{key: key, start: start, end: len(dst)})
		}
		s.ws()
		if s.i >= len(s.src) {
			return dst, errSyntax
		}
		if s.src[s.i] == ',' {
			s.i++
			continue
		}
		if s.src[s.i] != '}' {
			return dst, errSyntax
		}
		s.i++
		break
	}
	// Sorted by key; of equal keys the last written wins, as when decoding
	// into a map.
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	out := len(dst)
	dst = append(dst, '{')
	first := true
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(members[i+1].key, m.key) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if raw, ok := bytes.CutPrefix(m.key, []byte(lossyKey)); ok {
			dst = append(dst, raw...)
		} else {
			dst = appendString(dst, m.key)
		}
		dst = append(dst, ':')
		dst = append(dst, dst[m.start:m.end]...)
	}
	dst = append(dst, '}')
	n := copy(dst[base:], dst[out:])
	return dst[:base+n], nil
}

// canonicalObjectWithout is AppendKeyJSON of a JSON object, without the
// top-level members named in drop.
func canonicalObjectWithout(body []byte, drop ...string) ([]byte, error) {
	s := scanner{src: bytes.TrimSpace(body), dropTop: drop}
	if len(s.src) == 0 || s.src[0] != '{' {
		return nil, errors.New("cache: the request is not a JSON object")
	}
	dst, err := s.value(make([]byte, 0, len(s.src)))
	if err != nil {
		return nil, err
	}
	if s.ws(); s.i != len(s.src) {
		return nil, errSyntax
	}
	return dst, nil
}

// decodeKey is a key's text as encoding/json reads it, by which members
// are sorted.
func decodeKey(raw []byte, text textFlags) ([]byte, error) {
	if text&(escapedText|lossyText) == 0 {
		return raw[1 : len(raw)-1], nil
	}
	var key string
	if err := json.Unmarshal(raw, &key); err != nil {
		return nil, errSyntax
	}
	return []byte(key), nil
}

// dropped reports whether a top-level key is one of dropTop.
func (s *scanner) dropped(key []byte) bool {
	for _, d := range s.dropTop {
		if string(key) == d {
			return true
		}
	}
	return false
}
