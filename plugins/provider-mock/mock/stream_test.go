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

func TestStreamMatchesChat(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for name, b := range sampleBodies(t) {
			t.Run(name, func(t *testing.T) {
				c, resp := chat(t, p, b)
				s := stream(t, p, b, true)
				require.GreaterOrEqual(t, len(s.chunks), 3)

				// Every chunk carries the same id, created and model as Chat.
				for _, ch := range s.chunks {
					assert.Equal(t, c.ID, ch.ID)
					assert.Equal(t, c.Created, ch.Created)
					assert.Equal(t, c.Model, ch.Model)
					assert.Equal(t, "chat.completion.chunk", ch.Object)
				}

				// First chunk: the role.
				first := s.chunks[0].Choices[0].Delta
				require.NotNil(t, first.Role)
				assert.Equal(t, "assistant", *first.Role)

				// Content or tool call, reassembled, equals Chat's.
				msg := c.Choices[0].Message
				if len(msg.ToolCalls) > 0 {
					name, id, args := s.args()
					assert.Equal(t, msg.ToolCalls[0].Function.Name, name)
					assert.Equal(t, msg.ToolCalls[0].ID, id)
					assert.Equal(t, msg.ToolCalls[0].Function.Arguments, args)
					assert.Empty(t, s.text())
				} else {
					require.NotNil(t, msg.Content)
					assert.Equal(t, *msg.Content, s.text())
					assert.Equal(t, "", *first.Content)
				}

				// The last choice chunk has an empty delta and the finish reason.
				n := len(s.chunks)
				last := s.chunks[n-2]
				require.Len(t, last.Choices, 1)
				require.NotNil(t, last.Choices[0].FinishReason)
				assert.Equal(t, c.Choices[0].FinishReason, *last.Choices[0].FinishReason)
				assert.Nil(t, last.Choices[0].Delta.Content)
				for _, ch := range s.chunks[:n-2] {
					assert.Nil(t, ch.Choices[0].FinishReason)
				}

				// Then the usage-only chunk.
				u := s.chunks[n-1]
				assert.Empty(t, u.Choices)
				require.NotNil(t, u.Usage)
				assert.True(t, s.raw[n-1].UsageOnly)
				require.NotNil(t, s.raw[n-1].Usage)
				assert.Equal(t, resp.Usage, *s.raw[n-1].Usage)
				assert.Equal(t, resp.Usage.TotalTokens, u.Usage.TotalTokens)
				for _, r := range s.raw[:n-1] {
					assert.False(t, r.UsageOnly)
					assert.Nil(t, r.Usage)
				}
			})
		}
	})
}

func TestStreamPieces(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := body(t, nil, user("Explain how the Roman empire rose, flourished and eventually fell apart over many centuries"))
		s := stream(t, p, b, false)
		// role + several content pieces + finish
		assert.Greater(t, len(s.chunks), 4)
		for _, ch := range s.chunks[1 : len(s.chunks)-1] {
			require.NotNil(t, ch.Choices[0].Delta.Content)
			assert.NotEmpty(t, *ch.Choices[0].Delta.Content)
		}
		// JSON is valid per chunk even when content is cut mid-token.
		for _, r := range s.raw {
			assert.True(t, json.Valid(r.Data))
		}
	})
}

func TestStreamWithoutUsage(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := body(t, nil, user("hello there, general Kenobi"))
		s := stream(t, p, b, false)
		last := s.chunks[len(s.chunks)-1]
		require.Len(t, last.Choices, 1, "no usage-only chunk")
		require.NotNil(t, last.Choices[0].FinishReason)
		assert.Equal(t, "stop", *last.Choices[0].FinishReason)
		for i, r := range s.raw {
			assert.False(t, r.UsageOnly)
			assert.Nil(t, r.Usage)
			assert.NotContains(t, string(r.Data), `"usage"`, i)
		}
	})
}

func TestStreamSendError(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		boom := errors.New("client went away")
		for name, b := range sampleBodies(t) {
			calls := 0
			err := p.StreamChat(context.Background(), pluginapi.ChatRequest{Body: b, IncludeUsage: true},
				func(pluginapi.ChatChunk) error {
					calls++
					if calls == 2 {
						return boom
					}
					return nil
				})
			assert.ErrorIs(t, err, boom, name)
			assert.Equal(t, 2, calls, "%s: nothing is sent after a failed send", name)
		}
	})
}

func TestStreamCancelledMidway(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := body(t, nil, user("Explain how the Roman empire rose, flourished and eventually fell apart over many centuries"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		err := p.StreamChat(ctx, pluginapi.ChatRequest{Body: b}, func(pluginapi.ChatChunk) error {
			calls++
			if calls == 2 {
				cancel()
			}
			return nil
		})
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 2, calls)
	})
}

func TestNextPiece(t *testing.T) {
	for _, s := range []string{
		"",
		"one",
		"one two three four five six seven",
		"  leading and trailing  ",
		`{"category":"billing","summary":"a long compact json text without spaces at all"}`,
		"ünïcödé wörds ände mehr 日本語のテキストはスペースがありませんけれども長いです",
		"x\n\ny\tz",
	} {
		got := ""
		pieces := 0
		for rest := s; rest != ""; {
			n := nextPiece(rest)
			require.Positive(t, n, s)
			got += rest[:n]
			rest = rest[n:]
			pieces++
			require.Less(t, pieces, 100)
		}
		assert.Equal(t, s, got)
	}
}
