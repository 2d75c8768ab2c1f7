package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// readers holds the buffered readers of streams, 32 KiB each.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// readEvents reads a server-sent event stream and calls f with each
// event's name and data (several data lines joined by "\n"). Lines end in
// LF or CRLF; an event or line longer than limit is errTooLarge. It returns
// f's error, the reader's, or nil at EOF.
func readEvents(r io.Reader, limit int64, f func(event, data []byte) error) error {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() { br.Reset(nil); readers.Put(br) }()
	var event, data, long []byte
	lines := 0
	dispatch := func() error {
		if lines == 0 {
			event = event[:0]
			return nil
		}
		err := f(event, data)
		event, data, lines = event[:0], data[:0], 0
		return err
	}
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a long line: gather it
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				if int64(len(long)) > limit {
					return errTooLarge
				}
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return err
		}
		if int64(len(line)) > limit {
			return errTooLarge
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if derr := dispatch(); derr != nil || err == io.EOF {
				return derr
			}
			continue
		}
		if line[0] != ':' { // not a comment
			name, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(name) {
			case "event":
				event = append(event[:0], value...)
			case "data":
				if lines > 0 {
					data = append(data, '\n')
				}
				if int64(len(data)+len(value)) > limit {
					return errTooLarge
				}
				data = append(data, value...)
				lines++
			}
		}
		if err == io.EOF {
			return dispatch()
		}
	}
}

// ---- the events (https://docs.anthropic.com/en/docs/build-with-claude/streaming) ----

type streamEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string   `json:"id"`
		Model string   `json:"model"`
		Usage msgUsage `json:"usage"`
	} `json:"message"`
	Index        int        `json:"index"`
	ContentBlock *respBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *deltaUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// deltaUsage is message_delta's usage: only the counts present replace
// those message_start gave.
type deltaUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// ---- the chunks ----

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usageOut     `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int             `json:"index"`
	Delta        chunkDelta      `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type chunkDelta struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	ToolCalls []outToolCall `json:"tool_calls,omitempty"`
}

// toolBlock is a streamed tool_use block: its tool call's index, the input
// its start gave, and whether an argument fragment was sent.
type toolBlock struct {
	index int
	input json.RawMessage
	sent  bool
}

// streamTranslator turns the Messages API's events into
// chat.completion.chunks: message_start → the role chunk (sent with the
// first chunk that follows it); a text block's
// deltas → content; a tool_use block's start → a tool call (index, id,
// name) and its input_json_delta → argument fragments; message_delta →
// the finish chunk; message_stop → the usage-only chunk when asked; an
// error event → the error.
type streamTranslator struct {
	includeUsage bool
	created      int64
	send         func(pluginapi.ChatChunk) error
	sendErr      error // send's failure, returned as is

	id, model string
	usage     msgUsage
	roleSent  bool               // the role chunk, which comes first
	tools     map[int]*toolBlock // content block index → its tool call
	started   bool               // message_start came
	finished  bool               // message_delta's stop reason came
	stopped   bool
}

