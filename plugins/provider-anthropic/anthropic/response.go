package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// ---- the Messages API answer ----

type msgResponse struct {
	ID         string      `json:"id"`
	Type       string      `json:"type"`
	Model      string      `json:"model"`
	Content    []respBlock `json:"content"`
	StopReason string      `json:"stop_reason"`
	Usage      msgUsage    `json:"usage"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"` // an error body ({"type":"error",…}) sent with a 2xx
}

type respBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// msgUsage is the Messages API's usage. input_tokens excludes the tokens
// read from or written to the prompt cache, which are counted apart.
type msgUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// ---- the chat-completions answer ----

type completion struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Created int64     `json:"created"`
	Model   string    `json:"model"`
	Choices []choice  `json:"choices"`
	Usage   *usageOut `json:"usage,omitempty"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      outMessage      `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type outMessage struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	ToolCalls []outToolCall `json:"tool_calls,omitempty"`
}

type outToolCall struct {
	Index    *int   `json:"index,omitempty"` // streamed deltas only
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// usageOut is chat-completions usage: prompt_tokens counts every input
// token, cached or not, as OpenAI's does, with the cache reads in
// prompt_tokens_details.cached_tokens and the cache writes kept under
// Anthropic's name.
type usageOut struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

var rawNull = json.RawMessage("null")

func (u msgUsage) out() (*usageOut, pluginapi.Usage) {
	o := &usageOut{
		PromptTokens:             u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		CompletionTokens:         u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens,
	}
	o.TotalTokens = o.PromptTokens + o.CompletionTokens
	o.PromptTokensDetails.CachedTokens = u.CacheReadInputTokens
	if !pluginapi.Believable(u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens) {
		return o, pluginapi.Usage{} // unknown: svc does not price what the upstream could not have meant
	}
	return o, o.usage()
}

// usage is the count svc prices the call by.
func (o *usageOut) usage() pluginapi.Usage {
	return pluginapi.Usage{PromptTokens: o.PromptTokens, CompletionTokens: o.CompletionTokens, TotalTokens: o.TotalTokens,
		CachedPromptTokens: o.PromptTokensDetails.CachedTokens, CacheWriteTokens: o.CacheCreationInputTokens}
}

// finishReason maps a stop_reason: end_turn, stop_sequence and pause_turn
// → stop, max_tokens (and a full context window) → length, tool_use →
// tool_calls, refusal → content_filter.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

// completionOf turns a message into a chat.completion body: its text
// blocks joined as the content, its tool_use blocks as tool calls.
func completionOf(m *msgResponse, created int64) ([]byte, pluginapi.Usage) {
	var text strings.Builder
	var calls []outToolCall
	hasText := false
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			hasText = true
		case "tool_use":
			var tc outToolCall
			tc.ID, tc.Type, tc.Function.Name = b.ID, "function", b.Name
			tc.Function.Arguments = string(orEmptyObject(b.Input))
			calls = append(calls, tc)
		}
		// thinking and server-tool blocks have no chat-completions form
	}
	msg := outMessage{Role: "assistant", ToolCalls: calls}
	if hasText || len(calls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	usage, u := m.Usage.out()
	out := completion{
		ID: m.ID, Object: "chat.completion", Created: created, Model: m.Model,
		Choices: []choice{{Message: msg, Logprobs: rawNull, FinishReason: finishReason(m.StopReason)}},
		Usage:   usage,
	}
	b, _ := json.Marshal(out) // plain structs and valid raw JSON always marshal
	return b, u
}

// orEmptyObject is a tool input as compact JSON text, {} when absent.
func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return emptyInput
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return emptyInput
	}
	return b.Bytes()
}
