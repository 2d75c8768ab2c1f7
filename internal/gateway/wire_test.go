package gateway

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/svc-gateway/svc/internal/strictjson"
)

// agreeWithUnmarshal fails t when readWire or readParts reads body, which
// strictjson.Check passed, otherwise than json.Unmarshal does. It reports
// whether readWire read it.
func agreeWithUnmarshal(t *testing.T, body []byte) bool {
	t.Helper()
	var fast wireRequest
	if strictjson.Check(body, &fast, strictjson.AllowUnknown) != nil {
		return false
	}
	ok := readWire(body, &fast)
	var ref wireRequest
	err := json.Unmarshal(body, &ref)
	if ok {
		if err != nil {
			t.Fatalf("readWire read %q, which json.Unmarshal refuses: %v", body, err)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("readWire read %q as\n%#v\njson.Unmarshal as\n%#v", body, fast, ref)
		}
	}
	if err != nil {
		return ok
	}
	for _, m := range ref.Messages {
		if len(m.Content) == 0 || m.Content[0] != '[' {
			continue
		}
		parts, pok := readParts(m.Content)
		if !pok {
			continue
		}
		var refParts []contentPart
		if err := strictjson.Check(m.Content, &refParts, strictjson.AllowUnknown); err != nil {
			t.Fatalf("readParts read %s, which strictjson refuses: %v", m.Content, err)
		}
		if err := json.Unmarshal(m.Content, &refParts); err != nil {
			t.Fatalf("readParts read %s, which json.Unmarshal refuses: %v", m.Content, err)
		}
		if !reflect.DeepEqual(parts, refParts) && (len(parts) != 0 || len(refParts) != 0) {
			t.Fatalf("readParts read %s as %#v, json.Unmarshal as %#v", m.Content, parts, refParts)
		}
	}
	return ok
}

// genWire writes random chat request bodies: the fields svc reads, with
// values of their type and of others, nulls, escapes, odd numbers, white
// space, unknown keys and keys in another case.
type genWire struct {
	r *rand.Rand
	b strings.Builder
	// odd is how often, one in odd, a value or key is of the odd kind;
	// 0 for never.
	odd int
}

// rare is true one time in g.odd.
func (g *genWire) rare() bool { return g.odd > 0 && g.r.IntN(g.odd) == 0 }

func pick[T any](g *genWire, options ...T) T { return options[g.r.IntN(len(options))] }

func (g *genWire) pick(options ...string) string { return pick(g, options...) }

func (g *genWire) ws() {
	if g.r.IntN(6) == 0 {
		g.b.WriteString(g.pick(" ", "\n", "\t ", "\r\n  "))
	}
}

func (g *genWire) str() string {
	return g.pick(`"gpt-4o"`, `""`, `"a\"b"`, `"\u00e9t\u00e9"`, `"été"`, `"\ud800"`, `"tab\there"`, `"user"`, `"assistant"`,
		`"text"`, `"function"`, `"json_object"`, `"x\\y"`, `"\/"`, `"`+"\xff"+`"`)
}

func (g *genWire) number() string {
	return g.pick(`0`, `1`, `-1`, `2`, `0.5`, `1.0`, `1e2`, `-0`, `128`, `9223372036854775807`, `9223372036854775808`,
		`1e400`, `-1e-400`, `2.5E+1`, `123456789012345678901234567890`)
}

