package gateway

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/svc-gateway/svc/pkg/jsonread"
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
	jsonread.Reader
}

// str reads a string into *dst; null leaves it.
func (d *wireReader) str(dst *string) bool {
	if d.Null() {
		return true
	}
	if d.Peek() != '"' {
		return false
	}
	tok := d.Token()
	if s, ok := plainString(tok); ok {
		*dst = s
		return true
	}
	return json.Unmarshal(tok, dst) == nil
}

// strPtr reads a string into a new *dst; null sets it nil.
func (d *wireReader) strPtr(dst **string) bool {
	if d.Null() {
		*dst = nil
		return true
	}
	s := new(string)
	*dst = s
	return d.str(s)
}

func (d *wireReader) float(dst **float64) bool {
	if d.Null() {
		*dst = nil
		return true
	}
	f, ok := d.Float()
	if !ok {
		return false
	}
	*dst = &f
	return true
}

func (d *wireReader) int(dst **int) bool {
	if d.Null() {
		*dst = nil
		return true
	}
	tok := d.Number()
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
	if d.Null() {
		*dst = nil
		return true
	}
	var v bool
	switch d.Peek() {
	case 't':
		v = true
	case 'f':
	default:
		return false
	}
	if tok := d.Token(); string(tok) != strconv.FormatBool(v) {
		return false
	}
	*dst = &v
	return true
}

// readWire reads body, which strictjson.Check passed, into w; false when
// encoding/json must.
func readWire(body []byte, w *wireRequest) bool {
	d := wireReader{jsonread.New(body)}
	ok := d.Object(func(key []byte) bool {
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
			return d.Raw(&w.Functions)
		case "tool_choice":
			return d.Raw(&w.ToolChoice)
		case "logprobs":
			return d.bool(&w.Logprobs)
		}
		return d.Skip()
	})
	return ok && d.Peek() == 0
}

func (d *wireReader) messages(dst *[]wireMessage) bool {
	ms := make([]wireMessage, 0, 4)
	isNull, ok := d.Array(func() bool {
		var m wireMessage
		if !d.Null() && !d.Object(func(key []byte) bool {
			switch string(key) {
			case "role":
				return d.strPtr(&m.Role)
			case "content":
				return d.Raw(&m.Content)
			}
			return d.Skip()
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
	if d.Null() {
		*dst = nil
		return true
	}
	o := new(streamOptions)
	*dst = o
	return d.Object(func(key []byte) bool {
		if string(key) == "include_usage" {
			return d.bool(&o.IncludeUsage)
		}
		return d.Skip()
	})
}

func (d *wireReader) responseFormat(dst **responseFormat) bool {
	if d.Null() {
		*dst = nil
		return true
	}
	f := new(responseFormat)
	*dst = f
	return d.Object(func(key []byte) bool {
		if string(key) == "type" {
			return d.str(&f.Type)
		}
		return d.Skip()
	})
}

func (d *wireReader) tools(dst *[]wireTool) bool {
	var ts []wireTool
	isNull, ok := d.Array(func() bool {
		var t wireTool
		if !d.Null() && !d.Object(func(key []byte) bool {
			switch string(key) {
			case "type":
				return d.str(&t.Type)
			case "function":
				if d.Null() {
					return true
				}
				return d.Object(func(key []byte) bool {
					if string(key) == "name" {
						return d.str(&t.Function.Name)
					}
					return d.Skip()
				})
			}
			return d.Skip()
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
	d := wireReader{jsonread.New(raw)}
	parts := make([]contentPart, 0, 2)
	isNull, ok := d.Array(func() bool {
		var p contentPart
		if !d.Null() && !d.Object(func(key []byte) bool {
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
			return d.Skip()
		}) {
			return false
		}
		parts = append(parts, p)
		return true
	})
	if !ok || isNull || d.Peek() != 0 {
		return nil, false
	}
	return parts, true
}
