package responses

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Origin is what a Responses request says that the chat request it became
// does not keep apart: the instructions and metadata as given,
// previous_response_id and store, and where the request's own input begins
// among the chat messages (after the instructions and the earlier
// conversation). It is kept with the run, so that the response and its
// input items read back as they were asked for.
type Origin struct {
	Instructions       json.RawMessage   `json:"instructions,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	PreviousResponseID *string           `json:"previous_response_id,omitempty"`
	Store              *bool             `json:"store,omitempty"`
	// InputFrom is the index of the first chat message the input made.
	InputFrom int `json:"input_from,omitempty"`
}

// Origin is the request's Origin as JSON, once Chat has made its chat
// request; nil when there is nothing a stored run would not say itself.
func (r *Request) Origin() json.RawMessage {
	o := Origin{Metadata: r.w.Metadata, PreviousResponseID: r.w.PreviousResponseID, Store: r.w.Store, InputFrom: r.inputFrom}
	if instr := r.w.Instructions; !absent(instr) {
		o.Instructions = instr
	}
	if o.Instructions == nil && len(o.Metadata) == 0 && o.PreviousResponseID == nil && o.Store == nil && o.InputFrom == 0 {
		return nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil // the parts were read from JSON: they write back
	}
	return b
}

// CheckOrigin reports whether a stored origin reads back; one that does not
// is left out (readOrigin), the response served without it.
func CheckOrigin(raw []byte) error {
	var o Origin
	return json.Unmarshal(raw, &o)
}

// readOrigin is a stored origin, or none when raw is empty or does not
// read back: the run is still the response it answered, its instructions,
// metadata and input boundary unknown.
func readOrigin(raw []byte) Origin {
	var o Origin
	if len(raw) > 0 && json.Unmarshal(raw, &o) != nil {
		return Origin{}
	}
	return o
}

// apply sets what the origin keeps on a stored response.
func (o *Origin) apply(resp *Response) {
	if len(o.Instructions) > 0 {
		resp.Instructions = o.Instructions
	}
	if o.Metadata != nil {
		resp.Metadata = o.Metadata
	}
	resp.PreviousResponseID = o.PreviousResponseID
	if o.Store != nil {
		resp.Store = *o.Store
	}
}

// InputItem is an input item of a stored response, as the input_items
// list shows it.
type InputItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status,omitempty"`
	// A message.
	Role string `json:"role,omitempty"`
	// Content is a message's, never nil there (the SDKs read a list);
	// other items have none.
	Content *[]inputText `json:"content,omitempty"`
	// A function call and its output.
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
	Output    *string `json:"output,omitempty"`
}

// inputText is a content part of an input item: input_text (or
// output_text for the assistant's messages), or a part svc passed on as is.
type inputText struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	Refusal string `json:"refusal,omitempty"`
	// input_image: detail is always there ("auto" unless the request said).
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// input_file, flat as the Responses API has it (chat nests it in "file").
	FileID   string `json:"file_id,omitempty"`
	FileData string `json:"file_data,omitempty"`
	Filename string `json:"filename,omitempty"`
	// output_text's lists, which the SDKs read.
	Annotations *[]any `json:"annotations,omitempty"`
}

// storedMessage is a chat message as stored, content in any shape.
type storedMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Refusal    *string         `json:"refusal"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// InputItems are the input items of the response a run answered: the chat
// messages its own input made, as Responses items, ids numbered in order.
func InputItems(run Run) ([]InputItem, error) {
	var req struct {
		Messages []storedMessage `json:"messages"`
	}
	if err := json.Unmarshal(run.Request, &req); err != nil {
		return nil, err
	}
	if req.Messages == nil {
		return nil, errNotChat
	}
	o := readOrigin(run.Origin)
	msgs := req.Messages
	if o.InputFrom > 0 && o.InputFrom <= len(msgs) {
		msgs = msgs[o.InputFrom:]
	}
	suffix := strings.TrimPrefix(ResponseID(run.ID), "resp_")
	items := []InputItem{}
	id := func(kind string) string { return kind + "_" + suffix + "in" + strconv.Itoa(len(items)) }
	for _, m := range msgs {
		switch m.Role {
		case "tool":
			out := contentText(m.Content)
			items = append(items, InputItem{Type: "function_call_output", ID: id("fco"), Status: "completed", CallID: m.ToolCallID, Output: &out})
			continue
		case "assistant":
			if text := contentText(m.Content); text != "" || m.Refusal != nil || len(m.ToolCalls) == 0 {
				empty := []any{}
				content := []inputText{}
				if text != "" || m.Refusal == nil {
					content = append(content, inputText{Type: "output_text", Text: text, Annotations: &empty})
				}
				if m.Refusal != nil {
					content = append(content, inputText{Type: "refusal", Refusal: *m.Refusal})
				}
				items = append(items, InputItem{Type: "message", ID: id("msg"), Status: "completed", Role: "assistant", Content: &content})
			}
			for _, tc := range m.ToolCalls {
				args := tc.Function.Arguments
				items = append(items, InputItem{Type: "function_call", ID: id("fc"), Status: "completed", CallID: tc.ID,
					Name: tc.Function.Name, Arguments: &args})
			}
			continue
		}
		content := inputParts(m.Content)
		items = append(items, InputItem{Type: "message", ID: id("msg"), Status: "completed", Role: m.Role, Content: &content})
	}
	return items, nil
}

// contentText is a chat content's text: the string, or its text parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []inputPart
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// inputParts is a caller's chat content as input parts.
func inputParts(raw json.RawMessage) []inputText {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []inputText{{Type: "input_text", Text: s}}
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
		File struct {
			FileID   string `json:"file_id"`
			FileData string `json:"file_data"`
			Filename string `json:"filename"`
		} `json:"file"`
	}
	_ = json.Unmarshal(raw, &parts)
	out := make([]inputText, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Type == "image_url" && p.ImageURL != nil:
			detail := p.ImageURL.Detail
			if detail == "" {
				detail = "auto"
			}
			out = append(out, inputText{Type: "input_image", ImageURL: p.ImageURL.URL, Detail: detail})
		case p.Type == "file":
			out = append(out, inputText{Type: "input_file", FileID: p.File.FileID, FileData: p.File.FileData, Filename: p.File.Filename})
		default:
			out = append(out, inputText{Type: "input_text", Text: p.Text})
		}
	}
	return out
}

// Page is one page of a list, in OpenAI's shape.
type Page[T any] struct {
	Object  string  `json:"object"`
	Data    []T     `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// ListInputItems is a page of items: in order ("asc") or newest first
// ("desc"), those after the item with id after (all when after is empty),
// at most limit. An after that names no item is an empty page.
func ListInputItems(items []InputItem, order, after string, limit int) Page[InputItem] {
	ordered := items
	if order != "asc" {
		ordered = make([]InputItem, len(items))
		for i, it := range items {
			ordered[len(items)-1-i] = it
		}
	}
	if after != "" {
		start := len(ordered)
		for i, it := range ordered {
			if it.ID == after {
				start = i + 1
				break
			}
		}
		ordered = ordered[start:]
	}
	if ordered == nil {
		ordered = []InputItem{}
	}
	p := Page[InputItem]{Object: "list", Data: ordered}
	if len(ordered) > limit {
		p.Data, p.HasMore = ordered[:limit], true
	}
	if n := len(p.Data); n > 0 {
		p.FirstID, p.LastID = &p.Data[0].ID, &p.Data[n-1].ID
	}
	return p
}