// value is a value meant for a field of kind, or now and then another.
func (g *genWire) value(kind string, depth int) {
	g.ws()
	if g.rare() {
		kind = g.pick("string", "number", "bool", "null", "object", "array")
	}
	switch kind {
	case "string":
		g.b.WriteString(g.str())
	case "number":
		if g.rare() || g.r.IntN(2) == 0 {
			g.b.WriteString(g.number())
		} else {
			g.b.WriteString(g.pick("0", "1", "7", "200", "-3"))
		}
	case "bool":
		g.b.WriteString(g.pick("true", "false"))
	case "null":
		g.b.WriteString("null")
	case "object", "array":
		if depth > 3 {
			g.b.WriteString(g.pick("{}", "[]", "null"))
			break
		}
		if kind == "object" {
			g.object(map[string]string{"a": "string", "b": "number", "c": "object"}, depth+1)
		} else {
			g.array("any", depth+1)
		}
	case "any":
		g.value(g.pick("string", "number", "bool", "null", "object", "array"), depth)
	case "message":
		g.object(map[string]string{"role": "string", "content": g.pick("string", "parts", "null"), "name": "string", "tool_calls": "array"}, depth+1)
	case "messages":
		g.array("message", depth+1)
	case "part":
		fields := map[string]string{"type": "string", "text": "string", "image_url": "object"}
		if g.rare() {
			fields[g.pick("Type", "TEXT", "tExt", "typé")] = "string"
		}
		g.object(fields, depth+1)
	case "parts":
		g.array("part", depth+1)
	case "tool":
		g.object(map[string]string{"type": "string", "function": "function"}, depth+1)
	case "tools":
		g.array("tool", depth+1)
	case "function":
		g.object(map[string]string{"name": "string", "parameters": "object", "description": "string"}, depth+1)
	case "stream_options":
		g.object(map[string]string{"include_usage": "bool", "other": "any"}, depth+1)
	case "response_format":
		g.object(map[string]string{"type": "string", "json_schema": "object"}, depth+1)
	}
	g.ws()
}

func (g *genWire) object(fields map[string]string, depth int) {
	g.b.WriteByte('{')
	n := 0
	for key, kind := range fields {
		if g.r.IntN(3) == 0 {
			continue
		}
		if n > 0 {
			g.b.WriteByte(',')
		}
		n++
		g.ws()
		if g.rare() {
			switch g.r.IntN(3) {
			case 0:
				key = strings.ToUpper(key)
			case 1:
				key = strings.Replace(key, "e", `\u0065`, 1)
			}
		}
		g.b.WriteString(`"` + key + `"`)
		g.ws()
		g.b.WriteByte(':')
		g.value(kind, depth)
	}
	g.b.WriteByte('}')
}

func (g *genWire) array(kind string, depth int) {
	g.b.WriteByte('[')
	for i := range g.r.IntN(4) {
		if i > 0 {
			g.b.WriteByte(',')
		}
		g.value(kind, depth)
	}
	g.b.WriteByte(']')
}

func (g *genWire) request() []byte {
	g.b.Reset()
	g.odd = pick(g, 0, 0, 20, 8)
	g.ws()
	g.object(map[string]string{
		"model": "string", "messages": "messages", "temperature": "number", "top_p": "number", "n": "number",
		"max_tokens": "number", "max_completion_tokens": "number", "stream": "bool", "stream_options": "stream_options",
		"response_format": "response_format", "tools": "tools", "functions": "array", "tool_choice": g.pick("string", "object"),
		"logprobs": "bool", "metadata": "object", "user": "string",
	}, 0)
	g.ws()
	return []byte(g.b.String())
}

// readWire and readParts read every generated body that they read at all
// as json.Unmarshal does, and read most of them.
func TestReadWireAgreesWithUnmarshal(t *testing.T) {
	g := genWire{r: rand.New(rand.NewPCG(1, 2))}
	const bodies = 20_000
	read := 0
	for range bodies {
		if agreeWithUnmarshal(t, g.request()) {
			read++
		}
	}
	t.Logf("readWire read %d of %d bodies", read, bodies)
	if read < bodies/10 {
		t.Fatalf("readWire read %d of %d bodies: the comparison compares little", read, bodies)
	}
}

// The shapes clients send are read without encoding/json.
func TestReadWireReadsCommonRequests(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"a\nb"}]}],"temperature":0.2,"max_tokens":200}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto","metadata":{"a":[1,"]"]}}`,
	} {
		var w wireRequest
		if !readWire([]byte(body), &w) {
			t.Errorf("readWire gave up on %s", body)
		}
		agreeWithUnmarshal(t, []byte(body))
	}
	if _, ok := readParts([]byte(`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]`)); !ok {
		t.Error("readParts gave up on text and image parts")
	}
}

// FuzzReadWire: whatever readWire and readParts read, they read as
// json.Unmarshal does.
func FuzzReadWire(f *testing.F) {
	g := genWire{r: rand.New(rand.NewPCG(3, 4))}
	for range 20 {
		f.Add(g.request())
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		agreeWithUnmarshal(t, body)
	})
}
