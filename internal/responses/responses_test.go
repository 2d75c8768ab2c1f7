package responses_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/responses"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func chat(t *testing.T, body string, history []json.RawMessage, refs map[string]responses.Item) map[string]any {
	t.Helper()
	r, err := responses.Parse([]byte(body))
	require.NoError(t, err)
	b, err := r.Chat(history, refs)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestChatRequestFromResponsesRequest(t *testing.T) {
	m := chat(t, `{"model":"gpt-4o","instructions":"Be brief.","input":"Hi","max_output_tokens":64,"temperature":0.3,
		"top_p":0.8,"user":"u","metadata":{"a":"b"},"store":true,"parallel_tool_calls":false,"reasoning":{"effort":"low"},
		"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true}],
		"tool_choice":{"type":"function","name":"f"},
		"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}}`, nil, nil)
	want := `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],
		"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":true}}],
		"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,
		"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}},
		"max_tokens":64,"temperature":0.3,"top_p":0.8,"user":"u","reasoning_effort":"low"}`
	b, _ := json.Marshal(m)
	assert.JSONEq(t, want, string(b), "metadata and store stay with svc")
}

func TestChatRequestStreamsWithUsage(t *testing.T) {
	m := chat(t, `{"model":"m","input":"Hi","stream":true,"parallel_tool_calls":true}`, nil, nil)
	assert.Equal(t, true, m["stream"])
	assert.Equal(t, map[string]any{"include_usage": true}, m["stream_options"])
	assert.NotContains(t, m, "parallel_tool_calls", "chat refuses it without tools")
}

func TestChatMessagesFromInputItems(t *testing.T) {
	m := chat(t, `{"model":"m","input":[
		{"role":"system","content":"S"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://x/i.png","detail":"low"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me check.","annotations":[]}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"function_call","call_id":"c2","name":"g","arguments":"{\"x\":1}"},
		{"type":"function_call_output","call_id":"c1","output":"one"},
		{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"tw"},{"type":"input_text","text":"o"}]},
		{"type":"reasoning","id":"rs_1","summary":[]},
		{"role":"user","content":[{"type":"input_text","text":"thanks"}]}]}`, nil, nil)
	b, _ := json.Marshal(m["messages"])
	assert.JSONEq(t, `[
		{"role":"system","content":"S"},
		{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/i.png","detail":"low"}}]},
		{"role":"assistant","content":"Let me check.","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},
			{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"x\":1}"}}]},
		{"role":"tool","content":"one","tool_call_id":"c1"},
		{"role":"tool","content":"two","tool_call_id":"c2"},
		{"role":"user","content":"thanks"}]`, string(b))
}

