package mock

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// choices runs b, which asks for n choices, and returns the completion.
func choices(t *testing.T, p pluginapi.Provider, b []byte, n int) completion {
	t.Helper()
	resp, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: b})
	require.NoError(t, err)
	var c completion
	require.NoError(t, json.Unmarshal(resp.Body, &c), string(resp.Body))
	require.Len(t, c.Choices, n)
	for i, ch := range c.Choices {
		assert.Equal(t, i, ch.Index)
	}
	assert.Equal(t, resp.Usage.CompletionTokens, c.Usage.CompletionTokens)
	assert.Equal(t, resp.Usage.PromptTokens+resp.Usage.CompletionTokens, resp.Usage.TotalTokens)
	again, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: b})
	require.NoError(t, err)
	assert.Equal(t, string(resp.Body), string(again.Body), "deterministic")
	return c
}

func contents(t *testing.T, c completion) []string {
	t.Helper()
	out := make([]string, len(c.Choices))
	for i, ch := range c.Choices {
		require.NotNil(t, ch.Message.Content)
		out[i] = *ch.Message.Content
	}
	return out
}

func assertDistinct(t *testing.T, values []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range values {
		assert.False(t, seen[v], "%q repeated in %q", v, values)
		seen[v] = true
	}
}

// n plain answers: distinct, the first the answer to n = 1, and every
// choice's completion tokens counted.
func TestNPlainChoices(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		msgs := []msg{user("How do I reverse a list in Python?")}
		one, _ := chat(t, p, body(t, nil, msgs...))
		c := choices(t, p, body(t, map[string]any{"n": 3}, msgs...), 3)
		got := contents(t, c)
		assertDistinct(t, got)
		assert.Equal(t, *one.Choices[0].Message.Content, got[0])
		assert.Equal(t, "Mock answer: reverse list Python. (choice 2)", got[1])
		want := 0
		for _, s := range got {
			want += estimateTokens(s)
		}
		assert.Equal(t, int64(want), c.Usage.CompletionTokens)
		assert.Equal(t, one.Usage.PromptTokens, c.Usage.PromptTokens, "the prompt is counted once")

		capped := choices(t, p, body(t, map[string]any{"n": 2, "max_tokens": 3}, msgs...), 2)
		assert.Equal(t, int64(6), capped.Usage.CompletionTokens, "max_tokens caps each choice")
		for _, ch := range capped.Choices {
			assert.Equal(t, "length", ch.FinishReason)
		}
	})
}

// A label answer's choices are the prompt's next labels.
func TestNLabelChoices(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		msgs := []msg{sys("Classify the ticket as billing, bug, or feature_request. Answer with the label only."),
			user("I was charged twice for my subscription this month.")}
		one := content(t, p, body(t, nil, msgs...))
		got := contents(t, choices(t, p, body(t, map[string]any{"n": 3}, msgs...), 3))
		assert.Equal(t, one, got[0])
		assert.ElementsMatch(t, []string{"billing", "bug", "feature_request"}, got)
	})
}

// JSON answers stay valid for their schema and differ where it leaves room.
func TestNJSONChoices(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		schema := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "t", "schema": map[string]any{
			"type": "object", "required": []string{"category", "summary"}, "properties": map[string]any{
				"category": map[string]any{"type": "string", "enum": []string{"billing", "bug"}},
				"summary":  map[string]any{"type": "string"},
			}}}}
		msgs := []msg{user("I was charged twice for my subscription this month.")}
		got := contents(t, choices(t, p, body(t, map[string]any{"n": 2, "response_format": schema}, msgs...), 2))
		assertDistinct(t, got)
		for _, s := range got {
			var v struct{ Category, Summary string }
			require.NoError(t, json.Unmarshal([]byte(s), &v), s)
			assert.Contains(t, []string{"billing", "bug"}, v.Category)
			assert.NotEmpty(t, v.Summary)
		}

		object := contents(t, choices(t, p, body(t, map[string]any{"n": 2, "response_format": map[string]any{"type": "json_object"}}, msgs...), 2))
		assertDistinct(t, object)
		for _, s := range object {
			assert.True(t, json.Valid([]byte(s)), s)
		}
	})
}

// Each tool-call choice calls the tool with its own call id.
func TestNToolCallChoices(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := body(t, map[string]any{"n": 3, "tools": weatherTools()}, user("Use get_weather for Paris"))
		c := choices(t, p, b, 3)
		ids := make([]string, 0, 3)
		for _, ch := range c.Choices {
			assert.Equal(t, "tool_calls", ch.FinishReason)
			require.Len(t, ch.Message.ToolCalls, 1)
			assert.Equal(t, "get_weather", ch.Message.ToolCalls[0].Function.Name)
			assert.True(t, json.Valid([]byte(ch.Message.ToolCalls[0].Function.Arguments)))
			ids = append(ids, ch.Message.ToolCalls[0].ID)
		}
		assertDistinct(t, ids)
		one, _ := chat(t, p, body(t, map[string]any{"tools": weatherTools()}, user("Use get_weather for Paris")))
		assert.Equal(t, one.Choices[0].Message.ToolCalls[0].Function.Arguments, c.Choices[0].Message.ToolCalls[0].Function.Arguments)
	})
}

// A stream carries every choice, each chunk naming its index, with the
// same content, finish reasons and usage as the answer in one piece.
func TestNStreamedChoices(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for _, extra := range []map[string]any{
			{"n": 3},
			{"n": 2, "tools": weatherTools()},
		} {
			msgs := []msg{user("Use get_weather for Paris")}
			whole := choices(t, p, body(t, extra, msgs...), extra["n"].(int))
			s := stream(t, p, body(t, extra, msgs...), true)
			text := map[int]string{}
			args := map[int]string{}
			finish := map[int]string{}
			for _, c := range s.chunks {
				require.LessOrEqual(t, len(c.Choices), 1)
				for _, ch := range c.Choices {
					if ch.Delta.Content != nil {
						text[ch.Index] += *ch.Delta.Content
					}
					for _, tc := range ch.Delta.ToolCalls {
						if tc.Function.Arguments != nil {
							args[ch.Index] += *tc.Function.Arguments
						}
					}
					if ch.FinishReason != nil {
						finish[ch.Index] = *ch.FinishReason
					}
				}
			}
			for i, ch := range whole.Choices {
				if ch.Message.Content != nil {
					assert.Equal(t, *ch.Message.Content, text[i])
				} else {
					assert.Equal(t, ch.Message.ToolCalls[0].Function.Arguments, args[i])
				}
				assert.Equal(t, ch.FinishReason, finish[i])
			}
			last := s.raw[len(s.raw)-1]
			require.True(t, last.UsageOnly)
			assert.Equal(t, whole.Usage.CompletionTokens, last.Usage.CompletionTokens)
		}
	})
}

func TestNOutOfRange(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for _, n := range []any{0, -1, 129} {
			_, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: body(t, map[string]any{"n": n}, user("hi"))})
			var pe *pluginapi.ProviderError
			require.True(t, errors.As(err, &pe), "n=%v: %v", n, err)
			assert.Equal(t, 400, pe.Status)
			assert.Equal(t, "n", pe.Param)
		}
		choices(t, p, body(t, map[string]any{"n": 128}, user("hi")), 128)
	})
}
