package anthropic

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// DefaultMaxTokens is the max_tokens sent when the caller set neither
// max_tokens nor max_completion_tokens: the Messages API requires one.
const DefaultMaxTokens = 4096

// ---- the chat-completions request, as far as it is translated ----

type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	N                   *int64          `json:"n"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	ResponseFormat      *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	User string `json:"user"`

	// Asked for, but not something the Messages API can give: refused
	// rather than silently answered without.
	Logprobs    *bool           `json:"logprobs"`
	TopLogprobs *int64          `json:"top_logprobs"`
	Modalities  []string        `json:"modalities"`
	Audio       json.RawMessage `json:"audio"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"` // an assistant's earlier refusal
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ---- the Messages API request ----

type msgRequest struct {
	Model         string         `json:"model"`
	MaxTokens     int64          `json:"max_tokens"`
	System        string         `json:"system,omitempty"`
	Messages      []msgMessage   `json:"messages"`
	Tools         []msgTool      `json:"tools,omitempty"`
	ToolChoice    *msgToolChoice `json:"tool_choice,omitempty"`
	StopSequences []string       `json:"stop_sequences,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	Metadata      *msgMetadata   `json:"metadata,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
}

type msgMessage struct {
	Role    string     `json:"role"`
	Content []msgBlock `json:"content"`
}

// msgBlock is one content block of a request message: text, image,
// tool_use or tool_result.
type msgBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *imageSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []msgBlock      `json:"content,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"` // base64 | url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type msgTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type msgToolChoice struct {
	Type                   string `json:"type"` // auto | any | tool | none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type msgMetadata struct {
	UserID string `json:"user_id"`
}

var (
	emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)
	emptyInput  = json.RawMessage(`{}`)
)

// imageTypes are the media types the Messages API takes for an image.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// invalid is the 400 a request the translation cannot honour answers with.
func invalid(param, msg string) *pluginapi.ProviderError {
	return &pluginapi.ProviderError{Status: http.StatusBadRequest, Type: typeInvalid, Param: param, Message: msg}
}

// unsupported refuses a valid request that the Messages API has no
// equivalent for: another provider of the call may serve it.
func unsupported(param, msg string) *pluginapi.ProviderError {
	e := invalid(param, msg)
	e.Code = pluginapi.CodeUnsupported
	return e
}

