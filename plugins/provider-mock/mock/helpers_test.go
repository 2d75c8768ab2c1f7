package mock

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/pluginapi/providertest"
)

// Test helpers: request builders and decoded response shapes.

type msg struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolCalls  any    `json:"tool_calls,omitempty"`
}

func sys(s string) msg  { return msg{Role: "system", Content: s} }
func user(s string) msg { return msg{Role: "user", Content: s} }

// body builds a request body from messages and extra top-level fields.
func body(t testing.TB, extra map[string]any, msgs ...msg) []byte {
	t.Helper()
	m := map[string]any{"model": "gpt-4o-mini", "messages": msgs}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

type completion struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
}

func chat(t testing.TB, p pluginapi.Provider, b []byte) (completion, pluginapi.ChatResponse) {
	t.Helper()
	resp, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: b, Model: "gpt-4o-mini"})
	require.NoError(t, err)
	var c completion
	require.NoError(t, json.Unmarshal(resp.Body, &c), string(resp.Body))
	require.Len(t, c.Choices, 1)
	return c, resp
}

// content returns the answer text of a non-tool answer.
func content(t testing.TB, p pluginapi.Provider, b []byte) string {
	t.Helper()
	c, _ := chat(t, p, b)
	require.NotNil(t, c.Choices[0].Message.Content, "content is null")
	return *c.Choices[0].Message.Content
}

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int     `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
}

type streamed struct {
	raw    []pluginapi.ChatChunk
	chunks []chunk
}

func stream(t testing.TB, p pluginapi.Provider, b []byte, includeUsage bool) streamed {
	t.Helper()
	var s streamed
	err := p.StreamChat(context.Background(), pluginapi.ChatRequest{Body: b, IncludeUsage: includeUsage},
		func(c pluginapi.ChatChunk) error {
			var ch chunk
			require.NoError(t, json.Unmarshal(c.Data, &ch), string(c.Data))
			s.raw = append(s.raw, c)
			s.chunks = append(s.chunks, ch)
			return nil
		})
	require.NoError(t, err)
	return s
}

// text concatenates the streamed content deltas.
func (s streamed) text() string {
	out := ""
	for _, c := range s.chunks {
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				out += *ch.Delta.Content
			}
		}
	}
	return out
}

// args concatenates the streamed tool-call argument fragments.
func (s streamed) args() (name, id, args string) {
	for _, c := range s.chunks {
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != nil {
					id = *tc.ID
				}
				if tc.Function.Name != nil {
					name = *tc.Function.Name
				}
				if tc.Function.Arguments != nil {
					args += *tc.Function.Arguments
				}
			}
		}
	}
	return
}

// modes runs f with the mock in both of the modes svc runs a provider in:
// in its process, and as a plugin.
func modes(t *testing.T, f func(t *testing.T, p pluginapi.Provider)) {
	t.Helper()
	providertest.Modes(t, &Mock{}, f)
}