func TestHistoryAndReferences(t *testing.T) {
	history := []json.RawMessage{json.RawMessage(`{"role":"system","content":"old"}`), json.RawMessage(`{"role":"user","content":"q"}`),
		json.RawMessage(`{"role":"assistant","content":"a"}`)}
	m := chat(t, `{"model":"m","previous_response_id":"resp_x","input":"next"}`, history, nil)
	b, _ := json.Marshal(m["messages"])
	assert.JSONEq(t, `[{"role":"system","content":"old"},{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"next"}]`, string(b))

	m = chat(t, `{"model":"m","previous_response_id":"resp_x","instructions":"new","input":"next"}`, history, nil)
	b, _ = json.Marshal(m["messages"])
	assert.JSONEq(t, `[{"role":"system","content":"new"},{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"next"}]`, string(b),
		"new instructions replace the earlier ones")

	text := "hello"
	refs := map[string]responses.Item{
		"msg_1": {Type: "message", ID: "msg_1", Role: "assistant", Content: []responses.Part{{Type: "output_text", Text: &text}}},
		"fc_2":  {Type: "function_call", ID: "fc_2", CallID: "c", Name: "f", Arguments: "{}"},
	}
	m = chat(t, `{"model":"m","input":[{"role":"user","content":"q"},{"type":"item_reference","id":"msg_1"},{"id":"fc_2"},
		{"type":"function_call_output","call_id":"c","output":"r"}]}`, nil, refs)
	b, _ = json.Marshal(m["messages"])
	assert.JSONEq(t, `[{"role":"user","content":"q"},{"role":"assistant","content":"hello","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","content":"r","tool_call_id":"c"}]`, string(b))

	r, err := responses.Parse([]byte(`{"model":"m","input":[{"type":"item_reference","id":"msg_gone"}]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"msg_gone"}, r.References)
	_, err = r.Chat(nil, refs)
	assert.Equal(t, errs.Invalid, errs.KindOf(err))
}

func TestParseRefusesWhatChatCannotCarry(t *testing.T) {
	for _, body := range []string{
		`[]`, `{"model":""}`, `{"model":"m","input":{}}`, `{"model":"m","input":"x","tools":[{"type":"file_search"}]}`,
		`{"model":"m","input":"x","tools":[{"type":"function"}]}`, `{"model":"m","input":"x","tool_choice":{"type":"mcp"}}`,
		`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`,
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`,
		`{"model":"m","input":"x","Model":"n"}`,
	} {
		r, err := responses.Parse([]byte(body))
		if err == nil {
			_, err = r.Chat(nil, nil)
		}
		require.Error(t, err, body)
		assert.Equal(t, errs.Invalid, errs.KindOf(err), body)
	}
}

func TestResponseFromCompletion(t *testing.T) {
	r, err := responses.Parse([]byte(`{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"max_output_tokens":9}`))
	require.NoError(t, err)
	resp := r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 7)
	require.NoError(t, responses.FromCompletion(&resp, []byte(`{"model":"m-2024","choices":[{"message":{"role":"assistant","content":"Checking.",
		"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`)))
	b, err := json.Marshal(resp)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"resp_aaaaaaaaaaaaaaaaaaaa","object":"response","access_programs":null,"created_at":7,"status":"completed","background":false,
		"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":9,"metadata":{},"model":"m-2024",
		"output":[
			{"type":"message","id":"msg_aaaaaaaaaaaaaaaaaaaa0","status":"completed","role":"assistant",
			 "content":[{"type":"output_text","text":"Checking.","annotations":[],"logprobs":[]}]},
			{"type":"function_call","id":"fc_aaaaaaaaaaaaaaaaaaaa1","call_id":"call_1","name":"f","arguments":"{\"a\":1}","status":"completed"}],
		"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,
		"temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[{"type":"function","name":"f","description":null,"parameters":null,"strict":null}],
		"top_p":null,"truncation":"disabled","user":null,
		"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":5,
		         "output_tokens_details":{"reasoning_tokens":2},"total_tokens":15}}`, string(b))

	run, index, ok := responses.ItemRun("fc_aaaaaaaaaaaaaaaaaaaa1")
	assert.True(t, ok)
	assert.Equal(t, "run_aaaaaaaaaaaaaaaaaaaa", run)
	assert.Equal(t, 1, index)
	for _, bad := range []string{"fc_short", "rs_aaaaaaaaaaaaaaaaaaaa1", "msg_aaaaaaaaaaaaaaaaaaaa01", "msg_aaaaaaaaaaaaaaaaaaaa-1", "msg_aaaaaaaaaaaaaaaaaaaa"} {
		_, _, ok := responses.ItemRun(bad)
		assert.False(t, ok, bad)
	}
}

func TestResponseStopsIncompleteAndRefuses(t *testing.T) {
	r, err := responses.Parse([]byte(`{"model":"m","input":"x"}`))
	require.NoError(t, err)
	resp := r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 7)
	require.NoError(t, responses.FromCompletion(&resp, []byte(`{"choices":[{"message":{"content":"Once upon"},"finish_reason":"length"}]}`)))
	assert.Equal(t, "incomplete", resp.Status)
	assert.Equal(t, "max_output_tokens", resp.IncompleteDetails.Reason)
	assert.Equal(t, "incomplete", resp.Output[0].Status)
	require.NotNil(t, resp.Usage, "usage is always there, zero when the upstream gave none")
	assert.Zero(t, resp.Usage.TotalTokens)

	resp = r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 7)
	require.NoError(t, responses.FromCompletion(&resp, []byte(`{"choices":[{"message":{"content":null,"refusal":"No."},"finish_reason":"stop"}]}`)))
	b, _ := json.Marshal(resp.Output)
	assert.JSONEq(t, `[{"type":"message","id":"msg_aaaaaaaaaaaaaaaaaaaa0","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}]`, string(b))
}

// An empty text beside tool calls is no message item, as in a stream.
func TestResponseOfCallsWithEmptyContentHasNoMessage(t *testing.T) {
	r, err := responses.Parse([]byte(`{"model":"m","input":"x"}`))
	require.NoError(t, err)
	resp := r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 7)
	require.NoError(t, responses.FromCompletion(&resp, []byte(`{"choices":[{"message":{"role":"assistant","content":"",
		"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)))
	require.Len(t, resp.Output, 1)
	assert.Equal(t, "function_call", resp.Output[0].Type)
	assert.Equal(t, "fc_aaaaaaaaaaaaaaaaaaaa0", resp.Output[0].ID)

	_, _, streamed := events(t, `{"choices":[{"delta":{"role":"assistant","content":"","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
	a, _ := json.Marshal(resp.Output)
	b, _ := json.Marshal(streamed.Output)
	assert.JSONEq(t, string(b), string(a), "the streamed and the whole answer agree")
}

// events runs chunks through a Stream and returns the events' types and data.
func events(t *testing.T, chunks ...string) ([]string, []map[string]any, responses.Response) {
	t.Helper()
	r, err := responses.Parse([]byte(`{"model":"m","input":"x","stream":true}`))
	require.NoError(t, err)
	var names []string
	var data []map[string]any
	s := responses.NewStream(r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 7), func(typ string, b []byte) error {
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		assert.Equal(t, typ, m["type"])
		assert.InDelta(t, float64(len(names)), m["sequence_number"], 0)
		names, data = append(names, typ), append(data, m)
		return nil
	})
	require.NoError(t, s.Start())
	for _, c := range chunks {
		require.NoError(t, s.Chunk([]byte(c)))
	}
	require.NoError(t, s.Finish())
	return names, data, s.Response()
}

func TestStreamOfTextThenCalls(t *testing.T) {
	names, data, resp := events(t,
		`{"choices":[{"delta":{"role":"assistant","content":""}}]}`,
		`{"choices":[{"delta":{"content":"Let me "}}]}`,
		`{"choices":[{"delta":{"content":"look."}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
		`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
		`not json`)
	assert.Equal(t, []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta",
		"response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}, names)
	assert.Equal(t, "Let me look.", data[6]["text"])
	assert.Equal(t, "fc_aaaaaaaaaaaaaaaaaaaa1", data[13]["item_id"], "a delta finds its call by the chat index")
	assert.Equal(t, `{"a":1}`, data[14]["arguments"])
	assert.InDelta(t, 2, data[16]["output_index"], 0)
	assert.Equal(t, "completed", resp.Status)
	require.Len(t, resp.Output, 3)
	assert.Equal(t, "Let me look.", *resp.Output[0].Content[0].Text)
	assert.Equal(t, `{"a":1}`, resp.Output[1].Arguments)
	assert.Equal(t, "c2", resp.Output[2].CallID)
	assert.Equal(t, int64(7), resp.Usage.TotalTokens)
}

// An upstream that numbers no tool call starts each with its id: two such
// calls are two function_call items, not one with both arguments.
func TestStreamOfCallsWithoutIndex(t *testing.T) {
	_, _, resp := events(t,
		`{"choices":[{"delta":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`)
	require.Len(t, resp.Output, 2)
	assert.Equal(t, "c1", resp.Output[0].CallID)
	assert.Equal(t, `{"a":1}`, resp.Output[0].Arguments)
	assert.Equal(t, "c2", resp.Output[1].CallID)
	assert.Equal(t, `{}`, resp.Output[1].Arguments)
}

// A refusal streams as refusal events and a refusal part of the message,
// after the text that came before it.
func TestStreamOfRefusal(t *testing.T) {
	names, data, resp := events(t,
		`{"choices":[{"delta":{"role":"assistant","content":"Well"}}]}`,
		`{"choices":[{"delta":{"refusal":"I can't "}}]}`,
		`{"choices":[{"delta":{"refusal":"help with that."}}]}`,
		`{"choices":[{"delta":{},"finish_reason":"stop"}]}`)
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta",
		"response.content_part.added", "response.refusal.delta", "response.refusal.delta",
		"response.output_text.done", "response.content_part.done",
		"response.refusal.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}, names)
	assert.Equal(t, map[string]any{"type": "refusal", "refusal": ""}, data[5]["part"])
	assert.InDelta(t, 1, data[6]["content_index"], 0)
	assert.Equal(t, "I can't ", data[6]["delta"])
	assert.Equal(t, "msg_aaaaaaaaaaaaaaaaaaaa0", data[7]["item_id"])
	assert.Equal(t, "I can't help with that.", data[10]["refusal"])
	assert.InDelta(t, 1, data[10]["content_index"], 0)
	assert.Equal(t, map[string]any{"type": "refusal", "refusal": "I can't help with that."}, data[11]["part"])
	require.Len(t, resp.Output, 1)
	out, _ := json.Marshal(resp.Output)
	assert.JSONEq(t, `[{"type":"message","id":"msg_aaaaaaaaaaaaaaaaaaaa0","status":"completed","role":"assistant","content":[
		{"type":"output_text","text":"Well","annotations":[],"logprobs":[]},{"type":"refusal","refusal":"I can't help with that."}]}]`, string(out))

	// A refusal alone is a message with the refusal part only, as a whole answer has it.
	_, _, resp = events(t, `{"choices":[{"delta":{"refusal":"No."},"finish_reason":"stop"}]}`)
	out, _ = json.Marshal(resp.Output)
	assert.JSONEq(t, `[{"type":"message","id":"msg_aaaaaaaaaaaaaaaaaaaa0","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}]`, string(out))
}

func TestStreamOfNothingIsAnEmptyMessage(t *testing.T) {
	names, data, resp := events(t, `{"choices":[{"delta":{},"finish_reason":"length"}]}`)
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.incomplete"}, names)
	assert.Equal(t, "incomplete", resp.Status)
	assert.Equal(t, "incomplete", data[7]["item"].(map[string]any)["status"], "the item done says what the response says of it")
}

// An answer cut short leaves the item it stopped in incomplete, streamed
// or not, and the items before it whole; each stream item's done event
// says what the response says of it.
func TestACutAnswerLeavesItsLastItemIncomplete(t *testing.T) {
	r, err := responses.Parse([]byte(`{"model":"m","input":"x"}`))
	require.NoError(t, err)
	resp := r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 7)
	require.NoError(t, responses.FromCompletion(&resp, []byte(`{"choices":[{"message":{"content":"Let me look.",
		"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"q\":"}}]},"finish_reason":"length"}]}`)))
	require.Len(t, resp.Output, 2)
	assert.Equal(t, []string{"completed", "incomplete"}, []string{resp.Output[0].Status, resp.Output[1].Status})

	names, data, streamed := events(t, `{"choices":[{"delta":{"content":"Let me look."}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"q\":"}}]},"finish_reason":"length"}]}`)
	assert.Equal(t, "response.incomplete", names[len(names)-1])
	var done []string
	for i, n := range names {
		if n == "response.output_item.done" {
			done = append(done, data[i]["item"].(map[string]any)["status"].(string))
		}
	}
	assert.Equal(t, []string{"completed", "incomplete"}, done)
	require.Len(t, streamed.Output, 2)
	assert.Equal(t, []string{"completed", "incomplete"}, []string{streamed.Output[0].Status, streamed.Output[1].Status})
}

func TestStoredRebuildsTheResponseAndItsConversation(t *testing.T) {
	req := `{"model":"m","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
		"tool_choice":{"type":"function","function":{"name":"f"}},"max_tokens":5,"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{}}}}`
	for name, answer := range map[string]string{
		"completion": `{"choices":[{"message":{"content":"a","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		"stream": `{"object":"chat.completion.stream","chunks":[{"choices":[{"delta":{"content":"a"}}]},
			{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]},
			{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			resp, history, err := responses.Stored(responses.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa", CreatedAt: 9, Model: "m", Succeeded: true,
				Request: []byte(req), Response: []byte(answer)})
			require.NoError(t, err)
			assert.Equal(t, "resp_aaaaaaaaaaaaaaaaaaaa", resp.ID)
			assert.Equal(t, "completed", resp.Status)
			require.Len(t, resp.Output, 2)
			assert.Equal(t, "fc_aaaaaaaaaaaaaaaaaaaa1", resp.Output[1].ID)
			assert.Equal(t, int64(3), resp.Usage.TotalTokens)
			assert.JSONEq(t, `{"type":"function","name":"f"}`, string(resp.ToolChoice))
			assert.JSONEq(t, `{"type":"json_schema","name":"n","schema":{}}`, string(resp.Text.Format))
			assert.Equal(t, 5, *resp.MaxOutputTokens)
			tools, _ := json.Marshal(resp.Tools)
			assert.JSONEq(t, `[{"type":"function","name":"f","description":null,"parameters":{"type":"object"},"strict":null}]`, string(tools))
			h, _ := json.Marshal(history)
			assert.JSONEq(t, `[{"role":"user","content":"q"},{"role":"assistant","content":"a","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]`, string(h))
		})
	}
	resp, history, err := responses.Stored(responses.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa", Request: []byte(req), ErrorCode: "error", Error: "upstream down"})
	require.NoError(t, err)
	assert.Equal(t, "failed", resp.Status)
	assert.Equal(t, "upstream down", resp.Error.Message)
	assert.Nil(t, history)
}

// The tools a response echoes read back the same from its run: every
// field present, whether the request gave it or not.
func TestStoredToolsAreTheToolsAnswered(t *testing.T) {
	r, err := responses.Parse([]byte(`{"model":"m","input":"q","tools":[{"type":"function","name":"f"},
		{"type":"function","name":"g","description":"G.","parameters":{"type":"object","properties":{}},"strict":true}]}`))
	require.NoError(t, err)
	chatBody, err := r.Chat(nil, nil)
	require.NoError(t, err)
	stored, _, err := responses.Stored(responses.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa", Succeeded: true, Request: chatBody,
		Response: []byte(`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}]}`)})
	require.NoError(t, err)
	answered, _ := json.Marshal(r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 0).Tools)
	readBack, _ := json.Marshal(stored.Tools)
	assert.JSONEq(t, `[{"type":"function","name":"f","description":null,"parameters":null,"strict":null},
		{"type":"function","name":"g","description":"G.","parameters":{"type":"object","properties":{}},"strict":true}]`, string(answered))
	assert.JSONEq(t, string(answered), string(readBack))
}

// The instructions, metadata, previous_response_id and store read back as
// the request gave them, and the input items are the request's own input,
// not the instructions or the earlier conversation.
func TestStoredKeepsTheOriginAndInputItems(t *testing.T) {
	r, err := responses.Parse([]byte(`{"model":"m","instructions":[{"role":"developer","content":"Be brief."}],
		"metadata":{"k":"v"},"store":false,"previous_response_id":"resp_bbbbbbbbbbbbbbbbbbbb",
		"input":[{"role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_image","image_url":"https://x/i.png","detail":"auto"}]},
		{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}]}`))
	require.NoError(t, err)
	history := []json.RawMessage{json.RawMessage(`{"role":"system","content":"old"}`), json.RawMessage(`{"role":"user","content":"earlier"}`),
		json.RawMessage(`{"role":"assistant","content":"before"}`)}
	chatBody, err := r.Chat(history, nil)
	require.NoError(t, err)
	run := responses.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa", Succeeded: true, Request: chatBody, Origin: r.Origin(),
		Response: []byte(`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}]}`)}
	resp, _, err := responses.Stored(run)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"role":"developer","content":"Be brief."}]`, string(resp.Instructions))
	assert.Equal(t, map[string]string{"k": "v"}, resp.Metadata)
	require.NotNil(t, resp.PreviousResponseID)
	assert.Equal(t, "resp_bbbbbbbbbbbbbbbbbbbb", *resp.PreviousResponseID)
	assert.False(t, resp.Store)

	items, err := responses.InputItems(run)
	require.NoError(t, err)
	b, _ := json.Marshal(items)
	assert.JSONEq(t, `[
		{"type":"message","id":"msg_aaaaaaaaaaaaaaaaaaaain0","status":"completed","role":"user",
		 "content":[{"type":"input_text","text":"q"},{"type":"input_image","image_url":"https://x/i.png","detail":"auto"}]},
		{"type":"function_call","id":"fc_aaaaaaaaaaaaaaaaaaaain1","status":"completed","call_id":"c","name":"f","arguments":"{}"},
		{"type":"function_call_output","id":"fco_aaaaaaaaaaaaaaaaaaaain2","status":"completed","call_id":"c","output":"ok"}]`, string(b))

	// A run that kept no origin reads back with the defaults; its input is every message.
	plain, err := responses.Parse([]byte(`{"model":"m","input":"hi"}`))
	require.NoError(t, err)
	chatBody, err = plain.Chat(nil, nil)
	require.NoError(t, err)
	assert.Nil(t, plain.Origin(), "nothing to keep")
	run = responses.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa", Succeeded: true, Request: chatBody, Response: run.Response}
	resp, _, err = responses.Stored(run)
	require.NoError(t, err)
	assert.Equal(t, "null", string(resp.Instructions))
	assert.Nil(t, resp.PreviousResponseID)
	assert.True(t, resp.Store)
	items, err = responses.InputItems(run)
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "hi", (*items[0].Content)[0].Text)
}

// Input items have the shapes of the official SDKs' types: a file part
// flat, an image's detail always there, a message's content always a list.
func TestInputItemsShapes(t *testing.T) {
	run := responses.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa", Succeeded: true, Request: []byte(`{"model":"m","messages":[
		{"role":"user","content":[{"type":"file","file":{"file_id":"file-1","filename":"a.pdf"}},
			{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"b.pdf"}},
			{"type":"image_url","image_url":{"url":"https://x/i.png"}},
			{"type":"image_url","image_url":{"url":"https://x/j.png","detail":"high"}}]},
		{"role":"user","content":[]}]}`)}
	items, err := responses.InputItems(run)
	require.NoError(t, err)
	b, _ := json.Marshal(items)
	assert.JSONEq(t, `[
		{"type":"message","id":"msg_aaaaaaaaaaaaaaaaaaaain0","status":"completed","role":"user","content":[
			{"type":"input_file","file_id":"file-1","filename":"a.pdf"},
			{"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0=","filename":"b.pdf"},
			{"type":"input_image","image_url":"https://x/i.png","detail":"auto"},
			{"type":"input_image","image_url":"https://x/j.png","detail":"high"}]},
		{"type":"message","id":"msg_aaaaaaaaaaaaaaaaaaaain1","status":"completed","role":"user","content":[]}]`, string(b))
}

// A stored origin that does not read back is left out: the run is still
// the response it answered.
func TestStoredWithUnreadableOrigin(t *testing.T) {
	run := responses.Run{ID: "run_aaaaaaaaaaaaaaaaaaaa", Succeeded: true, Origin: []byte(`{"metadata":"not a map","input_from":1}`),
		Request:  []byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`),
		Response: []byte(`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}]}`)}
	resp, _, err := responses.Stored(run)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{}, resp.Metadata)
	items, err := responses.InputItems(run)
	require.NoError(t, err)
	assert.Len(t, items, 2, "every message is input when the boundary is unknown")
	assert.Error(t, responses.CheckOrigin(run.Origin))
}

