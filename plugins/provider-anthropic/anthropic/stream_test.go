package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/pluginapi/providertest"
)

const helloStream = `{"model":"claude-opus-4-1","stream":true,"messages":[{"role":"user","content":"Hello"}]}`

func streamReq(body string, includeUsage bool) pluginapi.ChatRequest {
	r := chatReq(body)
	r.IncludeUsage = includeUsage
	return r
}

func collect(t *testing.T, p pluginapi.Provider, req pluginapi.ChatRequest) ([]pluginapi.ChatChunk, error) {
	t.Helper()
	var chunks []pluginapi.ChatChunk
	err := p.StreamChat(context.Background(), req, func(c pluginapi.ChatChunk) error {
		chunks = append(chunks, c)
		return nil
	})
	return chunks, err
}

// chunkJSON is a chat.completion.chunk as a client reads it.
type chunkJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// assembled is what a client builds from a stream's chunks.
type assembled struct {
	role, content, finish string
	calls                 map[int]*struct{ id, name, args string }
	usage                 *pluginapi.Usage
	usageChunks           int
}

func assemble(t *testing.T, chunks []pluginapi.ChatChunk) (assembled, []chunkJSON) {
	t.Helper()
	a := assembled{calls: map[int]*struct{ id, name, args string }{}}
	var parsed []chunkJSON
	for _, c := range chunks {
		var cj chunkJSON
		require.NoError(t, json.Unmarshal(c.Data, &cj), string(c.Data))
		parsed = append(parsed, cj)
		assert.Equal(t, "chat.completion.chunk", cj.Object)
		if c.UsageOnly {
			a.usageChunks++
			a.usage = c.Usage
			assert.Empty(t, cj.Choices, "a usage-only chunk has no choices")
			require.NotNil(t, cj.Usage)
			continue
		}
		require.Len(t, cj.Choices, 1)
		d := cj.Choices[0].Delta
		if d.Role != "" {
			a.role = d.Role
		}
		if d.Content != nil {
			a.content += *d.Content
		}
		for _, tc := range d.ToolCalls {
			call := a.calls[tc.Index]
			if call == nil {
				call = &struct{ id, name, args string }{}
				a.calls[tc.Index] = call
			}
			if tc.ID != "" {
				call.id = tc.ID
			}
			if tc.Function.Name != "" {
				call.name = tc.Function.Name
			}
			call.args += tc.Function.Arguments
		}
		if f := cj.Choices[0].FinishReason; f != nil {
			require.Empty(t, a.finish, "one finish chunk")
			a.finish = *f
		}
	}
	return a, parsed
}

func TestStreamText(t *testing.T) {
	f := newFake(t, serveSSE("stream_text.sse"))
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		chunks, err := collect(t, p, streamReq(helloStream, true))
		require.NoError(t, err)
		a, parsed := assemble(t, chunks)
		assert.Equal(t, "assistant", a.role)
		assert.Equal(t, "Hello!", a.content)
		assert.Equal(t, "stop", a.finish)
		assert.Empty(t, a.calls)
		require.Equal(t, 1, a.usageChunks)
		assert.Equal(t, &pluginapi.Usage{PromptTokens: 25, CompletionTokens: 15, TotalTokens: 40}, a.usage)

		// role, "Hello", "!", finish, usage: in that order
		require.Len(t, parsed, 5)
		assert.Equal(t, "assistant", parsed[0].Choices[0].Delta.Role)
		assert.Equal(t, "Hello", *parsed[1].Choices[0].Delta.Content)
		assert.Equal(t, "!", *parsed[2].Choices[0].Delta.Content)
		assert.Equal(t, "stop", *parsed[3].Choices[0].FinishReason)
		assert.Nil(t, parsed[3].Choices[0].Delta.Content)
		assert.EqualValues(t, 40, parsed[4].Usage.TotalTokens)
		for _, c := range parsed {
			assert.Equal(t, "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", c.ID)
			assert.Equal(t, "claude-opus-4-1-20250805", c.Model)
			assert.Positive(t, c.Created)
		}
		assert.True(t, f.last(t).req.Stream, "stream: true upstream")
		assert.Equal(t, "text/event-stream", f.last(t).header.Get("Accept"))
	})
}

