package shape

import (
	"encoding/json"
	"sort"
	"strings"
)

// Reply is what a chat.completion body, or a stored stream
// (`{"chunks": [...]}`) put back together, answered in choice 0.
type Reply struct {
	Text    string
	HasText bool // a message with content, or a stream
	// ToolCall says the model called a tool (or a legacy function): an
	// artifact, which answers with text, must never stand in for that.
	ToolCall bool
}

// ReadReply reads a stored or live answer once, for its text and whether
// it called a tool.
func ReadReply(body []byte) Reply {
	type calls struct {
		ToolCalls    json.RawMessage `json:"tool_calls"`
		FunctionCall json.RawMessage `json:"function_call"`
	}
	var c struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				calls
			} `json:"message"`
		} `json:"choices"`
		Chunks []struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content *string `json:"content"`
					calls
				} `json:"delta"`
			} `json:"choices"`
		} `json:"chunks"`
	}
	if json.Unmarshal(body, &c) != nil {
		return Reply{}
	}
	called := func(k calls) bool {
		set := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" && string(raw) != "[]" }
		return set(k.ToolCalls) || set(k.FunctionCall)
	}
	var r Reply
	if len(c.Chunks) > 0 {
		var b strings.Builder
		for _, ch := range c.Chunks {
			for _, choice := range ch.Choices {
				r.ToolCall = r.ToolCall || called(choice.Delta.calls)
				if choice.Index == 0 && choice.Delta.Content != nil {
					b.WriteString(*choice.Delta.Content)
				}
			}
		}
		r.Text, r.HasText = b.String(), true
		return r
	}
	for _, ch := range c.Choices {
		r.ToolCall = r.ToolCall || called(ch.Message.calls)
	}
	if len(c.Choices) > 0 && c.Choices[0].Message.Content != nil {
		r.Text, r.HasText = *c.Choices[0].Message.Content, true
	}
	return r
}

// ResponseText is the text an answer gave, when it gave text and called no
// tool: what the learning loop can learn from or compare with.
func ResponseText(body []byte) (string, bool) {
	r := ReadReply(body)
	return r.Text, r.HasText && !r.ToolCall
}

// ToolCall is a tool call of a model's answer: the tool's name and its
// arguments as the model wrote them.
type ToolCall struct {
	Name      string
	Arguments string
}

// ToolCalls reads the tool calls of an answer as svc records it: a
// chat.completion (tool_calls, or the older function_call), or a stream's
// chunks (`{"chunks": [...]}`), whose calls arrive in pieces by index. An
// answer that cannot be read has none.
func ToolCalls(body []byte) []ToolCall {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		Index    int      `json:"index"`
		Function function `json:"function"`
	}
	var a struct {
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				ToolCalls    []call    `json:"tool_calls"`
				FunctionCall *function `json:"function_call"`
			} `json:"message"`
		} `json:"choices"`
		Chunks []struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					ToolCalls    []call    `json:"tool_calls"`
					FunctionCall *function `json:"function_call"`
				} `json:"delta"`
			} `json:"choices"`
		} `json:"chunks"`
	}
	if json.Unmarshal(body, &a) != nil {
		return nil
	}
	var out []ToolCall
	for _, ch := range a.Choices {
		for _, c := range ch.Message.ToolCalls {
			out = append(out, ToolCall{Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		if f := ch.Message.FunctionCall; f != nil {
			out = append(out, ToolCall{Name: f.Name, Arguments: f.Arguments})
		}
	}
	// A stream: a call's name comes in its first piece, its arguments in
	// all of them; a function_call is index -1 of its choice.
	type key struct{ choice, call int }
	streamed := map[key]*ToolCall{}
	for _, chunk := range a.Chunks {
		for _, ch := range chunk.Choices {
			pieces := ch.Delta.ToolCalls
			if f := ch.Delta.FunctionCall; f != nil {
				pieces = append(pieces, call{Index: -1, Function: *f})
			}
			for _, p := range pieces {
				k := key{ch.Index, p.Index}
				c := streamed[k]
				if c == nil {
					c = &ToolCall{}
					streamed[k] = c
				}
				c.Name += p.Function.Name
				c.Arguments += p.Function.Arguments
			}
		}
	}
	keys := make([]key, 0, len(streamed))
	for k := range streamed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].choice < keys[j].choice || keys[i].choice == keys[j].choice && keys[i].call < keys[j].call
	})
	for _, k := range keys {
		out = append(out, *streamed[k])
	}
	return out
}