func TestListInputItemsPages(t *testing.T) {
	var items []responses.InputItem
	for _, id := range []string{"a", "b", "c", "d"} {
		items = append(items, responses.InputItem{Type: "message", ID: id})
	}
	ids := func(p responses.Page[responses.InputItem]) []string {
		var out []string
		for _, it := range p.Data {
			out = append(out, it.ID)
		}
		return out
	}
	p := responses.ListInputItems(items, "desc", "", 2)
	assert.Equal(t, []string{"d", "c"}, ids(p))
	assert.True(t, p.HasMore)
	assert.Equal(t, "d", *p.FirstID)
	assert.Equal(t, "c", *p.LastID)
	p = responses.ListInputItems(items, "desc", "c", 2)
	assert.Equal(t, []string{"b", "a"}, ids(p))
	assert.False(t, p.HasMore)
	p = responses.ListInputItems(items, "asc", "b", 20)
	assert.Equal(t, []string{"c", "d"}, ids(p))
	assert.Equal(t, "a", items[0].ID, "desc order leaves the items as they are")
	p = responses.ListInputItems(items, "asc", "zz", 20)
	assert.Empty(t, p.Data)
	assert.Nil(t, p.FirstID)
	b, _ := json.Marshal(p)
	assert.JSONEq(t, `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}`, string(b))
	b, _ = json.Marshal(responses.ListInputItems(nil, "asc", "", 20))
	assert.JSONEq(t, `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}`, string(b))
}

