package gateway

// The chat-completions stream codec: a held answer replayed as the chunks of
// a stream, and a streamed answer assembled back into the chat.completion
// the same request answers without streaming.

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// completionChunks replays a chat.completion body as the chunks of a
// stream: the role and content of each choice, then its finish reason, and
// the usage when the client asked for it.
func completionChunks(body []byte, includeUsage bool) []json.RawMessage {
	var c struct {
		ID                string          `json:"id"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
		Usage             json.RawMessage `json:"usage"`
		Choices           []struct {
			Index        int             `json:"index"`
			FinishReason *string         `json:"finish_reason"`
			Message      json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &c) != nil {
		return nil
	}
	type choice struct {
		Index        int             `json:"index"`
		Delta        json.RawMessage `json:"delta"`
		FinishReason *string         `json:"finish_reason"`
	}
	chunk := func(choices []choice, usage json.RawMessage) []byte {
		b, _ := json.Marshal(envelope[choice]{c.ID, "chat.completion.chunk", c.Created, c.Model, c.SystemFingerprint, choices, usage})
		return b
	}
	var out []json.RawMessage
	for _, ch := range c.Choices {
		delta := indexToolCalls(ch.Message)
		if len(delta) == 0 {
			delta = json.RawMessage(`{}`)
		}
		out = append(out, chunk([]choice{{Index: ch.Index, Delta: delta}}, nil))
		out = append(out, chunk([]choice{{Index: ch.Index, Delta: json.RawMessage(`{}`), FinishReason: ch.FinishReason}}, nil))
	}
	if includeUsage && !emptyJSON(c.Usage) {
		out = append(out, chunk([]choice{}, c.Usage))
	}
	return out
}

// envelope is what surrounds the choices of a chat completion or of one
// of its stream's chunks.
type envelope[C any] struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
	Choices           []C             `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

// emptyJSON reports whether raw is absent or an empty value: null, "",
// [] or {}.
func emptyJSON(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", `""`, "[]", "{}":
		return true
	}
	return false
}

// hasOtherMembers reports whether a delta has a member with a value besides
// the role, content, refusal and tool calls assembleCompletion puts back.
func hasOtherMembers(delta json.RawMessage) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(delta, &members) != nil {
		return true
	}
	for name, v := range members {
		switch name {
		case "role", "content", "refusal", "tool_calls":
		default:
			if !emptyJSON(v) {
				return true
			}
		}
	}
	return false
}

