package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// FuzzTranslate checks that any body either is refused with a 400 naming
// what is wrong, or becomes a request the documented Messages API accepts:
// turns alternating, a max_tokens, tool results answering tool uses.
// Seeds: testdata/fuzz/FuzzTranslate, and the bodies below.
func FuzzTranslate(f *testing.F) {
	for _, seed := range []string{
		hello,
		`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}],"stop":"x","response_format":{"type":"json_object"}}`,
		`{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"t","content":"ok"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := translate(body, false)
		if err != nil {
			var pe *pluginapi.ProviderError
			if !errors.As(err, &pe) || pe.Status != 400 || pe.Type != typeInvalid || pe.Message == "" {
				t.Fatalf("refusal is not a 400 invalid_request_error: %#v", err)
			}
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("translated request does not encode: %v", err)
		}
		var wr wireRequest
		if err := json.Unmarshal(out, &wr); err != nil {
			t.Fatalf("translated request does not decode: %v", err)
		}
		if msg := wr.validate(); msg != "" && !toolResultOrphan(msg) {
			t.Fatalf("translated request is invalid upstream (%s): %s", msg, out)
		}
	})
}

// toolResultOrphan reports a tool result answering no earlier tool call:
// the caller's conversation, passed on for the upstream to judge.
func toolResultOrphan(msg string) bool {
	return strings.Contains(msg, "tool_result must answer")
}

// FuzzStream checks what any event stream an upstream sends becomes: no
// panic; an end that is nil, an oversized event or a ProviderError that
// does not carry the key; chunks a client can read (the role first, one
// finish reason at most, the usage-only chunk last and only when asked);
// and the same chunks whether its lines end in LF or CRLF.
// Seeds: testdata/fuzz/FuzzStream, the documented streams, and the ones below.
func FuzzStream(f *testing.F) {
	for _, name := range []string{"stream_text.sse", "stream_tool_use.sse"} {
		f.Add(string(testdata(f, name)), true)
	}
	for _, seed := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":-3}}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"sk-ant-test-SECRET-0123456789\"}}\n\n",
		"data: {\"type\":\"content_block_start\",\"index\":7,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{\"a\":1}}}\n\n" +
			"data: {\"type\":\"content_block_stop\",\"index\":7}\n\ndata: {\"type\":\"message_stop\"}\n\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}\n\n" +
			"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\ndata: {not json\n\n",
	} {
		f.Add(seed, false)
	}
	p, err := newProvider(pluginapi.ProviderConfig{BaseURL: "http://127.0.0.1:1", APIKey: testKey}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, stream string, includeUsage bool) {
		chunks, err := translateStream(p, stream, includeUsage)
		checkStreamEnd(t, err)
		checkChunks(t, chunks, includeUsage)
		if strings.Contains(stream, "\r") {
			return
		}
		crlf, crlfErr := translateStream(p, strings.ReplaceAll(stream, "\n", "\r\n"), includeUsage)
		if (err == nil) != (crlfErr == nil) {
			t.Fatalf("CRLF lines end with %v, LF lines with %v", crlfErr, err)
		}
		if len(crlf) != len(chunks) {
			t.Fatalf("CRLF lines give %d chunks, LF lines %d", len(crlf), len(chunks))
		}
		for i := range chunks {
			if string(crlf[i].Data) != string(chunks[i].Data) {
				t.Fatalf("chunk %d: CRLF %s, LF %s", i, crlf[i].Data, chunks[i].Data)
			}
		}
	})
}

// translateStream reads stream as the plugin reads an upstream's, with a
// small event limit, and returns the chunks it sent.
func translateStream(p *Provider, stream string, includeUsage bool) ([]pluginapi.ChatChunk, error) {
	var chunks []pluginapi.ChatChunk
	tr := &streamTranslator{includeUsage: includeUsage, created: 1, send: func(c pluginapi.ChatChunk) error {
		chunks = append(chunks, c)
		return nil
	}}
	err := readEvents(strings.NewReader(stream), 4<<10, func(event, data []byte) error {
		return tr.event(p, event, data)
	})
	return chunks, err
}

func checkStreamEnd(t *testing.T, err error) {
	t.Helper()
	var pe *pluginapi.ProviderError
	switch {
	case err == nil, errors.Is(err, errTooLarge):
	case errors.As(err, &pe):
		if pe.Status < 400 || pe.Message == "" {
			t.Fatalf("a stream's failure is no error status: %#v", pe)
		}
		if strings.Contains(pe.Message, testKey) {
			t.Fatalf("the key is in the error: %s", pe.Message)
		}
	default:
		t.Fatalf("a stream ends with %T %v", err, err)
	}
}

func checkChunks(t *testing.T, chunks []pluginapi.ChatChunk, includeUsage bool) {
	t.Helper()
	finishes := 0
	for i, c := range chunks {
		var cj chunkJSON
		if err := json.Unmarshal(c.Data, &cj); err != nil {
			t.Fatalf("chunk %d is not JSON: %v: %s", i, err, c.Data)
		}
		if cj.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %d is a %q", i, cj.Object)
		}
		if c.UsageOnly {
			if !includeUsage || i != len(chunks)-1 || len(cj.Choices) != 0 || cj.Usage == nil || c.Usage == nil {
				t.Fatalf("usage chunk %d of %d (asked: %v): %s", i, len(chunks), includeUsage, c.Data)
			}
			unknown := *c.Usage == pluginapi.Usage{} // a count svc is not to believe
			if !unknown && cj.Usage.TotalTokens != c.Usage.TotalTokens || cj.Usage.TotalTokens != cj.Usage.PromptTokens+cj.Usage.CompletionTokens {
				t.Fatalf("usage chunk's counts disagree: %s against %+v", c.Data, *c.Usage)
			}
			continue
		}
		if len(cj.Choices) != 1 {
			t.Fatalf("chunk %d has %d choices: %s", i, len(cj.Choices), c.Data)
		}
		if i == 0 && cj.Choices[0].Delta.Role != "assistant" {
			t.Fatalf("the first chunk is not the role's: %s", c.Data)
		}
		if cj.Choices[0].FinishReason != nil {
			finishes++
		}
	}
	if finishes > 1 {
		t.Fatalf("%d finish reasons", finishes)
	}
}

// FuzzMessage checks that any body a 2xx answer carries is either a
// ProviderError without the key, or a chat.completion a client can read:
// one choice, a finish reason of the four, tool arguments that are JSON,
// and usage whose total is its parts' and svc's count, unless svc is not
// to believe it.
// Seeds: testdata/fuzz/FuzzMessage, the documented messages, and the ones below.
func FuzzMessage(f *testing.F) {
	for _, name := range []string{"message.json", "message_cached.json", "message_tool_use.json", "error_overloaded.json"} {
		f.Add(testdata(f, name))
	}
	for _, seed := range []string{
		`{"id":"m","content":[{"type":"tool_use","id":"t","name":"f"}],"stop_reason":"weird","usage":{"input_tokens":-1,"cache_read_input_tokens":9223372036854775807}}`,
		`{"type":"error","error":{"type":"api_error","message":"key sk-ant-test-SECRET-0123456789 refused"}}`,
		`[{"id":"m"}]`,
	} {
		f.Add([]byte(seed))
	}
	p, err := newProvider(pluginapi.ProviderConfig{BaseURL: "http://127.0.0.1:1", APIKey: testKey}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, err := p.readMessage(body)
		if err != nil {
			checkStreamEnd(t, err)
			if errors.Is(err, errTooLarge) {
				t.Fatal("a body read whole is not too large")
			}
			return
		}
		out, usage := completionOf(msg, 1)
		c := decodeCompletion(t, out)
		var u struct { // exact, where completionJSON's map would read floats
			Usage struct {
				PromptTokens     int64 `json:"prompt_tokens"`
				CompletionTokens int64 `json:"completion_tokens"`
				TotalTokens      int64 `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(out, &u); err != nil {
			t.Fatalf("the completion is not JSON: %v: %s", err, out)
		}
		if c.Object != "chat.completion" || len(c.Choices) != 1 {
			t.Fatalf("not one chat.completion choice: %s", out)
		}
		switch c.Choices[0].FinishReason {
		case "stop", "length", "tool_calls", "content_filter":
		default:
			t.Fatalf("finish reason %q", c.Choices[0].FinishReason)
		}
		for _, tc := range c.Choices[0].Message.ToolCalls {
			if !json.Valid([]byte(tc.Function.Arguments)) {
				t.Fatalf("tool arguments are not JSON: %q", tc.Function.Arguments)
			}
		}
		unknown := usage == pluginapi.Usage{} // a count svc is not to believe
		if u.Usage.TotalTokens != u.Usage.PromptTokens+u.Usage.CompletionTokens || !unknown && usage.TotalTokens != u.Usage.TotalTokens {
			t.Fatalf("usage %+v in the body, %+v counted", u.Usage, usage)
		}
	})
}
