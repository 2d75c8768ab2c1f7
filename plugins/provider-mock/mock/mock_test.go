package mock

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/pluginapi/providertest"
)

// sampleBodies covers every kind of answer.
func sampleBodies(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"plain": body(t, nil, sys("You are a helpful assistant."), user("Give me three tips for writing clean Go code.")),
		"label": body(t, nil, sys("Classify the ticket into one of: billing, bug, feature_request."),
			user("I was charged twice for my subscription, please refund me.")),
		"json_object": body(t, map[string]any{"response_format": map[string]any{"type": "json_object"}},
			user("Summarise: the meeting moved to Friday.")),
		"json_schema": body(t, map[string]any{"response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "object",
				"properties": map[string]any{"summary": map[string]any{"type": "string"}}}}}},
			user("Summarise: the meeting moved to Friday.")),
		"tool":      body(t, map[string]any{"tools": weatherTools()}, user("Use get_weather for Paris please")),
		"truncated": body(t, map[string]any{"max_tokens": 3}, user("Tell me a long story about dragons and castles.")),
		"parts": body(t, nil, msg{Role: "user", Content: []map[string]any{
			{"type": "text", "text": "What is in this picture?"},
			{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.png"}},
		}}),
	}
}

func TestDeterministicChat(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		ids := map[string]string{}
		for name, b := range sampleBodies(t) {
			t.Run(name, func(t *testing.T) {
				r1, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: b})
				require.NoError(t, err)
				r2, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: bytes.Clone(b), RequestID: "other"})
				require.NoError(t, err)
				assert.Equal(t, string(r1.Body), string(r2.Body))
				assert.Equal(t, r1.Usage, r2.Usage)

				c, _ := chat(t, p, b)
				assert.Regexp(t, `^chatcmpl-mock-[0-9a-f]{24}$`, c.ID)
				assert.Greater(t, c.Created, int64(1704067200-1))
				ids[c.ID] = name
			})
		}
		assert.Len(t, ids, len(sampleBodies(t)), "different bodies get different ids")
	})
}

func TestDeterministicStream(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for name, b := range sampleBodies(t) {
			t.Run(name, func(t *testing.T) {
				s1, s2 := stream(t, p, b, true), stream(t, p, b, true)
				require.Equal(t, len(s1.raw), len(s2.raw))
				for i := range s1.raw {
					assert.Equal(t, string(s1.raw[i].Data), string(s2.raw[i].Data))
				}
			})
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		bodies := sampleBodies(t)
		want := map[string]string{}
		for name, b := range bodies {
			r, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: b})
			require.NoError(t, err)
			want[name] = string(r.Body)
		}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			for name, b := range bodies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: b})
					assert.NoError(t, err)
					assert.Equal(t, want[name], string(r.Body))
				}()
			}
		}
		wg.Wait()
	})
}

func TestCompletionShape(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := body(t, map[string]any{"model": "my-model-x", "temperature": 0.7, "stream": false},
			sys("Be brief."), user("Hello, how are you today?"))
		c, resp := chat(t, p, b)
		assert.Equal(t, "chat.completion", c.Object)
		assert.Equal(t, "my-model-x", c.Model, "the request's model is echoed")
		assert.Equal(t, "mock", c.SystemFingerprint)
		require.Len(t, c.Choices, 1)
		ch := c.Choices[0]
		assert.Equal(t, 0, ch.Index)
		assert.Equal(t, "assistant", ch.Message.Role)
		assert.Equal(t, "stop", ch.FinishReason)
		require.NotNil(t, ch.Message.Content)
		assert.Equal(t, "Mock answer: today.", *ch.Message.Content)
		assert.Equal(t, resp.Usage.PromptTokens, c.Usage.PromptTokens)
		assert.Equal(t, resp.Usage.CompletionTokens, c.Usage.CompletionTokens)
		assert.Equal(t, resp.Usage.TotalTokens, c.Usage.TotalTokens)
	})
}

func TestPlainAnswer(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		a := content(t, p, body(t, nil, user("How do I reverse a list in Python?")))
		assert.Equal(t, "Mock answer: reverse list Python.", a)

		a2 := content(t, p, body(t, nil, sys("Be nice."), user("Hi"), msg{Role: "assistant", Content: "Hello!"},
			user("Explain goroutines and channels")))
		assert.Equal(t, "Mock answer: Explain goroutines channels.", a2, "the last user message is answered")

		a3 := content(t, p, body(t, nil, user("hi!")))
		assert.Equal(t, emptyAnswer, a3)

		a4 := content(t, p, body(t, nil, user(`He said "stop" \ then	left`+"\n\u2028ok")))
		assert.True(t, strings.HasPrefix(a4, answerPrefix))

		// null content and content parts are read.
		a5 := content(t, p, body(t, nil, msg{Role: "system", Content: nil}, msg{Role: "user", Content: []map[string]any{
			{"type": "text", "text": "Describe"}, {"type": "text", "text": "this cat"},
		}}))
		assert.Equal(t, "Mock answer: Describe cat.", a5)
	})
}

