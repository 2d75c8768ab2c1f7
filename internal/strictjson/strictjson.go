// Package strictjson checks the object keys of a JSON document before
// encoding/json reads it, so that the document means one thing to every
// reader. encoding/json binds a key to a struct field without regard to
// letter case and keeps the last of repeated keys: it reads
// {"admin":false,"ADMIN":true} as admin true, and {"Mode":"optimize"} as
// mode optimize, where a reader that matches keys exactly, or keeps the
// first of two, sees something else. Check refuses such a document and
// names the key.
//
// encoding/json/v2 matches keys exactly and refuses duplicates, but Go 1.26
// has it only behind GOEXPERIMENT=jsonv2.
package strictjson

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Unknown says what Check does with a key that names no field of the
// struct its object is read into.
type Unknown uint8

const (
	// RefuseUnknown refuses it, as json.Decoder.DisallowUnknownFields does.
	RefuseUnknown Unknown = iota
	// AllowUnknown lets it pass unread, for a document that is also passed
	// on to a reader that knows more fields (a provider).
	AllowUnknown
)

// Problem is what is wrong with a key.
type Problem uint8

const (
	// Duplicate: the key repeats an earlier key of its object, in the same
	// letter case or another (encoding/json would read one of them only).
	Duplicate Problem = iota + 1
	// CaseVariant: the key matches a field's name only without regard to
	// letter case, which encoding/json would bind to the field.
	CaseVariant
	// UnknownField: the key names no field (with RefuseUnknown).
	UnknownField
)

// KeyError is a key that Check refused.
type KeyError struct {
	Problem Problem
	// Key is the key as it decodes.
	Key string
	// Other is, for a Duplicate, the earlier key it repeats and, for a
	// CaseVariant, the field's own name.
	Other string
	// Path is where the object holding the key is: "" at the top, else
	// as "messages[0]" or "tools[1].function".
	Path string
}

// Param is the key's place in the document, such as "messages[0].role".
func (e *KeyError) Param() string { return joinPath(e.Path, clip(e.Key)) }

// Error names the key and says what is wrong with it.
func (e *KeyError) Error() string {
	where := ""
	if e.Path != "" {
		where = " in " + e.Path
	}
	switch e.Problem {
	case Duplicate:
		if e.Key == e.Other {
			return fmt.Sprintf("duplicate key %q%s", clip(e.Key), where)
		}
		return fmt.Sprintf("duplicate key %q%s: it repeats %q (keys are compared without regard to letter case)",
			clip(e.Key), where, clip(e.Other))
	case CaseVariant:
		return fmt.Sprintf("unknown field %q%s (keys must match exactly: did you mean %q?)", clip(e.Key), where, e.Other)
	}
	return fmt.Sprintf("unknown field %q%s", clip(e.Key), where)
}

// clip bounds a key shown in a message; the document's author chose its
// length.
func clip(key string) string {
	const most = 100
	if len(key) <= most {
		return key
	}
	return strings.ToValidUTF8(key[:most], "") + "…"
}

// joinPath appends a path segment: a key after a dot, an index as is.
func joinPath(path, seg string) string {
	switch {
	case path == "":
		return seg
	case strings.HasPrefix(seg, "["):
		return path + seg
	}
	return path + "." + seg
}

// ErrSyntax is Check's answer to a document that is not JSON; the caller
// lets encoding/json say what is wrong with it.
var ErrSyntax = errors.New("strictjson: invalid JSON")

// Check reports the first key of data that encoding/json would read
// differently from how it is written, when data is decoded into a value of
// v's type: a key that repeats another of its object in any letter case,
// anywhere in the document (values read as json.RawMessage, maps or any
// included); a key that matches a field of its struct only without regard
// to letter case; and, with RefuseUnknown, a key that names no field. The
// error is a *KeyError, or ErrSyntax when data is not one valid JSON
// value. A nil v checks for repeated keys only.
//
// Struct fields are found as encoding/json finds them (json tags, embedded
// structs), once per type. The check reads data once and allocates nothing
// for an object of up to 8 keys, unless its keys are escaped.
func Check(data []byte, v any, unknown Unknown) error {
	p := free
	if v != nil {
		p = planOf(reflect.TypeOf(v))
	}
	s := scanner{src: data, unknown: unknown}
	if err := s.value(p); err != nil {
		return err
	}
	if s.ws(); s.i != len(s.src) {
		return ErrSyntax
	}
	return nil
}

// TypeWords names, for an error message, the JSON value a Go type is read
// from ("a string", "an array", …): what a *json.UnmarshalTypeError's field
// expected.
func TypeWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct, reflect.Pointer:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "of type " + t.Kind().String()
}
