package openai

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// answerJSON is what svc reads of a completion: its usage, and an error
// some servers send with a 200.
type answerJSON struct {
	Usage *usageJSON      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// readAnswer reads a completion body as json.Unmarshal reads it into an
// answerJSON, when the body is a JSON object. ok is false when it is not:
// not JSON, or not an object, or a member of another type than its
// field's (which costs the usage only).
//
// Reflection and encoding/json's second pass over the choices cost more
// than the rest of the attempt on a cold CPU, so the shapes servers send
// are read here: a validity check, then one pass that skips what is not
// read. Anything else (an escaped key, a key in another case or repeated,
// a count that is no plain number) is left to json.Unmarshal. A
// differential test and a fuzz target hold the two together.
func readAnswer(body []byte) (a answerJSON, ok bool) {
	if !isObject(body) {
		return a, false
	}
	if fast, done := readAnswerFast(body); done {
		return fast, true
	}
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(body, &a); err != nil && !errors.As(err, &typeErr) {
		return answerJSON{}, false
	}
	return a, true
}

// readAnswerFast is readAnswer's own reading; done is false when
// json.Unmarshal must read the body.
func readAnswerFast(body []byte) (a answerJSON, done bool) {
	if !json.Valid(body) {
		return a, false
	}
	d := jsonReader{src: body}
	seenUsage, seenError := false, false
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "usage":
			if seenUsage {
				return false
			}
			seenUsage = true
			if d.null() {
				return true
			}
			a.Usage = new(usageJSON)
			return d.usage(a.Usage)
		case "error":
			if seenError {
				return false
			}
			seenError = true
			return d.raw(&a.Error)
		}
		if strings.EqualFold(string(key), "usage") || strings.EqualFold(string(key), "error") {
			return false // encoding/json would read it as the field
		}
		return d.skip()
	})
	return a, ok
}

// usage reads a usage object. A repeated count is read again, the last
// kept, as encoding/json does.
func (d *jsonReader) usage(u *usageJSON) bool {
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return d.float(&u.PromptTokens)
		case "completion_tokens":
			return d.float(&u.CompletionTokens)
		case "total_tokens":
			return d.float(&u.TotalTokens)
		case "input_tokens":
			return d.float(&u.InputTokens)
		case "output_tokens":
			return d.float(&u.OutputTokens)
		case "cache_creation_input_tokens":
			return d.float(&u.CacheCreationInputTokens)
		case "prompt_tokens_details":
			if d.null() {
				return true
			}
			return d.object(func(key []byte) bool {
				if string(key) == "cached_tokens" {
					return d.float(&u.PromptTokensDetails.CachedTokens)
				}
				if strings.EqualFold(string(key), "cached_tokens") {
					return false
				}
				return d.skip()
			})
		}
		for _, f := range usageFields {
			if strings.EqualFold(string(key), f) {
				return false // encoding/json would read it as the field
			}
		}
		return d.skip()
	})
}

// usageFields are usageJSON's keys.
var usageFields = []string{"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens",
	"cache_creation_input_tokens", "prompt_tokens_details"}

// jsonReader reads a document json.Valid passed.
type jsonReader struct {
	src []byte
	i   int
}

// peek is the next byte after white space, 0 at the end.
func (d *jsonReader) peek() byte {
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
func (d *jsonReader) eat(c byte) bool {
	if d.peek() != c {
		return false
	}
	d.i++
	return true
}

// token is the string, number or literal at d.i (past white space), as
// written.
func (d *jsonReader) token() []byte {
	start := d.i
	if d.i < len(d.src) && d.src[d.i] == '"' {
		for d.i++; d.i < len(d.src); d.i++ {
			switch d.src[d.i] {
			case '\\':
				d.i++
			case '"':
				d.i++
				return d.src[start:d.i]
			}
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

// skip passes over one value.
func (d *jsonReader) skip() bool {
	switch d.peek() {
	case '{', '[':
		depth := 0
		for d.i < len(d.src) {
			switch d.src[d.i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
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
func (d *jsonReader) raw(dst *json.RawMessage) bool {
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

// object reads an object's members with member, given each key, which
// must be written without escapes.
func (d *jsonReader) object(member func(key []byte) bool) bool {
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
			return false
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

// null consumes a null.
func (d *jsonReader) null() bool {
	if d.peek() != 'n' || len(d.src)-d.i < 4 || string(d.src[d.i:d.i+4]) != "null" {
		return false
	}
	d.i += 4
	return true
}

// float reads a number into *dst; null leaves it.
func (d *jsonReader) float(dst *float64) bool {
	if d.null() {
		return true
	}
	if c := d.peek(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	f, err := strconv.ParseFloat(string(d.token()), 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}
