package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/strictjson"
)

// Request is a validated Responses request.
type Request struct {
	Model              string
	Stream             bool
	PreviousResponseID string
	// References are the ids of the item_reference input items, in order;
	// the caller resolves them (Request.Chat takes what they stand for).
	References []string

	w     wireRequest
	items []wireItem
	tools []json.RawMessage // as sent, echoed
	// translated parts of the chat request
	chatTools      []chatTool
	toolChoice     json.RawMessage
	responseFormat json.RawMessage
	format         json.RawMessage // text.format, echoed
	inputFrom      int             // the chat message the input begins at, once Chat ran
}

// wireRequest is what svc reads of a Responses request. Fields it does not
// know are ignored, as their chat counterparts do not exist.
type wireRequest struct {
	Model        *string           `json:"model"`
	Input        json.RawMessage   `json:"input"`
	Instructions json.RawMessage   `json:"instructions"`
	Tools        []json.RawMessage `json:"tools"`
	ToolChoice   json.RawMessage   `json:"tool_choice"`
	Text         *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
	Store              *bool             `json:"store"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Stream             *bool             `json:"stream"`
	Background         *bool             `json:"background"`
	// Conversation and Prompt name what OpenAI keeps and svc does not:
	// a request naming one is refused rather than answered without it.
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
	Reasoning    *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
}

// wireItem is one input item. A message may come without a type.
type wireItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatToolSpec `json:"function"`
}

type chatToolSpec struct {
	Name        string          `json:"name"`
	Description *string         `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type wireFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

type inputPart struct {
	Type     string  `json:"type"`
	Text     string  `json:"text"`
	Refusal  string  `json:"refusal"`
	ImageURL *string `json:"image_url"`
	Detail   string  `json:"detail"`
	FileID   *string `json:"file_id"`
	FileData *string `json:"file_data"`
	Filename *string `json:"filename"`
}

// absent says whether a field was left out or sent as null.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// invalid is a validation error in the provider's shape, as the gateway's.
func invalid(param, format string, args ...any) error {
	e := errs.Invalidf(param, format, args...)
	e.Code = "invalid_request_error"
	if param != "" {
		e.Code = "invalid_value"
	}
	return e
}

var inputRoles = map[string]bool{"user": true, "system": true, "developer": true, "assistant": true}

// Parse validates a Responses request body.
func Parse(body []byte) (*Request, error) {
	var w wireRequest
	if err := strictjson.Check(body, &w, strictjson.AllowUnknown); err != nil {
		var k *strictjson.KeyError
		if errors.As(err, &k) {
			return nil, invalid(k.Param(), "Invalid body: %s.", k.Error())
		}
	}
	if err := json.Unmarshal(body, &w); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			want := strictjson.TypeWords(typeErr.Type)
			if typeErr.Field == "metadata" { // a value of it, not the field, had the wrong type
				want = "an object whose values are strings"
			}
			return nil, invalid(typeErr.Field, "Invalid type for '%s': expected %s.", typeErr.Field, want)
		}
		return nil, invalid("", "We could not parse the JSON body of your request. The body must be a JSON object.")
	}
	r := &Request{w: w}
	switch {
	case w.Model == nil:
		return nil, invalid("model", "Missing required parameter: 'model'.")
	case strings.TrimSpace(*w.Model) == "" || len(*w.Model) > 256:
		return nil, invalid("model", "Invalid value for 'model': expected a model name.")
	case w.Background != nil && *w.Background:
		return nil, invalid("background", "svc does not run responses in the background; send 'background': false.")
	case !absent(w.Conversation):
		return nil, invalid("conversation", "svc keeps no conversations: send the earlier turns in 'input', or continue a stored response with 'previous_response_id'.")
	case !absent(w.Prompt):
		return nil, invalid("prompt", "svc keeps no prompt templates: send the instructions and input themselves.")
	}
	r.Model = *w.Model
	r.Stream = w.Stream != nil && *w.Stream
	if p := w.PreviousResponseID; p != nil {
		r.PreviousResponseID = *p
	}
	if err := r.parseInput(); err != nil {
		return nil, err
	}
	if m := w.MaxOutputTokens; m != nil && *m < 1 {
		return nil, invalid("max_output_tokens", "Invalid 'max_output_tokens': must be at least 1.")
	}
	if err := r.parseTools(); err != nil {
		return nil, err
	}
	if err := r.parseToolChoice(); err != nil {
		return nil, err
	}
	if err := r.parseFormat(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Request) parseInput() error {
	raw := r.w.Input
	switch {
	case absent(raw):
		if r.PreviousResponseID == "" {
			return invalid("input", "Missing required parameter: 'input'.")
		}
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return invalid("input", "Invalid 'input': expected a string or an array of input items.")
		}
		c, _ := json.Marshal(s)
		r.items = []wireItem{{Type: "message", Role: "user", Content: c}}
	case raw[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return invalid("input", "Invalid 'input': expected a string or an array of input items.")
		}
		r.items = make([]wireItem, len(items))
		for i, item := range items {
			if err := json.Unmarshal(item, &r.items[i]); err != nil {
				// Name the item, and its field when the item is an object
				// with a field of the wrong type.
				param := fmt.Sprintf("input[%d]", i)
				var typeErr *json.UnmarshalTypeError
				if errors.As(err, &typeErr) && typeErr.Field != "" {
					param += "." + typeErr.Field
					return invalid(param, "Invalid type for '%s': expected %s.", param, strictjson.TypeWords(typeErr.Type))
				}
				return invalid(param, "Invalid '%s': expected an input item (an object).", param)
			}
		}
	default:
		return invalid("input", "Invalid 'input': expected a string or an array of input items.")
	}
	if len(r.items) == 0 && r.PreviousResponseID == "" {
		return invalid("input", "Invalid 'input': empty array. Expected an array with minimum length 1.")
	}
	for i := range r.items {
		it := &r.items[i]
		if it.Type == "" {
			switch {
			case it.Role != "":
				it.Type = "message"
			case it.ID != "":
				it.Type = "item_reference"
			}
		}
		switch it.Type {
		case "message":
			if !inputRoles[it.Role] {
				return invalid(fmt.Sprintf("input[%d].role", i), "Invalid value for 'input[%d].role': expected one of user, system, developer, assistant.", i)
			}
			if absent(it.Content) {
				return invalid(fmt.Sprintf("input[%d].content", i), "Missing required parameter: 'input[%d].content'.", i)
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return invalid(fmt.Sprintf("input[%d]", i), "Invalid 'input[%d]': a function_call needs 'call_id' and 'name'.", i)
			}
		case "function_call_output":
			if it.CallID == "" || len(it.Output) == 0 {
				return invalid(fmt.Sprintf("input[%d]", i), "Invalid 'input[%d]': a function_call_output needs 'call_id' and 'output'.", i)
			}
		case "item_reference":
			if it.ID == "" {
				return invalid(fmt.Sprintf("input[%d].id", i), "Missing required parameter: 'input[%d].id'.", i)
			}
			r.References = append(r.References, it.ID)
		case "reasoning":
			// svc's answers carry no reasoning items; one sent back is
			// dropped, as chat has no place for it.
		default:
			return invalid(fmt.Sprintf("input[%d].type", i), "Invalid value for 'input[%d].type': svc accepts message, function_call, function_call_output and item_reference items.", i)
		}
	}
	return nil
}