// indexToolCalls gives each tool call of a message the index a stream's
// tool-call delta carries: clients put a streamed call together by it, and
// without it merge parallel calls into one.
func indexToolCalls(message json.RawMessage) json.RawMessage {
	if !bytes.Contains(message, []byte(`"tool_calls"`)) {
		return message // most answers: nothing to decode
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(message, &m) != nil || len(m["tool_calls"]) == 0 {
		return message
	}
	var calls []map[string]json.RawMessage
	if json.Unmarshal(m["tool_calls"], &calls) != nil {
		return message
	}
	for i, call := range calls {
		call["index"], _ = json.Marshal(i)
	}
	m["tool_calls"], _ = json.Marshal(calls)
	b, err := json.Marshal(m)
	if err != nil {
		return message
	}
	return b
}

// assembly says what assembleCompletion may leave out of a streamed answer.
type assembly int

const (
	// wholeAnswer leaves nothing out: what the cache stores must be the
	// answer itself.
	wholeAnswer assembly = iota
	// answerText keeps the text and drops what it cannot put back (log
	// probabilities, members it does not know): enough to mask or compare.
	answerText
)

// assembleCompletion puts a streamed answer back together as the
// chat.completion body the same request answers without streaming. Answers
// with tool calls are not assembled; for wholeAnswer, neither are answers
// with log probabilities or a delta member it does not know that has a
// value (an empty one, such as "function_call": null, is ignored).
func assembleCompletion(chunks []json.RawMessage, usage json.RawMessage, mode assembly) ([]byte, bool) {
	type choice struct {
		content, refusal       strings.Builder
		hasContent, hasRefusal bool
		role                   string
		finish                 *string
	}
	var (
		id, model   string
		fingerprint *string
		created     int64
		choices     []*choice
	)
	for _, raw := range chunks {
		var ch struct {
			ID                string  `json:"id"`
			Created           int64   `json:"created"`
			Model             string  `json:"model"`
			SystemFingerprint *string `json:"system_fingerprint"`
			Choices           []struct {
				Index        int             `json:"index"`
				Delta        json.RawMessage `json:"delta"`
				Logprobs     json.RawMessage `json:"logprobs"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal(raw, &ch) != nil {
			return nil, false
		}
		id, model, created = ch.ID, ch.Model, ch.Created
		if ch.SystemFingerprint != nil {
			fingerprint = ch.SystemFingerprint
		}
		for _, c := range ch.Choices {
			if c.Index < 0 || c.Index > 128 || mode == wholeAnswer && !emptyJSON(c.Logprobs) {
				return nil, false
			}
			var delta struct {
				Role      string          `json:"role"`
				Content   *string         `json:"content"`
				Refusal   *string         `json:"refusal"`
				ToolCalls json.RawMessage `json:"tool_calls"`
			}
			if len(c.Delta) > 0 && json.Unmarshal(c.Delta, &delta) != nil {
				return nil, false
			}
			if !emptyJSON(delta.ToolCalls) || mode == wholeAnswer && hasOtherMembers(c.Delta) {
				return nil, false
			}
			for len(choices) <= c.Index {
				choices = append(choices, &choice{})
			}
			p := choices[c.Index]
			if delta.Role != "" {
				p.role = delta.Role
			}
			if delta.Content != nil {
				p.content.WriteString(*delta.Content)
				p.hasContent = true
			}
			if delta.Refusal != nil {
				p.refusal.WriteString(*delta.Refusal)
				p.hasRefusal = true
			}
			if c.FinishReason != nil {
				p.finish = c.FinishReason
			}
		}
	}
	if len(choices) == 0 {
		return nil, false
	}
	type message struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
		Refusal *string `json:"refusal"`
	}
	type outChoice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason *string `json:"finish_reason"`
	}
	out := envelope[outChoice]{ID: id, Object: "chat.completion", Created: created, Model: model, SystemFingerprint: fingerprint, Usage: usage}
	for i, p := range choices {
		m := message{Role: p.role}
		if m.Role == "" {
			m.Role = "assistant"
		}
		if content := p.content.String(); p.hasContent || !p.hasRefusal {
			m.Content = &content // a refusal alone leaves content null, as OpenAI's does
		}
		if p.hasRefusal {
			refusal := p.refusal.String()
			m.Refusal = &refusal
		}
		out.Choices = append(out.Choices, outChoice{Index: i, Message: m, FinishReason: p.finish})
	}
	b, err := json.Marshal(out)
	return b, err == nil
}

// usageJSON is u in the chat-completions usage shape, nil when unknown:
// the prompt cache's reads in prompt_tokens_details.cached_tokens, its
// writes in cache_creation_input_tokens, each when there were any, as the
// first-party providers write them.
func usageJSON(u *pluginapi.Usage) json.RawMessage {
	if u == nil {
		return nil
	}
	type details struct {
		CachedTokens int64 `json:"cached_tokens"`
	}
	out := struct {
		PromptTokens        int64    `json:"prompt_tokens"`
		CompletionTokens    int64    `json:"completion_tokens"`
		TotalTokens         int64    `json:"total_tokens"`
		PromptTokensDetails *details `json:"prompt_tokens_details,omitempty"`
		CacheCreation       int64    `json:"cache_creation_input_tokens,omitempty"`
	}{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		CacheCreation: u.CacheWriteTokens}
	if u.CachedPromptTokens > 0 {
		out.PromptTokensDetails = &details{CachedTokens: u.CachedPromptTokens}
	}
	b, _ := json.Marshal(out)
	return b
}