func TestUsage(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for name, b := range sampleBodies(t) {
			c, resp := chat(t, p, b)
			assert.Equal(t, c.Usage.PromptTokens+c.Usage.CompletionTokens, c.Usage.TotalTokens, name)
			assert.Positive(t, c.Usage.PromptTokens, name)
			assert.Positive(t, c.Usage.CompletionTokens, name)
			assert.Equal(t, resp.Usage.TotalTokens, c.Usage.TotalTokens, name)
		}

		// One short user message: 3 (priming) + 3 (message) + 1 (role) + the text.
		c, _ := chat(t, p, body(t, nil, user("Hello, how are you?")))
		assert.Equal(t, int64(3+3+1+6), c.Usage.PromptTokens)

		short, _ := chat(t, p, body(t, nil, user("Tell me about Rome.")))
		long, _ := chat(t, p, body(t, nil, user("Tell me about Rome. "+strings.Repeat("I would like plenty of detail about its history, its emperors and its architecture. ", 10))))
		assert.Greater(t, long.Usage.PromptTokens, short.Usage.PromptTokens+100)
		assert.Greater(t, long.Usage.CompletionTokens, short.Usage.CompletionTokens)

		// System messages, images, tools and schemas all cost prompt tokens.
		withSys, _ := chat(t, p, body(t, nil, sys("You are a very careful assistant."), user("Tell me about Rome.")))
		assert.Greater(t, withSys.Usage.PromptTokens, short.Usage.PromptTokens)
		withTools, _ := chat(t, p, body(t, map[string]any{"tools": weatherTools()}, user("Tell me about Rome.")))
		assert.Greater(t, withTools.Usage.PromptTokens, short.Usage.PromptTokens+15)
		withImage, _ := chat(t, p, body(t, nil, msg{Role: "user", Content: []map[string]any{
			{"type": "text", "text": "Tell me about Rome."}, {"type": "image_url", "image_url": map[string]any{"url": "x"}},
		}}))
		assert.Equal(t, short.Usage.PromptTokens+tokensPerImage, withImage.Usage.PromptTokens)
	})
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello", 1},
		{"Hello, world!", 4},
		{"classification", 2},
		{"doesn't", 2},
		{"12345", 2},
		{"日本語", 3},
		{"line one\n\nline two", 5},
		{"I was charged twice for my subscription this month, please refund.", 14},
	} {
		assert.Equal(t, tc.want, estimateTokens(tc.in), tc.in)
	}
	assert.Equal(t, 4, estimateJSONTokens(`{"type":"object","x":1}`))

	// About four characters per token on ordinary English.
	text := "The quick brown fox jumps over the lazy dog while the farmer watches from the porch, " +
		"wondering whether the weather will hold until the harvest is finally brought in."
	n := estimateTokens(text)
	assert.InDelta(t, float64(len(text))/4.3, float64(n), float64(len(text))/4.3*0.25)

	got, k, cut := truncateTokens("Mock answer: one two three", 4)
	assert.Equal(t, "Mock answer: one", got)
	assert.Equal(t, 4, k)
	assert.True(t, cut)
	got, _, cut = truncateTokens("short", 10)
	assert.Equal(t, "short", got)
	assert.False(t, cut)
}

func TestMaxTokens(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		prompt := user("Tell me a long story about dragons, castles, knights and a very brave princess.")
		full := content(t, p, body(t, nil, prompt))

		c, _ := chat(t, p, body(t, map[string]any{"max_tokens": 4}, prompt))
		require.NotNil(t, c.Choices[0].Message.Content)
		got := *c.Choices[0].Message.Content
		assert.Equal(t, "length", c.Choices[0].FinishReason)
		assert.True(t, strings.HasPrefix(full, got), "%q is a prefix of %q", got, full)
		assert.Less(t, len(got), len(full))
		assert.LessOrEqual(t, c.Usage.CompletionTokens, int64(4))
		assert.Equal(t, "Mock answer: Tell", got)

		// max_completion_tokens wins over max_tokens.
		c2, _ := chat(t, p, body(t, map[string]any{"max_tokens": 100, "max_completion_tokens": 2}, prompt))
		assert.Equal(t, "length", c2.Choices[0].FinishReason)
		assert.Equal(t, "Mock answer", *c2.Choices[0].Message.Content)

		// A roomy limit changes nothing.
		c3, _ := chat(t, p, body(t, map[string]any{"max_tokens": 1000}, prompt))
		assert.Equal(t, "stop", c3.Choices[0].FinishReason)
		assert.Equal(t, full, *c3.Choices[0].Message.Content)
	})
}

