package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
)

// wireReader reads the chat request shapes clients send into the wire
// structs, without the reflection and second validating pass of
// json.Unmarshal, which cost more than the rest of ParseRequest together
// on a cold CPU. It reads only a document strictjson.Check has passed:
// valid JSON whose keys are spelled as the fields are, none repeated. On
// anything else (a value of another type than its field's, a number that
// does not fit, a key with escapes) it gives up, and the caller decodes
// with encoding/json, whose errors the answers quote. Where it does not
// give up, it reads what json.Unmarshal reads: a differential test and a
// fuzz target hold the two together.
type wireReader struct {
	src []byte
	i   int
}

// peek is the next byte after white space, 0 at the end.
func (d *wireReader) peek() byte {
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

// eat consumes c, the next byte after white space, or says it is not.
func (d *wireReader) eat(c byte) bool {
	if d.peek() != c {
		return false
	}
	d.i++
	return true
}

// token is the string, number or literal at d.i (d.i past white space),
// as written.
func (d *wireReader) token() []byte {
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

// skip passes over one value, which the check before found valid.
func (d *wireReader) skip() bool {
	switch d.peek() {
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
				d.token()
				continue
			}
			d.i++
		}
		return false
	case 0:
		return false
	}
	d.token()
	return true
}

// raw is one value as written, as json.RawMessage reads it.
func (d *wireReader) raw(dst *json.RawMessage) bool {
	if d.peek() == 0 {
		return false
	}
	start := d.i
	if !d.skip() {
		return false
	}
	*dst = d.src[start:d.i]
	return true
}

// object reads an object's members with member, given each key; a
// top-level null or any other value is no object.
func (d *wireReader) object(member func(key []byte) bool) bool {
	if !d.eat('{') {
		return false
	}
	if d.eat('}') {
		return true
	}
	for {
		if d.peek() != '"' {
			return false
		}
		key := d.token()
		if len(key) < 2 || strings.IndexByte(string(key), '\\') >= 0 {
			return false // escaped: encoding/json decides what it names
		}
		if !d.eat(':') || !member(key[1:len(key)-1]) {
			return false
		}
		if d.eat('}') {
			return true
		}
		if !d.eat(',') {
			return false
		}
	}
}

// array reads an array's elements with elem; null is nil.
func (d *wireReader) array(elem func() bool) (isNull, ok bool) {
	if d.null() {
		return true, true
	}
	if !d.eat('[') {
		return false, false
	}
	if d.eat(']') {
		return false, true
	}
	for {
		if !elem() {
			return false, false
		}
		if d.eat(']') {
			return false, true
		}
		if !d.eat(',') {
			return false, false
		}
	}
}

// null consumes a null.
func (d *wireReader) null() bool {
	if d.peek() != 'n' || len(d.src)-d.i < 4 || string(d.src[d.i:d.i+4]) != "null" {
		return false
	}
	d.i += 4
	return true
}

// str reads a string into *dst; null leaves it.
func (d *wireReader) str(dst *string) bool {
	if d.null() {
		return true
	}
	if d.peek() != '"' {
		return false
	}
	tok := d.token()
	if s, ok := plainString(tok); ok {
		*dst = s
		return true
	}
	return json.Unmarshal(tok, dst) == nil
}

// strPtr reads a string into a new *dst; null sets it nil.
func (d *wireReader) strPtr(dst **string) bool {
	if d.null() {
		*dst = nil
		return true
	}
	s := new(string)
	*dst = s
	return d.str(s)
}

// number is a number token, or nil for another value.
func (d *wireReader) number() []byte {
	if c := d.peek(); c != '-' && (c < '0' || c > '9') {
		return nil
	}
	return d.token()
}