func (t *streamTranslator) event(p *Provider, name, data []byte) error {
	if t.stopped {
		return nil // after message_stop nothing more is expected
	}
	var ev streamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
			Message: "provider sent an unreadable stream event",
		}
	}
	if ev.Type == "" {
		ev.Type = string(name)
	}
	switch ev.Type {
	case "message_start":
		t.started = true
		if ev.Message != nil {
			t.id, t.model, t.usage = ev.Message.ID, ev.Message.Model, ev.Message.Usage
		}
		// The role chunk waits for the first content, tool call or finish
		// (emit): an error right after message_start (overloaded, say) is
		// then returned with nothing sent, and svc may still fall back.
	case "content_block_start":
		b := ev.ContentBlock
		if b == nil {
			return nil
		}
		switch b.Type {
		case "text":
			if b.Text != "" {
				return t.emit(chunkDelta{Content: &b.Text}, nil)
			}
		case "tool_use":
			if t.tools == nil {
				t.tools = make(map[int]*toolBlock, 2)
			}
			i := len(t.tools)
			t.tools[ev.Index] = &toolBlock{index: i, input: b.Input}
			tc := outToolCall{Index: &i, ID: b.ID, Type: "function"}
			tc.Function.Name = b.Name
			return t.emit(chunkDelta{ToolCalls: []outToolCall{tc}}, nil)
		}
	case "content_block_delta":
		d := ev.Delta
		if d == nil {
			return nil
		}
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				return t.emit(chunkDelta{Content: &d.Text}, nil)
			}
		case "input_json_delta":
			tb, ok := t.tools[ev.Index]
			if !ok || d.PartialJSON == "" {
				return nil
			}
			tb.sent = true
			tc := outToolCall{Index: &tb.index}
			tc.Function.Arguments = d.PartialJSON
			return t.emit(chunkDelta{ToolCalls: []outToolCall{tc}}, nil)
		}
		// thinking, signature and citation deltas have no chunk form
	case "content_block_stop":
		// A tool call whose input came whole in its start (or empty) has
		// no fragment: its arguments are that input, {} at least.
		if tb, ok := t.tools[ev.Index]; ok && !tb.sent {
			tb.sent = true
			tc := outToolCall{Index: &tb.index}
			tc.Function.Arguments = string(orEmptyObject(tb.input))
			return t.emit(chunkDelta{ToolCalls: []outToolCall{tc}}, nil)
		}
	case "message_delta":
		if u := ev.Usage; u != nil {
			// The counts are cumulative: each one present is the final one.
			setCount(&t.usage.OutputTokens, u.OutputTokens)
			setCount(&t.usage.InputTokens, u.InputTokens)
			setCount(&t.usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
			setCount(&t.usage.CacheReadInputTokens, u.CacheReadInputTokens)
		}
		if ev.Delta != nil && ev.Delta.StopReason != "" && !t.finished {
			t.finished = true
			reason := finishReason(ev.Delta.StopReason)
			return t.emit(chunkDelta{}, &reason)
		}
	case "message_stop":
		if !t.started || !t.finished {
			// The Messages API always opens with message_start and gives
			// its stop reason before message_stop: without them the answer
			// (and its usage) is not whole, whatever it says.
			missing := "a stop reason"
			if !t.started {
				missing = "message_start"
			}
			return &pluginapi.ProviderError{
				Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
				Message: "provider stream stopped without " + missing,
			}
		}
		t.stopped = true
		return t.end()
	case "error":
		typ, msg := "", ""
		if ev.Error != nil {
			typ, msg = ev.Error.Type, ev.Error.Message
		}
		return p.errorEvent(typ, msg)
	}
	// ping and event types added later are ignored, as the API asks.
	return nil
}

func setCount(dst *int64, v *int64) {
	if v != nil {
		*dst = *v
	}
}

// end sends the usage-only chunk when asked: the counts for the client,
// and for svc the usage it prices, none when a count is not believable.
func (t *streamTranslator) end() error {
	if !t.includeUsage {
		return nil
	}
	usage, counted := t.usage.out()
	c := chunk{ID: t.id, Object: "chat.completion.chunk", Created: t.created, Model: t.model, Choices: []chunkChoice{}, Usage: usage}
	return t.sendChunk(c, pluginapi.ChatChunk{Usage: &counted, UsageOnly: true})
}

// cut reports whether err is the connection breaking (not an error event,
// send's failure, an oversized event or the caller leaving).
func (t *streamTranslator) cut(ctx context.Context, err error) bool {
	var pe *pluginapi.ProviderError
	return ctx.Err() == nil && !errors.As(err, &pe) && !errors.Is(err, errTooLarge) &&
		(t.sendErr == nil || !errors.Is(err, t.sendErr))
}

// emit sends one delta, with a finish reason when it ends the choice,
// after the role chunk when none was sent yet.
func (t *streamTranslator) emit(d chunkDelta, finish *string) error {
	if !t.roleSent {
		t.roleSent = true
		empty := ""
		if err := t.emit(chunkDelta{Role: "assistant", Content: &empty}, nil); err != nil {
			return err
		}
	}
	c := chunk{ID: t.id, Object: "chat.completion.chunk", Created: t.created, Model: t.model,
		Choices: []chunkChoice{{Delta: d, Logprobs: rawNull, FinishReason: finish}}}
	return t.sendChunk(c, pluginapi.ChatChunk{})
}

// sendChunk sends c as out's data.
func (t *streamTranslator) sendChunk(c chunk, out pluginapi.ChatChunk) error {
	out.Data, _ = json.Marshal(c) // plain structs always marshal
	if err := t.send(out); err != nil {
		t.sendErr = err
		return err
	}
	return nil
}
