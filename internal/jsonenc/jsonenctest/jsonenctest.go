// Package jsonenctest makes the inputs that tests of hand-written JSON
// encoders compare with encoding/json over: strings and floats that hit
// every branch of encoding/json's string and number writers.
package jsonenctest

import (
	"math"
	"math/rand/v2"
)

// Strings returns n strings made to hit every branch of a JSON string
// encoder: control bytes, quotes, backslashes, <, > and &, U+2028 and
// U+2029, U+FFFD itself, multi-byte runes, invalid and cut-off UTF-8.
func Strings(rng *rand.Rand, n int) []string {
	pieces := []string{"a", "Z", " ", "0", "\x00", "\x01", "\x1f", "\b", "\f", "\n", "\r", "\t", "\x7f", `"`, `\`, "/",
		"<", ">", "&", "\u2028", "\u2029", "\ufffd", "é", "€", "😀", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "plain text"}
	out := []string{"", "<script>&amp;</script>", "line\u2028sep\u2029", "\xc3\x28", "bad \xff end"}
	for len(out) < n {
		var s []byte
		for range rng.IntN(12) {
			if rng.IntN(4) == 0 {
				s = append(s, byte(rng.IntN(256)))
			} else {
				s = append(s, pieces[rng.IntN(len(pieces))]...)
			}
		}
		out = append(out, string(s))
	}
	return out
}

// Floats returns n floats across encoding/json's notations: zero and -0,
// both sides of 1e-6 and 1e21, tiny and huge exponents, integers, and
// random bit patterns (NaN and infinities left out).
func Floats(rng *rand.Rand, n int) []float64 {
	out := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99999e-7, 1e-7, 1e20, 1e21, 9.999999999999999e20, 123456789,
		1e-9, 1.5e-10, 5e-324, math.MaxFloat64, -math.MaxFloat64, 0.0000102, 10.9, 1e100, 2.5e-300}
	for len(out) < n {
		var f float64
		switch rng.IntN(3) {
		case 0:
			f = math.Float64frombits(rng.Uint64())
		case 1:
			f = rng.Float64() * math.Pow(10, float64(rng.IntN(60)-30))
		default:
			f = float64(rng.IntN(1_000_000)) / 1000
		}
		if rng.IntN(2) == 0 {
			f = -f
		}
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			out = append(out, f)
		}
	}
	return out
}
