// Package responses translates the OpenAI Responses API to chat completions
// and back, so that any chat-completions upstream serves Responses clients:
// a request becomes a chat request (Parse, Request.Chat), a completion or a
// stream of chunks becomes a Response or its events (FromCompletion,
// Stream), and a stored run becomes a response again (Stored). It is pure:
// no HTTP, no storage; the handler resolves stored responses.
package responses

import (
	"encoding/json"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Response is the Responses API's response object, with the request's
// settings echoed as the official SDKs read them.
type Response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	AccessPrograms     *accessPrograms   `json:"access_programs"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	Error              *ResponseError    `json:"error"`
	IncompleteDetails  *Incomplete       `json:"incomplete_details"`
	Instructions       json.RawMessage   `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Metadata           map[string]string `json:"metadata"`
	Model              string            `json:"model"`
	Output             []Item            `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          reasoning         `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	Text               TextConfig        `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               *float64          `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *Usage            `json:"usage"`
	User               *string           `json:"user"`
}

// accessPrograms is the access program a response was served under. svc
// selects none: null, which is how OpenAI writes the standard fallback and
// what the official SDKs' types allow.
type accessPrograms struct {
	Cyber string `json:"cyber"`
}

// ResponseError is why a response failed.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Incomplete says why a response stopped early.
type Incomplete struct {
	Reason string `json:"reason"`
}

type reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// TextConfig is the response's text settings; Format is never empty.
type TextConfig struct {
	Format json.RawMessage `json:"format"`
}

// Item is an output item: a message or a function call.
type Item struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status"`
	// A message.
	Role    string `json:"role,omitempty"`
	Content []Part `json:"content,omitempty"`
	// A function call.
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Part is a message's content part: output_text or refusal.
type Part struct {
	Type    string
	Text    *string
	Refusal *string
}

// MarshalJSON writes a part in its type's shape; output_text carries its
// (empty) annotations and logprobs, which the SDKs read.
func (p Part) MarshalJSON() ([]byte, error) {
	if p.Type == "refusal" {
		return json.Marshal(struct {
			Type    string  `json:"type"`
			Refusal *string `json:"refusal"`
		}{p.Type, p.Refusal})
	}
	text := ""
	if p.Text != nil {
		text = *p.Text
	}
	return json.Marshal(struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
		Logprobs    []any  `json:"logprobs"`
	}{p.Type, text, []any{}, []any{}})
}

// Usage is the response's token counts.
type Usage struct {
	InputTokens         int64        `json:"input_tokens"`
	InputTokensDetails  inputDetail  `json:"input_tokens_details"`
	OutputTokens        int64        `json:"output_tokens"`
	OutputTokensDetails outputDetail `json:"output_tokens_details"`
	TotalTokens         int64        `json:"total_tokens"`
}

type inputDetail struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type outputDetail struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// textPart is an output_text part with the empty lists the SDKs expect.
func textPart(s string) Part {
	return Part{Type: "output_text", Text: &s}
}

// The chat-completions side, as svc writes and reads it.

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Refusal    *string         `json:"refusal,omitempty"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	Index    *int         `json:"index,omitempty"` // in stream deltas only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// chatUsage is a completion's usage. One that does not read (a count of
// the wrong type) or that no provider could mean (pluginapi.Believable) is
// no usage: the run holds it as unknown, and the response shows none.
type chatUsage struct {
	unreadable          bool
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// UnmarshalJSON reads a usage, never failing: what does not read marks it
// unreadable, and the answer around it is read all the same.
func (u *chatUsage) UnmarshalJSON(b []byte) error {
	type plain chatUsage
	var p plain
	if json.Unmarshal(b, &p) != nil {
		*u = chatUsage{unreadable: true}
		return nil
	}
	*u = chatUsage(p)
	return nil
}

func (u *chatUsage) usage() *Usage {
	if u == nil || u.unreadable {
		return nil
	}
	counts := []int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens}
	if d := u.PromptTokensDetails; d != nil {
		counts = append(counts, d.CachedTokens)
	}
	if d := u.CompletionTokensDetails; d != nil {
		counts = append(counts, d.ReasoningTokens)
	}
	if !pluginapi.Believable(counts...) {
		return nil
	}
	r := &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if r.TotalTokens == 0 {
		r.TotalTokens = r.InputTokens + r.OutputTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		r.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		r.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	return r
}

type chatCompletion struct {
	Created int64 `json:"created"`
	Model   string
	Choices []struct {
		Message      chatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
}

type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content   *string        `json:"content"`
			Refusal   *string        `json:"refusal"`
			ToolCalls []chatToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
}
