package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
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
	`{"m":{"\ud800":1,"\udfff":2,"\ufffd":3}}`, `["\ud83d\ude00","\uD83D\uDE00x","\ud800\ud83d\ude00","\ude00\ud83d"]`,
	`{"\ud83d\ude00":1}`, "[\"\\\\ufffd\xff\",\"\\\\ufffd\uFFFD\"]", `"\ud800\u"`, `"\ud800\uzzzz"`, "\"\xed\xa0\x80\"",
	"{\"é\":\"\x92\",\"\\u00e9\":\"\"}", "\v0", `1E700`,
	"[\"line\u2028sep\",\"a\u2029\",\"<\"]",
}

func TestCanonicalAgreesWithTheReference(t *testing.T) {
	for _, in := range canonicalSeeds {
		checkAgainstReference(t, []byte(in))
	}
}

func checkAgainstReference(t *testing.T, in []byte) {
	t.Helper()
	want, werr := referenceCanonical(nil, in)
	got, gerr := AppendKeyJSON(nil, in)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: reference error %v, scanner error %v", in, werr, gerr)
	}
	if werr != nil {
		return
	}
	// The reference turns lossy text into U+FFFD, where the scanner keeps
	// the bytes as written on purpose: only there may they differ, so the
	// scanner's word for it is checked too.
	lossy := scannerSawLossyText(in)
	if lossy != decodesLossily(in) {
		t.Fatalf("%q: the scanner says lossy is %v", in, lossy)
	}
	if !lossy && !bytes.Equal(want, got) {
		t.Fatalf("%q:\nreference %s\nscanner   %s", in, want, got)
	}
}

// scannerSawLossyText reports whether stringToken called any string of in,
// a valid JSON document, lossy. Outside strings such a document holds no
// quote, so each quote found starts a token.
func scannerSawLossyText(in []byte) bool {
	s := scanner{src: in}
	for s.i < len(s.src) {
		if s.src[s.i] != '"' {
			s.i++
			continue
		}
		_, text, err := s.stringToken()
		if err != nil || text&lossyText != 0 {
			return err == nil
		}
	}
	return false
}

// decodesLossily reports whether encoding/json writes U+FFFD for anything
// in in, a document the reference took, that is not a real U+FFFD: each
// real one, escaped or not, is spelled otherwise first, so any left after a
// decode came from invalid UTF-8 or an unpaired surrogate.
func decodesLossily(in []byte) bool {
	in = bytes.TrimSpace(in) // as the reference reads it
	var b []byte
	for i := 0; i < len(in); {
		switch r, size := utf8.DecodeRune(in[i:]); {
		case in[i] == '\\' && i+1 < len(in) && in[i+1] == 'u':
			esc := string(in[i : i+6])
			if strings.EqualFold(esc, `\ufffd`) {
				esc = `\u0000`
			}
			b = append(b, esc...)
			i += 6
		case in[i] == '\\':
			b = append(b, in[i:i+2]...)
			i += 2
		case r == utf8.RuneError && size == 3:
			b = append(b, '?')
			i += size
		default:
			b = append(b, in[i:i+size]...)
			i += size
		}
	}
	// Token by token, so that no string is hidden by a later duplicate key.
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // numbers too large for a float64 are JSON
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			panic(err)
		}
		if str, ok := tok.(string); ok && strings.ContainsRune(str, utf8.RuneError) {
			return true
		}
	}
}

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

