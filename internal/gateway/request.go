package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/strictjson"
)

// Request is a validated chat-completions request: the body as the client
// sent it, and the parts svc reasons about.
type Request struct {
	Body []byte
	// Canonical is Body in canonical form without stream and
	// stream_options: what identifies the request for the exact cache and
	// approvals.
	Canonical    []byte
	Model        string
	Stream       bool
	IncludeUsage bool // the client asked for usage in the stream
	Messages     []Message
	Temperature  *float64
	// MaxTokens is max_completion_tokens, else max_tokens; 0 when unset.
	MaxTokens int
	N         int      // choices asked for; 0 when unset
	Tools     []string // names of the offered functions
	// ResponseFormat is response_format.type, empty when absent.
	ResponseFormat string
	// Unlearnable says why no learned artifact may answer the request, or
	// is empty (see shape.Unlearnable).
	Unlearnable string
	// Origin is JSON the caller keeps with the run in its request.received
	// event: what a request translated to chat said that its chat body does
	// not (a Responses request's instructions and metadata, say). Nil for
	// none. It never reaches the provider.
	Origin json.RawMessage
}

// Message is one chat message, its content flattened to text: the type
// policies see, so that no copy is made for them.
type Message = policy.Message

// wireRequest is what svc reads of a request; every other field passes
// through to the provider untouched.
type wireRequest struct {
	Model               *string         `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	N                   *int            `json:"n"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	ResponseFormat      *responseFormat `json:"response_format"`
	Tools               []wireTool      `json:"tools"`
	Functions           json.RawMessage `json:"functions"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	Logprobs            *bool           `json:"logprobs"`
}

type wireMessage struct {
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
}

type streamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
}

type responseFormat struct {
	Type string `json:"type"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// invalid is a validation error in the provider's shape.
func invalid(param, format string, args ...any) error {
	e := errs.Invalidf(param, format, args...)
	e.Code = "invalid_request_error"
	if param != "" {
		e.Code = "invalid_value"
	}
	return e
}

// ParseRequest validates a chat-completions body the way the provider
// would, answering in the provider's terms. Keys must be spelled as the
// provider reads them: Go matches keys without regard to letter case and
// keeps the last of repeated ones, so a key spelled twice, or a field's name
// in another case, could let policies see one value and the provider
// another; such a body is refused. Other keys pass through untouched.
func ParseRequest(body []byte) (*Request, error) {
	var w wireRequest
	readFast := func() bool {
		if readWire(body, &w) {
			return true
		}
		w = wireRequest{} // what it read before it gave up
		return false
	}
	if err := decodeWire(body, &w, readFast); err != nil {
		return nil, err
	}
	canonical, err := cache.CanonicalRequest(body)
	if err != nil {
		return nil, invalid("", "We could not parse the JSON body of your request. The body must be a JSON object.")
	}
	r := &Request{Body: body, Canonical: canonical}
	switch {
	case w.Model == nil:
		return nil, invalid("model", "Missing required parameter: 'model'.")
	case strings.TrimSpace(*w.Model) == "" || len(*w.Model) > 256:
		return nil, invalid("model", "Invalid value for 'model': expected a model name.")
	case w.Messages == nil:
		return nil, invalid("messages", "Missing required parameter: 'messages'.")
	case len(w.Messages) == 0:
		return nil, invalid("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.")
	}
	r.Model = *w.Model
	r.Messages = make([]Message, len(w.Messages))
	nonText := false
	for i, m := range w.Messages {
		msg, err := parseMessage(i, m, &nonText)
		if err != nil {
			return nil, err
		}
		r.Messages[i] = msg
	}
	if t := w.Temperature; t != nil {
		if *t < 0 || *t > 2 {
			return nil, invalid("temperature", "Invalid 'temperature': must be between 0 and 2.")
		}
		r.Temperature = t
	}
	if p := w.TopP; p != nil && (*p < 0 || *p > 1) {
		return nil, invalid("top_p", "Invalid 'top_p': must be between 0 and 1.")
	}
	if n := w.N; n != nil {
		if *n < 1 || *n > 128 {
			return nil, invalid("n", "Invalid 'n': must be between 1 and 128.")
		}
		r.N = *n
	}
	if m := w.MaxTokens; m != nil && *m < 1 {
		return nil, invalid("max_tokens", "Invalid 'max_tokens': must be at least 1.")
	}
	if m := w.MaxCompletionTokens; m != nil && *m < 1 {
		return nil, invalid("max_completion_tokens", "Invalid 'max_completion_tokens': must be at least 1.")
	}
	switch {
	case w.MaxCompletionTokens != nil:
		r.MaxTokens = *w.MaxCompletionTokens
	case w.MaxTokens != nil:
		r.MaxTokens = *w.MaxTokens
	}
	r.Stream = w.Stream != nil && *w.Stream
	if w.StreamOptions != nil {
		if !r.Stream {
			return nil, invalid("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		r.IncludeUsage = w.StreamOptions.IncludeUsage != nil && *w.StreamOptions.IncludeUsage
	}
	if f := w.ResponseFormat; f != nil {
		switch f.Type {
		case "text", "json_object", "json_schema":
			r.ResponseFormat = f.Type
		default:
			return nil, invalid("response_format.type", "Invalid 'response_format.type': expected one of 'text', 'json_object', 'json_schema'.")
		}
	}
	for i, t := range w.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return nil, invalid("tools", "Invalid 'tools[%d]': expected a function tool with a name.", i)
		}
		r.Tools = append(r.Tools, t.Function.Name)
	}
	choice := ""
	if len(w.ToolChoice) > 0 && json.Unmarshal(w.ToolChoice, &choice) != nil {
		choice = "forced" // an object naming a function
	}
	r.Unlearnable = shape.Unlearnable(nonText, len(w.Functions) > 0 && string(w.Functions) != "null", choice,
		r.ResponseFormat, r.N, w.Logprobs != nil && *w.Logprobs)
	return r, nil
}

// parseMessage reads one message; nonText is set when its content has
// parts other than text.
func parseMessage(i int, m wireMessage, nonText *bool) (Message, error) {
	if m.Role == nil {
		return Message{}, invalid("messages", "Missing required parameter: 'messages[%d].role'.", i)
	}
	if !roles[*m.Role] {
		return Message{}, invalid("messages", "Invalid value for 'messages[%d].role': '%.40s' is not one of system, developer, user, assistant, tool.", i, *m.Role)
	}
	msg := Message{Role: *m.Role}
	raw := m.Content
	switch {
	case len(raw) == 0 || string(raw) == "null":
		if msg.Role != "assistant" {
			return Message{}, invalid("messages", "Missing required parameter: 'messages[%d].content'.", i)
		}
	case raw[0] == '"':
		if text, ok := plainString(raw); ok {
			msg.Content = text
			break
		}
		if err := json.Unmarshal(raw, &msg.Content); err != nil {
			return Message{}, invalid("messages", "Invalid 'messages[%d].content': expected a string.", i)
		}
	case raw[0] == '[':
		parts, ok := readParts(raw)
		if !ok {
			if err := strictjson.Check(raw, &parts, strictjson.AllowUnknown); err != nil {
				if err := keysError(err, fmt.Sprintf("messages[%d].content", i)); err != nil {
					return Message{}, err
				}
			}
			if err := json.Unmarshal(raw, &parts); err != nil {
				return Message{}, invalid("messages", "Invalid 'messages[%d].content': expected a string or an array of content parts.", i)
			}
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type != "text" {
				*nonText = true
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
		msg.Content = b.String()
	default:
		return Message{}, invalid("messages", "Invalid 'messages[%d].content': expected a string or an array of content parts.", i)
	}
	return msg, nil
}

// plainString is the text of a JSON string that has no escapes, no control
// characters and only valid UTF-8, which is its bytes between the quotes:
// what json.Unmarshal would make of it, without decoding it again (the
// body was checked whole before). ok is false for any other string.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

// keysError is a key strictjson refused in a value found at path, in the
// provider's terms; nil for a body that is not JSON, which the decoding
// after it explains.
func keysError(err error, path string) error {
	var k *strictjson.KeyError
	if !errors.As(err, &k) {
		return nil
	}
	k.Path = path + k.Path
	switch {
	case k.Problem == strictjson.CaseVariant:
		return invalid(k.Param(), "Unrecognized request argument supplied: '%.40s'. Keys are matched exactly; did you mean '%s'?", k.Key, k.Other)
	case k.Key != k.Other:
		return invalid(k.Param(), "Invalid body: the key '%.40s' appears in more than one letter case.", k.Key)
	}
	return invalid(k.Param(), "Invalid body: the key '%.40s' appears more than once.", k.Key)
}

// exactKey is the request's key in the exact cache.
func (r *Request) exactKey(tenantID, app, subject string) (string, error) {
	if r.Canonical == nil {
		return cache.ExactKey(tenantID, app, subject, r.Body)
	}
	return cache.ExactKeyOf(tenantID, app, subject, r.Canonical), nil
}

// decodeWire reads a provider-style request body into w, the wire struct of
// its endpoint: its keys checked first (see ParseRequest), then decoded,
// each failure answered in the provider's terms. readFast, when not nil,
// decodes a body whose keys passed without reflection, or reports false,
// w left as it was, for json.Unmarshal to decode it.
func decodeWire(body []byte, w any, readFast func() bool) error {
	err := strictjson.Check(body, w, strictjson.AllowUnknown)
	if err == nil && readFast != nil && readFast() {
		return nil
	}
	if err := keysError(err, ""); err != nil {
		return err
	}
	if err := json.Unmarshal(body, w); err != nil {
		return wireError(err)
	}
	return nil
}

// wireError is json.Unmarshal's error on a request body in the provider's
// terms.
func wireError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return invalid(typeErr.Field, "Invalid type for '%s': expected %s.", typeErr.Field, strictjson.TypeWords(typeErr.Type))
	}
	return invalid("", "We could not parse the JSON body of your request. The body must be a JSON object.")
}
