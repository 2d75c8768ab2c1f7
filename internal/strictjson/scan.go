package strictjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// scanner reads one JSON document, checking it against a plan.
type scanner struct {
	src     []byte
	i       int
	depth   int
	unknown Unknown
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

func (s *scanner) value(p *plan) error {
	s.ws()
	if s.i >= len(s.src) {
		return ErrSyntax
	}
	switch c := s.src[s.i]; {
	case c == '{':
		return s.object(p)
	case c == '[':
		return s.array(p)
	case c == '"':
		_, err := s.str(false)
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return ErrSyntax
}

func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.src[s.i:], []byte(word)) {
		return ErrSyntax
	}
	s.i += len(word)
	return nil
}

func (s *scanner) number() error {
	if s.src[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.src) && s.src[s.i] == '0':
		s.i++
	case s.i < len(s.src) && '1' <= s.src[s.i] && s.src[s.i] <= '9':
		s.digits()
	default:
		return ErrSyntax
	}
	if s.i < len(s.src) && s.src[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return ErrSyntax
		}
	}
	if s.i < len(s.src) && (s.src[s.i] == 'e' || s.src[s.i] == 'E') {
		s.i++
		if s.i < len(s.src) && (s.src[s.i] == '+' || s.src[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return ErrSyntax
		}
	}
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.src) && '0' <= s.src[s.i] && s.src[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// str reads a string token and, when decode is set, returns its text as
// encoding/json decodes it: the bytes between the quotes when they hold no
// escape and are valid UTF-8 (no copy), else the decoded text.
func (s *scanner) str(decode bool) ([]byte, error) {
	start := s.i
	s.i++ // the opening quote
	plain := true
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '"':
			s.i++
			raw := s.src[start:s.i]
			if plain || !decode {
				return raw[1 : len(raw)-1], nil
			}
			var text string
			if err := json.Unmarshal(raw, &text); err != nil {
				return nil, ErrSyntax
			}
			return []byte(text), nil
		case c == '\\':
			plain = false
			if s.i+1 >= len(s.src) {
				return nil, ErrSyntax
			}
			switch s.src[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.src) || !hex4(s.src[s.i+2:s.i+6]) {
					return nil, ErrSyntax
				}
				s.i += 6
			default:
				return nil, ErrSyntax
			}
		case c < 0x20:
			return nil, ErrSyntax
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, size := utf8.DecodeRune(s.src[s.i:])
			if r == utf8.RuneError && size == 1 {
				plain = false // encoding/json reads it as U+FFFD
			}
			s.i += size
		}
	}
	return nil, ErrSyntax
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func (s *scanner) array(p *plan) error {
	if s.depth++; s.depth > maxDepth {
		return ErrSyntax
	}
	defer func() { s.depth-- }()
	s.i++ // [
	elem := free
	if p.kind == listKind {
		elem = p.elem
	}
	if s.ws(); s.i < len(s.src) && s.src[s.i] == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if err := s.value(elem); err != nil {
			return within(err, "["+strconv.Itoa(n)+"]")
		}
		s.ws()
		if s.i >= len(s.src) {
			return ErrSyntax
		}
		switch s.src[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return ErrSyntax
		}
	}
}

func (s *scanner) object(p *plan) error {
	if s.depth++; s.depth > maxDepth {
		return ErrSyntax
	}
	defer func() { s.depth-- }()
	s.i++ // {
	if s.ws(); s.i < len(s.src) && s.src[s.i] == '}' {
		s.i++
		return nil
	}
	var keys keySet
	for {
		s.ws()
		if s.i >= len(s.src) || s.src[s.i] != '"' {
			return ErrSyntax
		}
		key, err := s.str(true)
		if err != nil {
			return err
		}
		if earlier, ok := keys.add(key); ok {
			return &KeyError{Problem: Duplicate, Key: string(key), Other: string(earlier)}
		}
		next, err := s.member(p, key)
		if err != nil {
			return err
		}
		if s.ws(); s.i >= len(s.src) || s.src[s.i] != ':' {
			return ErrSyntax
		}
		s.i++
		if err := s.value(next); err != nil {
			return within(err, string(key))
		}
		s.ws()
		if s.i >= len(s.src) {
			return ErrSyntax
		}
		switch s.src[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return ErrSyntax
		}
	}
}

// member returns the plan of the value under key in an object read by p,
// or why the key is refused.
func (s *scanner) member(p *plan, key []byte) (*plan, error) {
	switch p.kind {
	case mapKind:
		return p.elem, nil
	case structKind:
		if f, ok := p.fields[string(key)]; ok {
			return f, nil
		}
		for _, name := range p.names {
			if bytes.EqualFold(key, []byte(name)) {
				return nil, &KeyError{Problem: CaseVariant, Key: string(key), Other: name}
			}
		}
		if s.unknown == RefuseUnknown {
			return nil, &KeyError{Problem: UnknownField, Key: string(key)}
		}
	}
	return free, nil
}

// within places a key error found in a value under seg, a key or an
// index, as the error unwinds.
func within(err error, seg string) error {
	if e, ok := err.(*KeyError); ok {
		if !strings.HasPrefix(e.Path, "[") && e.Path != "" {
			seg += "."
		}
		e.Path = seg + e.Path
	}
	return err
}

// keySet finds, among an object's keys, two that are equal without regard
// to letter case (as bytes.EqualFold compares them, and encoding/json binds
// keys to fields), in time linear in the keys: a few are compared in pairs,
// more through a map of folded forms.
type keySet struct {
	few    [8][]byte
	n      int
	folded map[string][]byte
}

// add records key and returns an earlier key it repeats.
func (k *keySet) add(key []byte) ([]byte, bool) {
	if k.folded == nil && k.n < len(k.few) {
		for _, earlier := range k.few[:k.n] {
			if bytes.EqualFold(earlier, key) {
				return earlier, true
			}
		}
		k.few[k.n] = key
		k.n++
		return nil, false
	}
	if k.folded == nil {
		k.folded = make(map[string][]byte, 2*len(k.few))
		for _, earlier := range k.few[:k.n] {
			k.folded[foldCase(earlier)] = earlier
		}
	}
	f := foldCase(key)
	if earlier, ok := k.folded[f]; ok {
		return earlier, true
	}
	k.folded[f] = key
	return nil, false
}

// foldCase maps each rune to the smallest rune of its simple case-folding
// orbit, so that two keys fold alike exactly when bytes.EqualFold holds.
func foldCase(s []byte) string {
	var b strings.Builder
	b.Grow(len(s))
	if ascii(s) { // the orbit of an ASCII letter starts with its capital
		for _, c := range s {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	for _, r := range string(s) {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

func ascii(s []byte) bool {
	for _, c := range s {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