// translate turns a chat-completions request body into a Messages API
// request. A request it cannot honour is a 400 naming the parameter;
// fields it cannot honour but whose absence changes nothing the caller
// relies on (frequency_penalty, seed, logit_bias, store, service_tier …)
// are dropped.
func translate(body []byte, stream bool) (*msgRequest, error) {
	var in chatRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, invalid("", "request body is not a valid chat-completions request: "+typeErrorText(err))
	}
	out := &msgRequest{Model: in.Model, Temperature: in.Temperature, TopP: in.TopP, Stream: stream}
	if in.Model == "" {
		return nil, invalid("model", "model is required")
	}
	if in.N != nil && *in.N > 1 {
		return nil, unsupported("n", "n > 1 is not supported by this provider (Anthropic answers one choice)")
	}
	if in.Logprobs != nil && *in.Logprobs || in.TopLogprobs != nil && *in.TopLogprobs > 0 {
		return nil, unsupported("logprobs", "logprobs are not supported by this provider")
	}
	for _, m := range in.Modalities {
		if m != "text" {
			return nil, unsupported("modalities", "only text output is supported by this provider")
		}
	}
	if !isNull(in.Audio) {
		return nil, unsupported("audio", "audio output is not supported by this provider")
	}
	if in.Temperature != nil && (*in.Temperature < 0 || *in.Temperature > 1) {
		return nil, unsupported("temperature", "temperature must be between 0 and 1 for this provider")
	}
	out.MaxTokens = DefaultMaxTokens
	for _, mt := range []struct {
		v     *int64
		param string
	}{{in.MaxTokens, "max_tokens"}, {in.MaxCompletionTokens, "max_completion_tokens"}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 {
			return nil, invalid(mt.param, mt.param+" must be at least 1")
		}
		out.MaxTokens = *mt.v // max_completion_tokens, the newer name, wins
	}
	if in.User != "" {
		out.Metadata = &msgMetadata{UserID: in.User}
	}
	stops, err := stopSequences(in.Stop)
	if err != nil {
		return nil, err
	}
	out.StopSequences = stops

	var system []string
	for i, m := range in.Messages {
		param := "messages[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case "system", "developer":
			text, err := plainText(m.Content, param+".content")
			if err != nil {
				return nil, err
			}
			if !blank(text) {
				system = append(system, text)
			}
		case "user":
			blocks, err := userBlocks(m.Content, param+".content")
			if err != nil {
				return nil, err
			}
			out.Messages = appendTurn(out.Messages, "user", blocks)
		case "assistant":
			blocks, err := assistantBlocks(m, param)
			if err != nil {
				return nil, err
			}
			out.Messages = appendTurn(out.Messages, "assistant", blocks)
		case "tool":
			if m.ToolCallID == "" {
				return nil, invalid(param+".tool_call_id", "a tool message needs tool_call_id")
			}
			text, err := plainText(m.Content, param+".content")
			if err != nil {
				return nil, err
			}
			res := msgBlock{Type: "tool_result", ToolUseID: toolUseID(m.ToolCallID)}
			if !blank(text) {
				res.Content = []msgBlock{{Type: "text", Text: text}}
			}
			out.Messages = appendTurn(out.Messages, "user", []msgBlock{res})
		default:
			return nil, invalid(param+".role", "unsupported role "+strconv.Quote(m.Role))
		}
	}
	out.Messages = trimPrefill(out.Messages)
	if len(out.Messages) == 0 {
		return nil, invalid("messages", "at least one user or assistant message with text, images or tool calls is required")
	}

	if len(in.Tools) > 0 {
		out.Tools = make([]msgTool, 0, len(in.Tools))
		for i, t := range in.Tools {
			param := "tools[" + strconv.Itoa(i) + "]"
			if t.Type != "function" {
				return nil, unsupported(param+".type", "only function tools are supported by this provider")
			}
			if t.Function.Name == "" {
				return nil, invalid(param+".function.name", "a tool needs a name")
			}
			schema, err := toolSchema(t.Function.Parameters, param+".function.parameters")
			if err != nil {
				return nil, err
			}
			out.Tools = append(out.Tools, msgTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
		}
	}
	choice, err := toolChoice(in.ToolChoice, len(out.Tools) > 0)
	if err != nil {
		return nil, err
	}
	if in.ParallelToolCalls != nil && !*in.ParallelToolCalls && len(out.Tools) > 0 {
		if choice == nil {
			choice = &msgToolChoice{Type: "auto"}
		}
		if choice.Type != "none" {
			choice.DisableParallelToolUse = true
		}
	}
	out.ToolChoice = choice
	if len(out.Tools) == 0 {
		if tools := historyTools(out.Messages); len(tools) > 0 {
			out.Tools, out.ToolChoice = tools, &msgToolChoice{Type: "none"}
		}
	}

	if rf := in.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			system = append(system, jsonInstruction)
		case "json_schema":
			if rf.JSONSchema == nil || isNull(rf.JSONSchema.Schema) {
				return nil, invalid("response_format.json_schema.schema", "json_schema needs a schema")
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, rf.JSONSchema.Schema); err != nil {
				return nil, invalid("response_format.json_schema.schema", "schema is not valid JSON")
			}
			system = append(system, jsonSchemaInstruction+compact.String())
		default:
			return nil, invalid("response_format.type", "unsupported response_format type "+strconv.Quote(rf.Type))
		}
	}
	out.System = strings.Join(system, "\n\n")
	return out, nil
}

// The Messages API has no JSON mode: a response_format becomes an
// instruction at the end of the system prompt. (Forcing a tool whose input
// schema is the wanted schema is the other known technique; it was not
// chosen because it turns the answer into a tool call, which a caller's own
// tools and tool_choice would then collide with, and which streams as
// argument fragments rather than content.)
const (
	jsonInstruction       = "Respond with a single valid JSON object and nothing else: no prose before or after it, no code fences."
	jsonSchemaInstruction = "Respond with a single valid JSON object, and nothing else (no prose before or after it, no code fences), that conforms to this JSON Schema: "
)

// appendTurn adds blocks as a turn of role, merged into the last turn when
// it has the same role: the Messages API wants user and assistant turns to
// alternate, and tool results to come back in one user turn, before any
// text of it (a tool result after a user's text goes before that text).
func appendTurn(turns []msgMessage, role string, blocks []msgBlock) []msgMessage {
	if len(blocks) == 0 {
		return turns
	}
	if n := len(turns); n > 0 && turns[n-1].Role == role {
		content := turns[n-1].Content
		at := len(content)
		if blocks[0].Type == "tool_result" {
			at = 0
			for at < len(content) && content[at].Type == "tool_result" {
				at++
			}
		}
		turns[n-1].Content = slices.Insert(content, at, blocks...)
		return turns
	}
	return append(turns, msgMessage{Role: role, Content: blocks})
}