func (r *Request) parseTools() error {
	r.tools = make([]json.RawMessage, 0, len(r.w.Tools))
	for i, raw := range r.w.Tools {
		var t wireTool
		if err := json.Unmarshal(raw, &t); err != nil {
			return invalid(fmt.Sprintf("tools[%d]", i), "Invalid 'tools[%d]': expected an object.", i)
		}
		if t.Type != "function" {
			return invalid(fmt.Sprintf("tools[%d].type", i), "Invalid value for 'tools[%d].type': svc serves function tools only.", i)
		}
		if t.Name == "" {
			return invalid(fmt.Sprintf("tools[%d].name", i), "Missing required parameter: 'tools[%d].name'.", i)
		}
		r.chatTools = append(r.chatTools, chatTool{Type: "function", Function: chatToolSpec{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
		// Echoed in the response as a stored one rebuilds it, every field
		// present: the answer and a later GET agree. (What was just read
		// as JSON writes as JSON.)
		flat, _ := json.Marshal(t)
		r.tools = append(r.tools, flat)
	}
	return nil
}

func (r *Request) parseToolChoice() error {
	raw := r.w.ToolChoice
	if absent(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "auto" && s != "none" && s != "required" {
			return invalid("tool_choice", "Invalid value for 'tool_choice': expected 'auto', 'none', 'required' or a function.")
		}
		r.toolChoice = raw
		return nil
	}
	var f struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Type != "function" || f.Name == "" {
		return invalid("tool_choice", "Invalid value for 'tool_choice': svc accepts 'auto', 'none', 'required' or {\"type\": \"function\", \"name\": ...}.")
	}
	r.toolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": f.Name}})
	return nil
}

func (r *Request) parseFormat() error {
	r.format = json.RawMessage(`{"type":"text"}`)
	if r.w.Text == nil || absent(r.w.Text.Format) {
		return nil
	}
	var f wireFormat
	if err := json.Unmarshal(r.w.Text.Format, &f); err != nil {
		return invalid("text.format", "Invalid 'text.format': expected an object.")
	}
	switch f.Type {
	case "text":
	case "json_object":
		r.responseFormat = json.RawMessage(`{"type":"json_object"}`)
	case "json_schema":
		if f.Name == "" {
			return invalid("text.format.name", "Missing required parameter: 'text.format.name'.")
		}
		if len(f.Schema) == 0 || f.Schema[0] != '{' {
			return invalid("text.format.schema", "Missing required parameter: 'text.format.schema'.")
		}
		r.responseFormat, _ = json.Marshal(map[string]any{"type": "json_schema", "json_schema": chatSchema{
			Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}})
	default:
		return invalid("text.format.type", "Invalid value for 'text.format.type': expected one of 'text', 'json_object', 'json_schema'.")
	}
	r.format = r.w.Text.Format
	return nil
}

// chatSchema is chat's json_schema object.
type chatSchema struct {
	Name        string          `json:"name"`
	Description *string         `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict,omitempty"`
}

// chatRequest is the chat-completions request a Responses request becomes.
type chatRequest struct {
	Model             string            `json:"model"`
	Messages          []json.RawMessage `json:"messages"`
	Tools             []chatTool        `json:"tools,omitempty"`
	ToolChoice        json.RawMessage   `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    json.RawMessage   `json:"response_format,omitempty"`
	MaxTokens         *int              `json:"max_tokens,omitempty"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	User              *string           `json:"user,omitempty"`
	ReasoningEffort   *string           `json:"reasoning_effort,omitempty"`
	Stream            bool              `json:"stream,omitempty"`
	StreamOptions     *includeUsage     `json:"stream_options,omitempty"`
}

type includeUsage struct {
	IncludeUsage bool `json:"include_usage"`
}

// Chat is the chat-completions body the request becomes: history (the
// messages of previous_response_id's conversation, when given) first, its
// leading system messages replaced by the instructions when there are
// any, then the input items in order, each item_reference replaced by the
// output item refs holds for its id.
func (r *Request) Chat(history []json.RawMessage, refs map[string]Item) ([]byte, error) {
	var msgs []json.RawMessage
	if instr := r.w.Instructions; !absent(instr) {
		m, err := r.instructions()
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m...)
		for len(history) > 0 && isSystem(history[0]) {
			history = history[1:]
		}
	}
	msgs = append(msgs, history...)
	r.inputFrom = len(msgs)
	var b builder
	for i, it := range r.items {
		if it.Type == "item_reference" {
			ref, ok := refs[it.ID]
			if !ok {
				return nil, invalid(fmt.Sprintf("input[%d].id", i), "Item with id '%.64s' not found.", it.ID)
			}
			it = ref.input()
		}
		if err := b.add(i, it); err != nil {
			return nil, err
		}
	}
	for _, m := range b.msgs {
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, raw)
	}
	if len(msgs) == 0 {
		return nil, invalid("input", "Invalid 'input': the conversation is empty.")
	}
	c := chatRequest{Model: r.Model, Messages: msgs, Tools: r.chatTools, ToolChoice: r.toolChoice,
		ResponseFormat: r.responseFormat, MaxTokens: r.w.MaxOutputTokens, Temperature: r.w.Temperature,
		TopP: r.w.TopP, User: r.w.User, Stream: r.Stream}
	if len(r.chatTools) > 0 {
		c.ParallelToolCalls = r.w.ParallelToolCalls // chat refuses it without tools
	}
	if e := r.w.Reasoning; e != nil {
		c.ReasoningEffort = e.Effort
	}
	if r.Stream {
		c.StreamOptions = &includeUsage{IncludeUsage: true}
	}
	return json.Marshal(c)
}

func (r *Request) instructions() ([]json.RawMessage, error) {
	raw := r.w.Instructions
	if raw[0] == '"' {
		m, err := json.Marshal(chatMessage{Role: "system", Content: raw})
		return []json.RawMessage{m}, err
	}
	var items []wireItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid("instructions", "Invalid 'instructions': expected a string or an array of messages.")
	}
	var b builder
	for i, it := range items {
		if it.Role == "" || !inputRoles[it.Role] || len(it.Content) == 0 {
			return nil, invalid("instructions", "Invalid 'instructions[%d]': expected a message.", i)
		}
		if err := b.add(i, it); err != nil {
			return nil, err
		}
	}
	out := make([]json.RawMessage, len(b.msgs))
	for i, m := range b.msgs {
		out[i], _ = json.Marshal(m)
	}
	return out, nil
}