// FuzzParse: no request body makes Parse or Chat panic, and whatever they
// accept becomes a chat request that is JSON.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "requests", "*.json"))
	require.NoError(f, err)
	require.NotEmpty(f, seeds)
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	text := "x"
	refs := map[string]responses.Item{"msg_aaaaaaaaaaaaaaaaaaaa0": {Type: "message", Content: []responses.Part{{Type: "output_text", Text: &text}}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := responses.Parse(body)
		if err != nil {
			if errs.KindOf(err) != errs.Invalid {
				t.Fatalf("%s: %v is not a validation error", body, err)
			}
			return
		}
		out, err := r.Chat([]json.RawMessage{json.RawMessage(`{"role":"system","content":"s"}`)}, refs)
		if err != nil {
			if errs.KindOf(err) != errs.Invalid {
				t.Fatalf("%s: %v is not a validation error", body, err)
			}
			return
		}
		if !json.Valid(out) || !strings.Contains(string(out), `"messages":[`) {
			t.Fatalf("%s became %s", body, out)
		}
	})
}

// A usage that does not read, or that no provider could mean, is no usage
// in the response (zeros, as when the upstream gave none), whole or
// streamed; the answer around it reads all the same, and no count svc adds
// up overflows.
func TestAnUpstreamUsageNotToBelieveIsNone(t *testing.T) {
	for name, usage := range map[string]string{
		"floats":    `{"prompt_tokens":12.5,"completion_tokens":3.7,"total_tokens":16.2}`,
		"strings":   `{"prompt_tokens":"12","completion_tokens":"3"}`,
		"negative":  `{"prompt_tokens":-1000000,"completion_tokens":5,"total_tokens":-999995}`,
		"overflow":  `{"prompt_tokens":4611686018427387904,"completion_tokens":4611686018427387904}`,
		"cached":    `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":-4}}`,
		"too large": `{"prompt_tokens":1e300}`,
	} {
		t.Run(name, func(t *testing.T) {
			r, err := responses.Parse([]byte(`{"model":"m","input":"x"}`))
			require.NoError(t, err)
			resp := r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 7)
			require.NoError(t, responses.FromCompletion(&resp, []byte(`{"model":"m","choices":[{"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":`+usage+`}`)))
			assert.Equal(t, &responses.Usage{}, resp.Usage)
			require.NotEmpty(t, resp.Output)

			_, _, streamed := events(t, `{"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}]}`, `{"choices":[],"usage":`+usage+`}`)
			assert.Equal(t, &responses.Usage{}, streamed.Usage)
		})
	}
}

