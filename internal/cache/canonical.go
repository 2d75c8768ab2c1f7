package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
)

// Canonical appends v, a JSON value, in a canonical form: compact, object
// keys sorted, strings re-encoded, numbers as written. Two documents that
// differ only in key order or white space give the same bytes.
func Canonical(dst []byte, v json.RawMessage) ([]byte, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return dst, errors.New("cache: empty JSON value")
	}
	switch v[0] {
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil {
			return dst, err
		}
		return canonicalObject(dst, obj)
	case '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(v, &arr); err != nil {
			return dst, err
		}
		dst = append(dst, '[')
		for i, e := range arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = Canonical(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return dst, err
		}
		return appendString(dst, s), nil
	}
	if !json.Valid(v) {
		return dst, errors.New("cache: invalid JSON value")
	}
	return append(dst, v...), nil // a number, true, false or null
}

func appendString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}

func canonicalObject(dst []byte, obj map[string]json.RawMessage) ([]byte, error) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		var err error
		if dst, err = Canonical(dst, obj[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}
