// Package jsonread reads a JSON document that a validity check has
// passed (json.Valid, or strictjson.Check), one value at a time and
// without reflection: the few shapes a hot path reads, the rest skipped.
// It never decides what is valid JSON; a reader that meets a shape it does
// not know gives up, and its caller decodes with encoding/json.
package jsonread

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Reader is a position in a document.
type Reader struct {
	src []byte
	i   int
}

// New reads src from its start.
func New(src []byte) Reader { return Reader{src: src} }

// Peek is the next byte after white space, 0 at the end.
func (d *Reader) Peek() byte {
	for d.i < len(d.src) {
		switch c := d.src[d.i]; c {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return c
		}
	}
	return 0
}

// Eat consumes c, the next byte after white space, or says it is not.
func (d *Reader) Eat(c byte) bool {
	if d.Peek() != c {
		return false
	}
	d.i++
	return true
}

// Token is the string, number or literal at d.i (d.i past white space),
// as written.
func (d *Reader) Token() []byte {
	start := d.i
	if d.i < len(d.src) && d.src[d.i] == '"' {
		d.i++
		for d.i < len(d.src) {
			switch d.src[d.i] {
			case '\\':
				d.i += 2
				continue
			case '"':
				d.i++
				return d.src[start:min(d.i, len(d.src))]
			}
			d.i++
		}
		return d.src[start:]
	}
	for d.i < len(d.src) {
		switch d.src[d.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
			return d.src[start:d.i]
		}
		d.i++
	}
	return d.src[start:]
}

// Skip passes over one value, which the check before found valid.
func (d *Reader) Skip() bool {
	switch d.Peek() {
	case '{', '[':
		depth := 0
		for d.i < len(d.src) {
			switch d.src[d.i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					d.i++
					return true
				}
			case '"':
				d.Token()
				continue
			}
			d.i++
		}
		return false
	case 0:
		return false
	}
	d.Token()
	return true
}

// Raw is one value as written, as json.RawMessage reads it.
func (d *Reader) Raw(dst *json.RawMessage) bool {
	if d.Peek() == 0 {
		return false
	}
	start := d.i
	if !d.Skip() {
		return false
	}
	*dst = d.src[start:d.i]
	return true
}

// Object reads an object's members with member, given each key; a
// top-level null or any other value is no object.
func (d *Reader) Object(member func(key []byte) bool) bool {
	if !d.Eat('{') {
		return false
	}
	if d.Eat('}') {
		return true
	}
	for {
		if d.Peek() != '"' {
			return false
		}
		key := d.Token()
		if len(key) < 2 || strings.IndexByte(string(key), '\\') >= 0 {
			return false // escaped: the caller decides what it names
		}
		if !d.Eat(':') || !member(key[1:len(key)-1]) {
			return false
		}
		if d.Eat('}') {
			return true
		}
		if !d.Eat(',') {
			return false
		}
	}
}

// Array reads an array's elements with elem; null is nil.
func (d *Reader) Array(elem func() bool) (isNull, ok bool) {
	if d.Null() {
		return true, true
	}
	if !d.Eat('[') {
		return false, false
	}
	if d.Eat(']') {
		return false, true
	}
	for {
		if !elem() {
			return false, false
		}
		if d.Eat(']') {
			return false, true
		}
		if !d.Eat(',') {
			return false, false
		}
	}
}

// Null consumes a null.
func (d *Reader) Null() bool {
	if d.Peek() != 'n' || len(d.src)-d.i < 4 || string(d.src[d.i:d.i+4]) != "null" {
		return false
	}
	d.i += 4
	return true
}

// Number is a number token, or nil for another value.
func (d *Reader) Number() []byte {
	if c := d.Peek(); c != '-' && (c < '0' || c > '9') {
		return nil
	}
	return d.Token()
}

// Float reads a number token as a float64; ok is false for another value
// or one that does not fit.
func (d *Reader) Float() (f float64, ok bool) {
	tok := d.Number()
	if tok == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	return f, err == nil
}
