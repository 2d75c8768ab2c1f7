package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"unicode/utf8"
)

// referenceCanonical is the canonical form written the plain way, through
// encoding/json's maps: the one-pass scanner must agree with it byte for
// byte, and refuse what it refuses.
func referenceCanonical(dst []byte, v json.RawMessage) ([]byte, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return dst, errors.New("empty")
	}
	switch v[0] {
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil {
			return dst, err
		}
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
			b, _ := json.Marshal(k)
			dst = append(append(dst, b...), ':')
			var err error
			if dst, err = referenceCanonical(dst, obj[k]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
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
			if dst, err = referenceCanonical(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return dst, err
		}
		b, _ := json.Marshal(s)
		return append(dst, b...), nil
	}
	if !json.Valid(v) {
		return dst, errors.New("invalid")
	}
	return append(dst, v...), nil
}

var canonicalSeeds = []string{
	`{"b": [1, {"y": "\u0041", "x": 2.50}], "a": null}`,
	`{"a":1,"a":2}`, `{"é":"<b>&amp;</b>","\u00e9":"x"}`, `"line\u2028sep"`, "\"bad \xff utf8\"",
	`[]`, `{}`, `[{"k":[true,false,null,-0.5e+10,0]}]`, ` {"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream":true} `,
	`{"a":}`, `[1,]`, `{"a" 1}`, `01`, `1.`, `-`, `"\x"`, `"\u12"`, "\"tab\there\"", `{"a":1}x`, `tru`, `nul`,
}

func TestCanonicalAgreesWithTheReference(t *testing.T) {
	for _, in := range canonicalSeeds {
		checkAgainstReference(t, []byte(in))
	}
}

func checkAgainstReference(t *testing.T, in []byte) {
	t.Helper()
	want, werr := referenceCanonical(nil, in)
	got, gerr := Canonical(nil, in)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: reference error %v, scanner error %v", in, werr, gerr)
	}
	if werr == nil && !bytes.Equal(want, got) && !maybeLossy(in) {
		t.Fatalf("%q:\nreference %s\nscanner   %s", in, want, got)
	}
}

// surrogate matches an escaped UTF-16 surrogate, which may stand alone.
var surrogate = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// maybeLossy says the reference may turn part of in into U+FFFD, where the
// scanner keeps the bytes as written on purpose.
func maybeLossy(in []byte) bool { return !utf8.Valid(in) || surrogate.Match(in) }

func TestLossyStringsKeepTheirOwnKey(t *testing.T) {
	keys := map[string]string{}
	for _, body := range []string{`{"s":"\ud800"}`, `{"s":"\udfff"}`, "{\"s\":\"\xff\"}", `{"s":"\ufffd"}`, `{"s":"\uFFFD"}`, "{\"s\":\"\uFFFD\"}"} {
		got, err := CanonicalRequest([]byte(body))
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		keys[body] = string(got)
	}
	if keys[`{"s":"\ud800"}`] == keys[`{"s":"\ufffd"}`] || keys["{\"s\":\"\xff\"}"] == keys[`{"s":"\ufffd"}`] ||
		keys[`{"s":"\ud800"}`] == keys[`{"s":"\udfff"}`] {
		t.Fatalf("a lossy string shares a key: %q", keys)
	}
	if keys[`{"s":"\ufffd"}`] != keys[`{"s":"\uFFFD"}`] || keys[`{"s":"\ufffd"}`] != keys["{\"s\":\"\uFFFD\"}"] {
		t.Fatalf("spellings of a real U+FFFD must agree: %q", keys)
	}
}

func FuzzCanonicalAgainstReference(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgainstReference(t, in)
	})
}

func TestCanonicalRequestDropsDeliveryFields(t *testing.T) {
	a, err := CanonicalRequest([]byte(`{"stream":true,"model":"m","stream_options":{"include_usage":true},"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != `{"messages":[],"model":"m"}` {
		t.Fatalf("got %s", a)
	}
	nested, _ := CanonicalRequest([]byte(`{"metadata":{"stream":1}}`))
	if string(nested) != `{"metadata":{"stream":1}}` {
		t.Fatalf("only top-level fields are dropped: %s", nested)
	}
	if _, err := CanonicalRequest([]byte(`[1]`)); err == nil {
		t.Fatal("a request must be an object")
	}
}

// benchRequest is a typical short chat request.
var benchRequest = []byte(`{"model":"gpt-4o-mini","temperature":0,"messages":[{"role":"system","content":"You are a helpful assistant."},` +
	`{"role":"user","content":"Write one sentence about benchmarks, and keep it short & clear."}],"stream":false}`)

func BenchmarkCanonicalRequest(b *testing.B) {
	body := benchRequest
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CanonicalRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalReference(b *testing.B) {
	body := benchRequest
	b.ReportAllocs()
	for b.Loop() {
		if _, err := referenceCanonical(nil, body); err != nil {
			b.Fatal(err)
		}
	}
}

// manyKeys is a request whose metadata object has 50,000 distinct keys.
func manyKeys() []byte {
	var b bytes.Buffer
	b.WriteString(`{"metadata":{`)
	for i := range 50_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":1`)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

func TestCaseVariantsAmongManyKeys(t *testing.T) {
	body := manyKeys()
	_, variant, err := CanonicalRequestKeys(body)
	if err != nil || variant != "" {
		t.Fatalf("distinct keys: variant %q, error %v", variant, err)
	}
	withVariant := bytes.Replace(body, []byte(`"k49999"`), []byte(`"K7"`), 1)
	if _, variant, _ := CanonicalRequestKeys(withVariant); variant != "K7" {
		t.Fatalf("the case variant past the first keys was missed: %q", variant)
	}
	if _, variant, _ := CanonicalRequestKeys([]byte(`{"ſ":1,"S":2}`)); variant == "" {
		t.Fatal("folding must agree with strings.EqualFold (long s and S)")
	}
}

func BenchmarkCanonicalManyKeys(b *testing.B) {
	body := manyKeys()
	for b.Loop() {
		if _, _, err := CanonicalRequestKeys(body); err != nil {
			b.Fatal(err)
		}
	}
}