// A stream whose text passes what svc holds to translate it fails, as the
// provider's doing, rather than grow without bound.
func TestAStreamPastWhatSvcHoldsFails(t *testing.T) {
	r, err := responses.Parse([]byte(`{"model":"m","input":"x","stream":true}`))
	require.NoError(t, err)
	s := responses.NewStream(r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 7), func(string, []byte) error { return nil })
	require.NoError(t, s.Start())
	chunk := []byte(`{"choices":[{"delta":{"content":"` + strings.Repeat("a", 1<<20) + `"}}]}`)
	for range responses.MaxHeld >> 20 {
		require.NoError(t, s.Chunk(chunk))
	}
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, s.Chunk(chunk), &pe)
	assert.Equal(t, "upstream_response_too_large", pe.Code)
	assert.Equal(t, 502, pe.Status)
}

// A field of the wrong type is named where it is: an input item's field
// by the item's index, a metadata value as metadata's.
func TestParseNamesTheFieldOfTheWrongType(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"item_reference","id":5}]}`: "Invalid type for 'input[1].id': expected a string.",
		`{"model":"m","input":[7]}`:                          "Invalid 'input[0]': expected an input item (an object).",
		`{"model":"m","input":"hi","metadata":{"a":5}}`:      "Invalid type for 'metadata': expected an object whose values are strings.",
		`{"model":"m","input":"hi","max_output_tokens":"9"}`: "Invalid type for 'max_output_tokens': expected a number.",
	} {
		_, err := responses.Parse([]byte(body))
		require.Error(t, err, body)
		assert.Equal(t, want, errs.Public(err), body)
	}
}