// plainText reads a content that must be text: a string, or text parts
// (joined with "\n").
func plainText(raw json.RawMessage, param string) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", invalid(param, "content must be a string or an array of parts")
		}
		return s, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(param, "content must be a string or an array of parts")
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "refusal": // what the assistant said, for the record of the conversation
			texts = append(texts, p.Refusal)
		default:
			return "", invalid(param+"["+strconv.Itoa(j)+"].type", "only text parts are allowed here")
		}
	}
	return strings.Join(texts, "\n"), nil
}

// userBlocks reads a user message's content: a string, or text and
// image_url parts.
func userBlocks(raw json.RawMessage, param string) ([]msgBlock, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid(param, "content must be a string or an array of parts")
		}
		if blank(s) {
			return nil, nil
		}
		return []msgBlock{{Type: "text", Text: s}}, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, invalid(param, "content must be a string or an array of parts")
	}
	blocks := make([]msgBlock, 0, len(parts))
	for j, p := range parts {
		pp := param + "[" + strconv.Itoa(j) + "]"
		switch p.Type {
		case "text":
			if !blank(p.Text) {
				blocks = append(blocks, msgBlock{Type: "text", Text: p.Text})
			}
		case "image_url":
			if p.ImageURL == nil {
				return nil, invalid(pp+".image_url", "image_url needs a url")
			}
			src, err := imageSourceOf(p.ImageURL.URL, pp+".image_url.url")
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, msgBlock{Type: "image", Source: src})
		default:
			return nil, unsupported(pp+".type", "unsupported content part type "+strconv.Quote(p.Type))
		}
	}
	return blocks, nil
}

// imageSourceOf turns an image_url into an image source: an http(s) URL
// as a url source, a base64 data: URL as a base64 source.
func imageSourceOf(u, param string) (*imageSource, error) {
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return &imageSource{Type: "url", URL: u}, nil
	}
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return nil, invalid(param, "an image must be an http(s) URL or a base64 data: URL")
	}
	meta, data, ok := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 || data == "" {
		return nil, invalid(param, "a data: URL image must be base64 (data:image/png;base64,…)")
	}
	mediaType = strings.ToLower(mediaType)
	if !imageTypes[mediaType] {
		return nil, invalid(param, "image media type must be image/jpeg, image/png, image/gif or image/webp")
	}
	return &imageSource{Type: "base64", MediaType: mediaType, Data: data}, nil
}

// assistantBlocks reads an assistant message: its text, then its tool
// calls as tool_use blocks.
func assistantBlocks(m chatMessage, param string) ([]msgBlock, error) {
	text, err := plainText(m.Content, param+".content")
	if err != nil {
		return nil, err
	}
	blocks := make([]msgBlock, 0, 1+len(m.ToolCalls))
	if !blank(text) {
		blocks = append(blocks, msgBlock{Type: "text", Text: text})
	}
	for j, tc := range m.ToolCalls {
		pp := param + ".tool_calls[" + strconv.Itoa(j) + "]"
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, invalid(pp, "a tool call needs an id and a function name")
		}
		input := emptyInput
		if args := strings.TrimSpace(tc.Function.Arguments); args != "" {
			if !isObject([]byte(args)) || !json.Valid([]byte(args)) {
				return nil, invalid(pp+".function.arguments", "arguments must be a JSON object")
			}
			input = json.RawMessage(args)
		}
		blocks = append(blocks, msgBlock{Type: "tool_use", ID: toolUseID(tc.ID), Name: tc.Function.Name, Input: input})
	}
	return blocks, nil
}

// blank says whether text has nothing but white space: the Messages API
// refuses a text block without a visible character, so such text is
// dropped, as empty text is.
func blank(text string) bool { return strings.TrimSpace(text) == "" }

