// Package jsonenc appends JSON values by hand, byte for byte as
// encoding/json writes them: strings with <, >, & and U+2028/U+2029
// escaped and invalid UTF-8 as \ufffd, floats in encoding/json's format,
// times as time.Time's MarshalJSON writes them. The request path's fixed
// structs (a run's events, its route explanation) encode with it rather
// than by reflection; their tests compare every encoder with json.Marshal.
package jsonenc

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// String appends s as a JSON string.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // the other control bytes, and <, > and &
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hex = "0123456789abcdef"

// safe holds the ASCII bytes a JSON string holds as they are.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// Float appends f as encoding/json writes a float64: like ES6's number to
// string, 'e' notation below 1e-6 and from 1e21 on. It reports false for
// NaN and the infinities, which encoding/json refuses; dst is then as it
// was.
func Float(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// Int appends n.
func Int(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// Bool appends b.
func Bool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// Time appends t as its MarshalJSON writes it: RFC 3339 with nanoseconds,
// quoted. It reports false for a time MarshalJSON refuses (a year outside
// 0 to 9999, a zone offset of 24 hours or more); dst is then as it was.
func Time(dst []byte, t time.Time) ([]byte, bool) {
	n0 := len(dst)
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	b := dst[n0+1:]
	if len(b) <= len("9999") || b[len("9999")] != '-' {
		return dst[:n0], false
	}
	if b[len(b)-1] != 'Z' {
		c := b[len(b)-len("Z07:00")]
		zone := b[len(b)-len("07:00"):]
		if '0' <= c && c <= '9' || 10*(zone[0]-'0')+(zone[1]-'0') >= 24 {
			return dst[:n0], false
		}
	}
	return append(dst, '"'), true
}