func isSystem(raw json.RawMessage) bool {
	var m struct {
		Role string `json:"role"`
	}
	return json.Unmarshal(raw, &m) == nil && (m.Role == "system" || m.Role == "developer")
}

// input is an output item as the input item that repeats it.
func (it Item) input() wireItem {
	if it.Type == "function_call" {
		return wireItem{Type: "function_call", CallID: it.CallID, Name: it.Name, Arguments: it.Arguments}
	}
	var text strings.Builder
	for _, p := range it.Content {
		if p.Text != nil {
			text.WriteString(*p.Text)
		}
	}
	c, _ := json.Marshal(text.String())
	return wireItem{Type: "message", Role: "assistant", Content: c}
}

// builder turns input items into chat messages; consecutive function calls
// join one assistant message, as chat wants them.
type builder struct {
	msgs []chatMessage
}

func (b *builder) add(i int, it wireItem) error {
	switch it.Type {
	case "message":
		m, err := message(i, it)
		if err != nil {
			return err
		}
		b.msgs = append(b.msgs, m)
	case "function_call":
		call := chatToolCall{ID: it.CallID, Type: "function", Function: chatFunction{Name: it.Name, Arguments: it.Arguments}}
		if n := len(b.msgs); n > 0 && b.msgs[n-1].Role == "assistant" {
			b.msgs[n-1].ToolCalls = append(b.msgs[n-1].ToolCalls, call)
			return nil
		}
		b.msgs = append(b.msgs, chatMessage{Role: "assistant", ToolCalls: []chatToolCall{call}})
	case "function_call_output":
		out, err := outputText(i, it.Output)
		if err != nil {
			return err
		}
		c, _ := json.Marshal(out)
		b.msgs = append(b.msgs, chatMessage{Role: "tool", Content: c, ToolCallID: it.CallID})
	}
	return nil
}