func TestBadBodies(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for name, b := range map[string]string{
			"not json":             `{"model":`,
			"array":                `[]`,
			"null":                 `null`,
			"empty object":         `{}`,
			"no model":             `{"messages":[{"role":"user","content":"hi"}]}`,
			"model not a string":   `{"model":4,"messages":[{"role":"user","content":"hi"}]}`,
			"no messages":          `{"model":"m"}`,
			"empty messages":       `{"model":"m","messages":[]}`,
			"messages not array":   `{"model":"m","messages":"hi"}`,
			"content number":       `{"model":"m","messages":[{"role":"user","content":42}]}`,
			"bad part":             `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`,
			"bad role":             `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`,
			"no role":              `{"model":"m","messages":[{"content":"hi"}]}`,
			"temperature string":   `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`,
			"max_tokens zero":      `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`,
			"bad format":           `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"yaml"}}`,
			"schema missing":       `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema"}}`,
			"tool without name":    `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`,
			"tool_choice unknown":  `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"sometimes"}`,
			"forced tool not sent": `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}`,
		} {
			t.Run(name, func(t *testing.T) {
				_, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: []byte(b)})
				var pe *pluginapi.ProviderError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, 400, pe.Status)
				assert.Equal(t, "invalid_request_error", pe.Type)
				assert.NotEmpty(t, pe.Message)

				sent := 0
				err = p.StreamChat(context.Background(), pluginapi.ChatRequest{Body: []byte(b), IncludeUsage: true},
					func(pluginapi.ChatChunk) error { sent++; return nil })
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, 400, pe.Status)
				assert.Zero(t, sent, "no chunk before an error")
			})
		}
	})
}

func TestLatency(t *testing.T) {
	b := body(t, nil, user("hello there"))
	latency := 30 * time.Millisecond
	providertest.Modes(t, &Mock{Latency: latency}, func(t *testing.T, p pluginapi.Provider) {
		start := time.Now()
		_, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: b})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), latency)

		start = time.Now()
		first := time.Duration(0)
		err = p.StreamChat(context.Background(), pluginapi.ChatRequest{Body: b}, func(pluginapi.ChatChunk) error {
			if first == 0 {
				first = time.Since(start)
			}
			return nil
		})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, first, latency, "latency comes before the first chunk")
	})

	// A long latency is cut short by cancellation.
	providertest.Modes(t, &Mock{Latency: time.Hour}, func(t *testing.T, slow pluginapi.Provider) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Millisecond, cancel)
		_, err := slow.Chat(ctx, pluginapi.ChatRequest{Body: b})
		assert.ErrorIs(t, err, context.Canceled)

		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		sent := 0
		err = slow.StreamChat(ctx, pluginapi.ChatRequest{Body: b}, func(pluginapi.ChatChunk) error { sent++; return nil })
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, sent)
	})
}

func TestCancelledContext(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := body(t, nil, user("hello there"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Chat(ctx, pluginapi.ChatRequest{Body: b})
		assert.ErrorIs(t, err, context.Canceled)
		sent := 0
		err = p.StreamChat(ctx, pluginapi.ChatRequest{Body: b}, func(pluginapi.ChatChunk) error { sent++; return nil })
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, sent)
		_, err = p.Models(ctx)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestModels(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		models, err := p.Models(context.Background())
		require.NoError(t, err)
		ids := map[string]bool{}
		for _, m := range models {
			assert.Equal(t, "mock", m.OwnedBy)
			assert.Positive(t, m.Created)
			ids[m.ID] = true
		}
		for _, id := range []string{"gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "gpt-4.1", "o4-mini", "text-embedding-3-small"} {
			assert.True(t, ids[id], id)
		}
		models[0].ID = "changed"
		again, _ := p.Models(context.Background())
		assert.Equal(t, "gpt-4o-mini", again[0].ID, "callers get a copy")
	})
}

func TestProviderErrorIsTyped(t *testing.T) {
	_, err := compose([]byte(`{"model":"m","messages":[]}`))
	var pe *pluginapi.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "messages", pe.Param)
}

func TestNewTakesTheLatencyFromTheConfig(t *testing.T) {
	p, err := New(pluginapi.ProviderConfig{MockLatency: 25 * time.Millisecond, BaseURL: "http://ignored.example"}, nil)
	require.NoError(t, err)
	assert.Equal(t, &Mock{Latency: 25 * time.Millisecond}, p)

	p, err = New(pluginapi.ProviderConfig{}, nil)
	require.NoError(t, err)
	assert.Equal(t, &Mock{}, p)

	_, err = New(pluginapi.ProviderConfig{MockLatency: -time.Millisecond}, nil)
	assert.Error(t, err)
}