func TestStreamWithoutIncludeUsage(t *testing.T) {
	f := newFake(t, serveSSE("stream_text.sse"))
	chunks, err := collect(t, f.provider(t), streamReq(helloStream, false))
	require.NoError(t, err)
	a, parsed := assemble(t, chunks)
	assert.Equal(t, 0, a.usageChunks)
	assert.Len(t, parsed, 4)
	for _, c := range chunks {
		assert.Nil(t, c.Usage)
	}
}

func TestStreamToolUse(t *testing.T) {
	f := newFake(t, serveSSE("stream_tool_use.sse"))
	body := `{"model":"claude-opus-4-1","stream":true,"messages":[{"role":"user","content":"What is the weather like in San Francisco?"}],
	  "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]}`
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		chunks, err := collect(t, p, streamReq(body, true))
		require.NoError(t, err)
		a, parsed := assemble(t, chunks)
		assert.Equal(t, "Okay, let's check the weather for San Francisco, CA:", a.content)
		require.Len(t, a.calls, 1)
		call := a.calls[0]
		assert.Equal(t, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", call.id)
		assert.Equal(t, "get_weather", call.name)
		assert.JSONEq(t, `{"location": "San Francisco, CA", "unit": "fahrenheit"}`, call.args)
		assert.Equal(t, "tool_calls", a.finish)
		assert.Equal(t, &pluginapi.Usage{PromptTokens: 472, CompletionTokens: 89, TotalTokens: 561}, a.usage)

		// The tool call's first chunk carries index, id, type and name.
		var first *chunkJSON
		for i := range parsed {
			if len(parsed[i].Choices) > 0 && len(parsed[i].Choices[0].Delta.ToolCalls) > 0 {
				first = &parsed[i]
				break
			}
		}
		require.NotNil(t, first)
		tc := first.Choices[0].Delta.ToolCalls[0]
		assert.Equal(t, 0, tc.Index)
		assert.Equal(t, "function", tc.Type)
		assert.Equal(t, "get_weather", tc.Function.Name)
		assert.Empty(t, tc.Function.Arguments)
	})
}

func TestStreamTwoToolCalls(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		writeStream(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"f","input":{}}}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"g","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"y\":2}"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"x\":1}"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}

event: message_stop
data: {"type":"message_stop"}

`)
	})
	chunks, err := collect(t, f.provider(t), streamReq(helloStream, true))
	require.NoError(t, err)
	a, parsed := assemble(t, chunks)
	require.Len(t, a.calls, 2)
	assert.Equal(t, "toolu_a", a.calls[0].id)
	assert.Equal(t, `{"x":1}`, a.calls[0].args)
	assert.Equal(t, "toolu_b", a.calls[1].id)
	assert.Equal(t, "g", a.calls[1].name)
	assert.Equal(t, `{"y":2}`, a.calls[1].args)
	// usage with the cache: 10 + 100 read + 5 written
	assert.Equal(t, &pluginapi.Usage{PromptTokens: 115, CompletionTokens: 30, TotalTokens: 145, CachedPromptTokens: 100, CacheWriteTokens: 5}, a.usage)
	u := parsed[len(parsed)-1].Usage
	assert.EqualValues(t, 100, u.PromptTokensDetails.CachedTokens)
	assert.EqualValues(t, 5, u.CacheCreationInputTokens)
}

func TestStreamErrorEvent(t *testing.T) {
	midStream := `event: message_start
data: {"type":"message_start","message":{"id":"msg_3","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}

event: error
data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

`
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) { writeStream(w, midStream) })
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		chunks, err := collect(t, p, streamReq(helloStream, true))
		pe := requireProviderError(t, err)
		assert.Equal(t, 529, pe.Status)
		assert.Equal(t, "overloaded_error", pe.Code)
		assert.Contains(t, pe.Message, "Overloaded")
		assert.Len(t, chunks, 2, "what came before the error was sent")
	})

	first := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		writeStream(w, "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"rate_limit_error\", \"message\": \"slow down\"}}\n\n")
	})
	chunks, err := collect(t, first.provider(t), streamReq(helloStream, true))
	assert.Equal(t, 429, requireProviderError(t, err).Status)
	assert.Empty(t, chunks)
}

// An error right after message_start is returned with nothing sent, so
// that svc may still fall back: the role chunk waits for what follows it.
func TestStreamErrorAfterMessageStartSendsNothing(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		writeStream(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_4","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}

event: ping
data: {"type": "ping"}

event: error
data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

`)
	})
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		sends := 0
		err := p.StreamChat(context.Background(), streamReq(helloStream, true), func(pluginapi.ChatChunk) error {
			sends++
			return nil
		})
		assert.Equal(t, 529, requireProviderError(t, err).Status)
		assert.Zero(t, sends, "send is never called")
	})
}