// outputText is a function_call_output's output: a string, or the text of
// its input_text parts.
func outputText(i int, raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []inputPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(fmt.Sprintf("input[%d].output", i), "Invalid 'input[%d].output': expected a string or an array of input_text parts.", i)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "input_text" {
			return "", invalid(fmt.Sprintf("input[%d].output", i), "Invalid 'input[%d].output': svc passes on text output only.", i)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// message is a message item as a chat message: text, images and files for
// the caller's roles; the text alone for the assistant's.
func message(i int, it wireItem) (chatMessage, error) {
	m := chatMessage{Role: it.Role}
	if it.Content[0] == '"' {
		m.Content = it.Content
		return m, nil
	}
	bad := func(j int, what string) error {
		return invalid(fmt.Sprintf("input[%d].content[%d]", i, j), "Invalid 'input[%d].content[%d]': %s", i, j, what)
	}
	var parts []inputPart
	if err := json.Unmarshal(it.Content, &parts); err != nil {
		return m, invalid(fmt.Sprintf("input[%d].content", i), "Invalid 'input[%d].content': expected a string or an array of content parts.", i)
	}
	if it.Role == "assistant" {
		var text strings.Builder
		for j, p := range parts {
			switch p.Type {
			case "output_text", "input_text", "text":
				text.WriteString(p.Text)
			case "refusal":
				refusal := p.Refusal
				m.Refusal = &refusal
			default:
				return m, bad(j, "an assistant message holds output_text and refusal parts.")
			}
		}
		m.Content, _ = json.Marshal(text.String())
		return m, nil
	}
	out := make([]map[string]any, 0, len(parts))
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, map[string]any{"type": "text", "text": p.Text})
		case "input_image":
			if p.ImageURL == nil {
				return m, bad(j, "svc passes on images given by 'image_url' only.")
			}
			img := map[string]any{"url": *p.ImageURL}
			if p.Detail != "" {
				img["detail"] = p.Detail
			}
			out = append(out, map[string]any{"type": "image_url", "image_url": img})
		case "input_file":
			if p.FileID == nil && p.FileData == nil {
				return m, bad(j, "svc passes on files given by 'file_data' or 'file_id' only.")
			}
			f := map[string]any{}
			for k, v := range map[string]*string{"file_id": p.FileID, "file_data": p.FileData, "filename": p.Filename} {
				if v != nil {
					f[k] = *v
				}
			}
			out = append(out, map[string]any{"type": "file", "file": f})
		default:
			return m, bad(j, "expected an input_text, input_image or input_file part.")
		}
	}
	if len(out) == 1 && out[0]["type"] == "text" {
		m.Content, _ = json.Marshal(out[0]["text"])
	} else {
		m.Content, _ = json.Marshal(out)
	}
	return m, nil
}