func (d *wireReader) float(dst **float64) bool {
	if d.null() {
		*dst = nil
		return true
	}
	tok := d.number()
	if tok == nil {
		return false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	*dst = &f
	return true
}

func (d *wireReader) int(dst **int) bool {
	if d.null() {
		*dst = nil
		return true
	}
	tok := d.number()
	if tok == nil {
		return false
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil || int64(int(n)) != n {
		return false
	}
	v := int(n)
	*dst = &v
	return true
}

func (d *wireReader) bool(dst **bool) bool {
	if d.null() {
		*dst = nil
		return true
	}
	var v bool
	switch d.peek() {
	case 't':
		v = true
	case 'f':
	default:
		return false
	}
	if tok := d.token(); string(tok) != strconv.FormatBool(v) {
		return false
	}
	*dst = &v
	return true
}

// readWire reads body, which strictjson.Check passed, into w; false when
// encoding/json must.
func readWire(body []byte, w *wireRequest) bool {
	d := wireReader{src: body}
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "model":
			return d.strPtr(&w.Model)
		case "messages":
			return d.messages(&w.Messages)
		case "temperature":
			return d.float(&w.Temperature)
		case "top_p":
			return d.float(&w.TopP)
		case "n":
			return d.int(&w.N)
		case "max_tokens":
			return d.int(&w.MaxTokens)
		case "max_completion_tokens":
			return d.int(&w.MaxCompletionTokens)
		case "stream":
			return d.bool(&w.Stream)
		case "stream_options":
			return d.streamOptions(&w.StreamOptions)
		case "response_format":
			return d.responseFormat(&w.ResponseFormat)
		case "tools":
			return d.tools(&w.Tools)
		case "functions":
			return d.raw(&w.Functions)
		case "tool_choice":
			return d.raw(&w.ToolChoice)
		case "logprobs":
			return d.bool(&w.Logprobs)
		}
		return d.skip()
	})
	return ok && d.peek() == 0
}

func (d *wireReader) messages(dst *[]wireMessage) bool {
	ms := make([]wireMessage, 0, 4)
	isNull, ok := d.array(func() bool {
		var m wireMessage
		if !d.null() && !d.object(func(key []byte) bool {
			switch string(key) {
			case "role":
				return d.strPtr(&m.Role)
			case "content":
				return d.raw(&m.Content)
			}
			return d.skip()
		}) {
			return false
		}
		ms = append(ms, m)
		return true
	})
	if isNull {
		ms = nil
	}
	*dst = ms
	return ok
}

func (d *wireReader) streamOptions(dst **streamOptions) bool {
	if d.null() {
		*dst = nil
		return true
	}
	o := new(streamOptions)
	*dst = o
	return d.object(func(key []byte) bool {
		if string(key) == "include_usage" {
			return d.bool(&o.IncludeUsage)
		}
		return d.skip()
	})
}

func (d *wireReader) responseFormat(dst **responseFormat) bool {
	if d.null() {
		*dst = nil
		return true
	}
	f := new(responseFormat)
	*dst = f
	return d.object(func(key []byte) bool {
		if string(key) == "type" {
			return d.str(&f.Type)
		}
		return d.skip()
	})
}

func (d *wireReader) tools(dst *[]wireTool) bool {
	var ts []wireTool
	isNull, ok := d.array(func() bool {
		var t wireTool
		if !d.null() && !d.object(func(key []byte) bool {
			switch string(key) {
			case "type":
				return d.str(&t.Type)
			case "function":
				if d.null() {
					return true
				}
				return d.object(func(key []byte) bool {
					if string(key) == "name" {
						return d.str(&t.Function.Name)
					}
					return d.skip()
				})
			}
			return d.skip()
		}) {
			return false
		}
		ts = append(ts, t)
		return true
	})
	if !isNull && ts == nil {
		ts = []wireTool{}
	}
	*dst = ts
	return ok
}

// readParts reads a message's content array, which the check of the whole
// body passed for repeats; false when encoding/json must, as for a key
// that strictjson.Check would refuse against contentPart's fields.
func readParts(raw []byte) ([]contentPart, bool) {
	d := wireReader{src: raw}
	parts := make([]contentPart, 0, 2)
	isNull, ok := d.array(func() bool {
		var p contentPart
		if !d.null() && !d.object(func(key []byte) bool {
			switch string(key) {
			case "type":
				return d.str(&p.Type)
			case "text":
				return d.str(&p.Text)
			}
			// encoding/json would bind a key that folds to a field's
			// name (strictjson refuses it): EqualFold folds as it does.
			if strings.EqualFold(string(key), "type") || strings.EqualFold(string(key), "text") {
				return false
			}
			return d.skip()
		}) {
			return false
		}
		parts = append(parts, p)
		return true
	})
	if !ok || isNull || d.peek() != 0 {
		return nil, false
	}
	return parts, true
}