func TestStreamEndsBeforeMessageStop(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		writeStream(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"m\",\"usage\":{}}}\n\n")
	})
	_, err := collect(t, f.provider(t), streamReq(helloStream, true))
	pe := requireProviderError(t, err)
	assert.Equal(t, 502, pe.Status)
	assert.Contains(t, pe.Message, "message_stop")
}

// A message_stop without message_start, or without the message_delta
// that gives the stop reason, ends no whole answer: the Messages API never
// sends one so. Nothing sent yet, svc may still try another provider.
func TestStreamStoppedWithoutItsStartOrStopReason(t *testing.T) {
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"m\",\"usage\":{\"input_tokens\":5}}}\n\n"
	text := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
	stop := "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for name, c := range map[string]struct {
		body, missing string
		sent          int
	}{
		"message_stop alone":         {stop, "message_start", 0},
		"no message_delta":           {start + text + stop, "a stop reason", 2}, // the role chunk and "Hi"
		"no message_start, a finish": {text + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n" + stop, "message_start", 3},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) { writeStream(w, c.body) })
			chunks, err := collect(t, f.provider(t), streamReq(helloStream, true))
			pe := requireProviderError(t, err)
			assert.Equal(t, 502, pe.Status)
			assert.Equal(t, "upstream_bad_response", pe.Code)
			assert.Equal(t, "provider stream stopped without "+c.missing, pe.Message)
			assert.Len(t, chunks, c.sent)
		})
	}
}

func TestStreamBadBodies(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"json, not a stream": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(testdata(t, "message.json"))
		},
		"an unreadable event": func(w http.ResponseWriter, _ *http.Request) {
			writeStream(w, "event: message_start\ndata: {nope\n\n")
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, nil)
			f.answer = func(w http.ResponseWriter, r *http.Request, _ wireRequest) { h(w, r) }
			_, err := collect(t, f.provider(t), streamReq(helloStream, true))
			pe := requireProviderError(t, err)
			assert.Equal(t, 502, pe.Status)
			assert.Equal(t, "upstream_bad_response", pe.Code)
		})
	}
}

func TestStreamEventSizeBound(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		writeStream(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"m\",\"usage\":{}}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""+
			strings.Repeat("a", 100<<10)+"\"}}\n\n")
	})
	p := f.provider(t)
	p.maxResponse = 64 << 10
	chunks, err := collect(t, p, streamReq(helloStream, true))
	assert.Equal(t, "upstream_response_too_large", requireProviderError(t, err).Code)
	assert.Empty(t, chunks, "the role chunk waits for content that never came")

	p.maxResponse = 1 << 20
	_, err = collect(t, p, streamReq(helloStream, true))
	assert.Contains(t, requireProviderError(t, err).Message, "message_stop", "a long event within the bound is read whole")
}

func TestStreamOverCRLF(t *testing.T) {
	text := strings.ReplaceAll(string(testdata(t, "stream_text.sse")), "\n", "\r\n")
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) { writeStream(w, text) })
	chunks, err := collect(t, f.provider(t), streamReq(helloStream, false))
	require.NoError(t, err)
	a, _ := assemble(t, chunks)
	assert.Equal(t, "Hello!", a.content)
}

func TestStreamSendErrorStops(t *testing.T) {
	f := newFake(t, serveSSE("stream_tool_use.sse"))
	stop := errors.New("client gone")
	n := 0
	err := f.provider(t).StreamChat(context.Background(), streamReq(helloStream, true), func(pluginapi.ChatChunk) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 2, n)
}

