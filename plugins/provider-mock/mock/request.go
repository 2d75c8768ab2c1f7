package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// The subset of a chat-completions request the mock reads. Unknown fields
// are ignored; n gives the number of choices; temperature is read (a wrong
// type is an error, as upstream) but the answer stays deterministic.
type rawRequest struct {
	Model               string          `json:"model"`
	Messages            []rawMessage    `json:"messages"`
	Temperature         *float64        `json:"temperature"`
	ResponseFormat      *rawFormat      `json:"response_format"`
	Tools               []rawTool       `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	N                   *int64          `json:"n"`
}

type rawMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []rawToolCall   `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type rawToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type rawPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type rawFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

type rawTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type formatKind int

const (
	formatText formatKind = iota
	formatJSONObject
	formatJSONSchema
)

type choiceMode int

const (
	choiceAuto choiceMode = iota
	choiceNone
	choiceRequired
	choiceForced
)

// message is one parsed message.
type message struct {
	role       string
	text       string
	images     int
	name       string
	toolCallID string
	toolCalls  []rawToolCall
}

// request is a validated, parsed request.
type request struct {
	model        string
	msgs         []message
	tools        []rawTool
	toolChoice   choiceMode
	forcedTool   string
	format       formatKind
	schema       *schema // json_schema's schema, when format is formatJSONSchema
	maxTokens    int     // 0: no limit
	n            int     // choices, 1 to maxChoices
	promptTokens int
}

// maxChoices is the most choices a request may ask for, as upstream.
const maxChoices = 128

func badRequest(param, code, format string, args ...any) error {
	return &pluginapi.ProviderError{
		Status:  400,
		Type:    "invalid_request_error",
		Code:    code,
		Param:   param,
		Message: fmt.Sprintf(format, args...),
	}
}

var validRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// parseRequest parses and checks body. Every failure is a 400 ProviderError.
func parseRequest(body []byte) (*request, error) {
	var raw rawRequest
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, badRequest("", "invalid_json", "We could not parse the JSON body of your request: %v", err)
	}
	if raw.Model == "" {
		return nil, badRequest("model", "missing_required_parameter", "you must provide a model parameter")
	}
	if len(raw.Messages) == 0 {
		return nil, badRequest("messages", "missing_required_parameter", "messages must be a non-empty array")
	}
	r := &request{model: raw.Model, msgs: make([]message, len(raw.Messages))}
	prompt := tokensReplyPrime
	for i := range raw.Messages {
		m := &raw.Messages[i]
		if !validRoles[m.Role] {
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "invalid_value",
				"messages[%d].role must be one of system, developer, user, assistant, tool", i)
		}
		text, images, err := contentText(m.Content)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("messages[%d].content", i), "invalid_type",
				"messages[%d].content must be a string, an array of content parts or null", i)
		}
		r.msgs[i] = message{role: m.Role, text: text, images: images, name: m.Name, toolCallID: m.ToolCallID, toolCalls: m.ToolCalls}
		prompt += tokensPerMessage + estimateTokens(m.Role) + estimateTokens(text) + images*tokensPerImage
		if m.Name != "" {
			prompt += tokensPerName + estimateTokens(m.Name)
		}
		for _, tc := range m.ToolCalls {
			prompt += tokensPerToolCall + estimateTokens(tc.Function.Name) + estimateJSONTokens(tc.Function.Arguments)
		}
	}

	for i, t := range raw.Tools {
		if t.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "missing_required_parameter",
				"tools[%d].function.name is required", i)
		}
	}
	r.tools = raw.Tools
	if len(r.tools) > 0 {
		prompt += tokensToolsHeader
		for _, t := range r.tools {
			prompt += tokensPerTool + estimateTokens(t.Function.Name) + estimateTokens(t.Function.Description) +
				estimateJSONTokens(string(t.Function.Parameters))
		}
	}
	if err := r.parseToolChoice(raw.ToolChoice); err != nil {
		return nil, err
	}

	if f := raw.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text":
		case "json_object":
			r.format = formatJSONObject
		case "json_schema":
			if f.JSONSchema == nil || len(bytes.TrimSpace(f.JSONSchema.Schema)) == 0 {
				return nil, badRequest("response_format.json_schema", "missing_required_parameter",
					"response_format.json_schema.schema is required when type is json_schema")
			}
			s := new(schema)
			if err := json.Unmarshal(f.JSONSchema.Schema, s); err != nil {
				return nil, badRequest("response_format.json_schema.schema", "invalid_value", "invalid JSON schema: %v", err)
			}
			r.format, r.schema = formatJSONSchema, s
			prompt += tokensSchema + estimateTokens(f.JSONSchema.Name) + estimateJSONTokens(string(f.JSONSchema.Schema))
		default:
			return nil, badRequest("response_format.type", "invalid_value",
				"response_format.type must be one of text, json_object, json_schema")
		}
	}

	limit, param := raw.MaxTokens, "max_tokens"
	if raw.MaxCompletionTokens != nil {
		limit, param = raw.MaxCompletionTokens, "max_completion_tokens"
	}
	if limit != nil {
		if *limit < 1 {
			return nil, badRequest(param, "invalid_value", "%s must be at least 1, got %d", param, *limit)
		}
		if *limit < 1<<30 {
			r.maxTokens = int(*limit)
		}
	}
	r.n = 1
	if raw.N != nil {
		if *raw.N < 1 || *raw.N > maxChoices {
			return nil, badRequest("n", "invalid_value", "Invalid 'n': must be between 1 and %d.", maxChoices)
		}
		r.n = int(*raw.N)
	}
	r.promptTokens = prompt
	return r, nil
}

func (r *request) parseToolChoice(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest("tool_choice", "invalid_value", "invalid tool_choice")
		}
		switch s {
		case "auto":
		case "none":
			r.toolChoice = choiceNone
		case "required":
			r.toolChoice = choiceRequired
		default:
			return badRequest("tool_choice", "invalid_value", "tool_choice must be none, auto, required or a function")
		}
		return nil
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return badRequest("tool_choice", "invalid_value", "invalid tool_choice")
	}
	if obj.Type != "function" || obj.Function.Name == "" {
		return nil // another shape (allowed_tools, ...): treated as auto
	}
	for _, t := range r.tools {
		if t.Function.Name == obj.Function.Name {
			r.toolChoice, r.forcedTool = choiceForced, obj.Function.Name
			return nil
		}
	}
	return badRequest("tool_choice", "invalid_value", "tool_choice names function %q, which is not in tools", obj.Function.Name)
}

// contentText flattens a message content: a string, an array of parts (the
// text parts joined by newlines; images counted), or null.
func contentText(raw json.RawMessage) (string, int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", 0, nil
	}
	switch raw[0] {
	case '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			return string(raw[1 : len(raw)-1]), 0, nil // already validated, no escapes
		}
		var s string
		err := json.Unmarshal(raw, &s)
		return s, 0, err
	case '[':
		var parts []rawPart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", 0, err
		}
		var b strings.Builder
		images := 0
		for _, p := range parts {
			switch p.Type {
			case "text", "input_text", "refusal":
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(p.Text)
			case "image_url", "input_image", "image":
				images++
			}
		}
		return b.String(), images, nil
	}
	return "", 0, fmt.Errorf("content is neither a string nor an array")
}