// toolUseID is the id a tool call goes to the Messages API with, which
// takes only letters, digits, "_" and "-": other providers' ids (such as
// "functions.get_weather:0"), met in a history that crossed providers,
// have every other byte replaced and a digest of the whole id appended,
// so that two ids stay two. The call and its result are given the same.
func toolUseID(id string) string {
	valid := func(r rune) bool {
		return r == '_' || r == '-' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
	}
	if id != "" && !strings.ContainsFunc(id, func(r rune) bool { return !valid(r) }) {
		return id
	}
	clean := strings.Map(func(r rune) rune {
		if valid(r) {
			return r
		}
		return '_'
	}, id)
	sum := sha256.Sum256([]byte(id))
	return clean + "_" + hex.EncodeToString(sum[:6])
}

// trimPrefill takes the trailing white space off a conversation's last
// turn when it is the assistant's: the Messages API continues such a turn
// (a prefill) and refuses one that ends in white space. Its text is never
// left empty: blank text was dropped before.
func trimPrefill(turns []msgMessage) []msgMessage {
	n := len(turns)
	if n == 0 || turns[n-1].Role != "assistant" {
		return turns
	}
	content := turns[n-1].Content
	last := &content[len(content)-1]
	if last.Type != "text" {
		return turns
	}
	last.Text = strings.TrimRightFunc(last.Text, unicode.IsSpace)
	return turns
}

// stopSequences reads stop: a string or an array of strings.
func stopSequences(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var list []string
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid("stop", "stop must be a string or an array of strings")
		}
		list = []string{s}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, invalid("stop", "stop must be a string or an array of strings")
	}
	out := list[:0]
	for _, s := range list {
		if strings.TrimSpace(s) != "" { // the Messages API refuses blank ones
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// historyTools declares the tools a conversation's earlier turns called,
// for a request that offers none: the Messages API refuses tool_use and
// tool_result blocks unless tools are defined, where Chat Completions
// accepts a history of tool calls without them. Each is declared with an
// open object schema, and the caller's tool_choice gives way to "none":
// the caller offered no tools, so the answer must not call one.
func historyTools(turns []msgMessage) []msgTool {
	var tools []msgTool
	seen := map[string]bool{}
	for _, t := range turns {
		for _, b := range t.Content {
			if b.Type == "tool_use" && !seen[b.Name] {
				seen[b.Name] = true
				tools = append(tools, msgTool{Name: b.Name, InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
			}
		}
	}
	return tools
}

// toolChoice maps tool_choice: "auto" → auto, "required" → any, "none" →
// none, {"type":"function","function":{"name"}} → tool. Without tools it
// is dropped (the Messages API refuses a choice without tools), except a
// named function, which cannot be honoured.
func toolChoice(raw json.RawMessage, haveTools bool) (*msgToolChoice, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c *msgToolChoice
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		switch s {
		case "auto":
			c = &msgToolChoice{Type: "auto"}
		case "required":
			c = &msgToolChoice{Type: "any"}
		case "none":
			c = &msgToolChoice{Type: "none"}
		default:
			return nil, invalid("tool_choice", "tool_choice must be auto, required, none or a function")
		}
	} else {
		var obj struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
			return nil, invalid("tool_choice", "tool_choice must be auto, required, none or a function")
		}
		if !haveTools {
			return nil, invalid("tool_choice", "tool_choice names a function but no tools were given")
		}
		c = &msgToolChoice{Type: "tool", Name: obj.Function.Name}
	}
	if !haveTools {
		return nil, nil
	}
	return c, nil
}

// typeErrorText describes a decoding error without quoting the body.
func typeErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field + " has the wrong type"
	}
	return "malformed JSON"
}

// toolSchema is a tool's parameters as Anthropic's input_schema, which must
// say "type":"object": added when absent (OpenAI takes {} and a schema of
// bare properties), refused when it names another type.
func toolSchema(raw json.RawMessage, param string) (json.RawMessage, error) {
	if isNull(raw) {
		return emptySchema, nil
	}
	var fields map[string]json.RawMessage
	if !isObject(raw) || json.Unmarshal(raw, &fields) != nil {
		return nil, invalid(param, "parameters must be a JSON Schema object")
	}
	typ, ok := fields["type"]
	if !ok {
		fields["type"] = json.RawMessage(`"object"`)
		out, err := json.Marshal(fields)
		if err != nil {
			return nil, invalid(param, "parameters must be a JSON Schema object")
		}
		return out, nil
	}
	var name string
	if json.Unmarshal(typ, &name) != nil || name != "object" {
		return nil, invalid(param, `parameters must be a schema of "type": "object"`)
	}
	return raw, nil
}