func TestLossyKeysKeepTheirOwnKey(t *testing.T) {
	canon := func(body string) string {
		t.Helper()
		got, err := CanonicalRequest([]byte(body))
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		return string(got)
	}
	if a, b := canon(`{"m":{"\ud800":1}}`), canon(`{"m":{"\ufffd":1}}`); a == b {
		t.Fatalf("a lone surrogate key shares a key with a real U+FFFD: %s", a)
	}
	if a, b := canon("{\"m\":{\"\xff\":1}}"), canon("{\"m\":{\"\uFFFD\":1}}"); a == b {
		t.Fatalf("an invalid UTF-8 key shares a key with a real U+FFFD: %s", a)
	}
	if got := canon(`{"m":{"\ud800":1,"\udfff":2}}`); got != `{"m":{"\ud800":1,"\udfff":2}}` {
		t.Fatalf("two lossy keys must stay two members: %s", got)
	}
	if got := canon(`{"m":{"\udfff":2,"\ufffd":3,"\ud800":1}}`); got != `{"m":{"�":3,"\ud800":1,"\udfff":2}}` {
		t.Fatalf("lossy keys sort after decoded ones, each kept: %s", got)
	}
	if got := canon(`{"m":{"\ud800":1,"\ud800":2}}`); got != `{"m":{"\ud800":2}}` {
		t.Fatalf("of a lossy key written twice the last is kept: %s", got)
	}
	if got := canon(`{"\"\\ud800\"":1,"\ud800":2}`); got != `{"\"\\ud800\"":1,"\ud800":2}` {
		t.Fatalf("a decoded key that reads as a lossy token is another key: %s", got)
	}
	if got := canon(`{"stream\ud800":1,"stream":true}`); got != `{"stream\ud800":1}` {
		t.Fatalf("only the delivery fields themselves are dropped: %s", got)
	}
}

func TestEscapedBackslashIsNotAnEscape(t *testing.T) {
	// The text \ufffd then an invalid byte, against \ufffd then a real U+FFFD.
	a, err := AppendKeyJSON(nil, []byte("\"\\\\ufffd\xff\""))
	if err != nil {
		t.Fatal(err)
	}
	b, err := AppendKeyJSON(nil, []byte("\"\\\\ufffd\uFFFD\""))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Fatalf("an escaped backslash hid an invalid byte: both %q", a)
	}
	if string(b) != "\"\\\\ufffd\uFFFD\"" {
		t.Fatalf("a real U+FFFD after an escaped backslash is ordinary text: %q", b)
	}
}

func TestSurrogatePairsAreText(t *testing.T) {
	for _, in := range []string{`["\ud83d\ude00"]`, `["\uD83D\uDE00"]`, `["\ud83d\uDE00"]`, `{"\ud83d\ude00":"\ud83d\ude00"}`} {
		got, err := AppendKeyJSON(nil, []byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		want := `["😀"]`
		if in[0] == '{' {
			want = `{"😀":"😀"}`
		}
		if string(got) != want {
			t.Fatalf("%q: got %s, want %s", in, got, want)
		}
	}
	// A high half before a pair is lone; the pair after it is still text.
	if got, _ := AppendKeyJSON(nil, []byte(`"\ud800\ud83d\ude00"`)); string(got) != `"\ud800\ud83d\ude00"` {
		t.Fatalf("got %s", got)
	}
}

func TestStringTokenLossy(t *testing.T) {
	for in, want := range map[string]bool{
		`"plain"`: false, "\"é😀\"": false, "\"\uFFFD\"": false, `"\ufffd"`: false, `"\ud83d\ude00"`: false,
		`"\\ud800"`: false, `"\ud800"`: true, `"\udfff"`: true, `"\ude00\ud83d"`: true, `"\ud83d\u0041"`: true,
		`"\ud83d"`: true, `"\ud800\ud83d\ude00"`: true, "\"\xff\"": true, "\"\xed\xa0\x80\"": true, "\"\xe2\x82\"": true,
	} {
		s := scanner{src: []byte(in)}
		raw, text, err := s.stringToken()
		if lossy := text&lossyText != 0; err != nil || string(raw) != in || lossy != want {
			t.Errorf("%q: lossy %v, error %v, want lossy %v", in, lossy, err, want)
		}
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

func BenchmarkCanonicalManyKeys(b *testing.B) {
	body := manyKeys()
	for b.Loop() {
		if _, err := CanonicalRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