func TestStreamCancellationReachesUpstream(t *testing.T) {
	gone := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"m\",\"usage\":{}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		gone = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		err := p.StreamChat(ctx, streamReq(helloStream, true), func(pluginapi.ChatChunk) error {
			cancel() // the client leaves after the first chunk
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		<-gone
	})
}

func TestReadEvents(t *testing.T) {
	var got []string
	err := readEvents(strings.NewReader(": comment\nevent: a\ndata: 1\ndata: 2\nid: 7\n\ndata: {}\n\n\n\nevent: b\ndata:x"), 1<<10,
		func(event, data []byte) error {
			got = append(got, string(event)+"="+string(data))
			return nil
		})
	require.NoError(t, err)
	assert.Equal(t, []string{"a=1\n2", "={}", "b=x"}, got)
}

// endless is a body that never ends a line, counting what was read.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.read += len(p)
	if e.read > 64<<20 {
		return len(p), io.EOF
	}
	return len(p), nil
}

func TestReadEventsStopsReadingALongLine(t *testing.T) {
	body := &endless{}
	err := readEvents(body, 1<<20, func(_, _ []byte) error { return nil })
	require.ErrorIs(t, err, errTooLarge)
	assert.Less(t, body.read, 2<<20, "reading stops soon after the bound, not at the line's end")
}

// An error event's type gives the status its HTTP answer would have had.
func TestStreamErrorEventStatus(t *testing.T) {
	for typ, want := range map[string]int{"timeout_error": 504, "overloaded_error": 529, "api_error": 500} {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
			writeStream(w, "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \""+typ+"\", \"message\": \"no\"}}\n\n")
		})
		_, err := collect(t, f.provider(t), streamReq(helloStream, true))
		assert.Equal(t, want, requireProviderError(t, err).Status, typ)
	}
}

// A tool call streamed without input_json_delta still has JSON arguments:
// its start's input, {} when that is empty.
func TestStreamToolCallWithoutFragments(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		writeStream(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_5","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"weather","input":{"city": "Paris"}}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}

event: message_stop
data: {"type":"message_stop"}

`)
	})
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		chunks, err := collect(t, p, streamReq(helloStream, false))
		require.NoError(t, err)
		a, _ := assemble(t, chunks)
		require.Len(t, a.calls, 2)
		assert.Equal(t, "{}", a.calls[0].args)
		assert.JSONEq(t, `{"city":"Paris"}`, a.calls[1].args)
		assert.Equal(t, "tool_calls", a.finish)
	})
}

// A stream cut after message_delta (the answer finished) but before
// message_stop ends as message_stop would have: usage when asked, no error.
func TestStreamCutAfterTheFinishEndsWell(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		writeStream(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_6","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":7,"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}

`)
	})
	providertest.Modes(t, f.provider(t), func(t *testing.T, p pluginapi.Provider) {
		chunks, err := collect(t, p, streamReq(helloStream, true))
		require.NoError(t, err)
		a, _ := assemble(t, chunks)
		assert.Equal(t, "Hi", a.content)
		assert.Equal(t, "stop", a.finish)
		assert.Equal(t, &pluginapi.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}, a.usage)
		assert.Equal(t, 1, a.usageChunks)
	})
}

// message_delta's usage replaces only the counts it carries: an
// input_tokens alone keeps message_start's cache counts.
func TestStreamDeltaUsageReplacesOnlyItsCounts(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		writeStream(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_7","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"cache_read_input_tokens":20,"cache_creation_input_tokens":4,"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":6,"output_tokens":3}}

event: message_stop
data: {"type":"message_stop"}

`)
	})
	chunks, err := collect(t, f.provider(t), streamReq(helloStream, true))
	require.NoError(t, err)
	_, parsed := assemble(t, chunks)
	u := parsed[len(parsed)-1].Usage
	require.NotNil(t, u)
	assert.EqualValues(t, 6+20+4, u.PromptTokens, "input 6 replaces 5; the cache counts stay")
	assert.EqualValues(t, 20, u.PromptTokensDetails.CachedTokens)
	assert.EqualValues(t, 4, u.CacheCreationInputTokens)
	assert.EqualValues(t, 3, u.CompletionTokens)
}
