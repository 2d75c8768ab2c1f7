package openai

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/svc-gateway/svc/pkg/jsonread"
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
	d := jsonReader{jsonread.New(body)}
	seenUsage, seenError := false, false
	ok := d.Object(func(key []byte) bool {
		switch string(key) {
		case "usage":
			if seenUsage {
				return false
			}
			seenUsage = true
			if d.Null() {
				return true
			}
			a.Usage = new(usageJSON)
			return d.usage(a.Usage)
		case "error":
			if seenError {
				return false
			}
			seenError = true
			return d.Raw(&a.Error)
		}
		if strings.EqualFold(string(key), "usage") || strings.EqualFold(string(key), "error") {
			return false // encoding/json would read it as the field
		}
		return d.Skip()
	})
	return a, ok
}

// usage reads a usage object. A repeated count is read again, the last
// kept, as encoding/json does.
func (d *jsonReader) usage(u *usageJSON) bool {
	return d.Object(func(key []byte) bool {
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
			if d.Null() {
				return true
			}
			return d.Object(func(key []byte) bool {
				if string(key) == "cached_tokens" {
					return d.float(&u.PromptTokensDetails.CachedTokens)
				}
				if strings.EqualFold(string(key), "cached_tokens") {
					return false
				}
				return d.Skip()
			})
		}
		for _, f := range usageFields {
			if strings.EqualFold(string(key), f) {
				return false // encoding/json would read it as the field
			}
		}
		return d.Skip()
	})
}

// usageFields are usageJSON's keys.
var usageFields = []string{"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens",
	"cache_creation_input_tokens", "prompt_tokens_details"}

// jsonReader reads a document json.Valid passed.
type jsonReader struct {
	jsonread.Reader
}

// float reads a number into *dst; null leaves it.
func (d *jsonReader) float(dst *float64) bool {
	if d.Null() {
		return true
	}
	f, ok := d.Float()
	if ok {
		*dst = f
	}
	return ok
}
