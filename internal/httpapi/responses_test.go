package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
)

// apiResponse is the part of a Responses API response the tests read.
type apiResponse struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Model              string          `json:"model"`
	Instructions       *string         `json:"instructions"`
	PreviousResponseID *string         `json:"previous_response_id"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              []struct {
		Type, Name string
	} `json:"tools"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Annotations []any  `json:"annotations"`
		} `json:"content"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"output"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		TotalTokens        int64 `json:"total_tokens"`
		InputTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

func (ts *testServer) respond(t *testing.T, token, body string) (response, apiResponse) {
	t.Helper()
	res := ts.call(t, "POST", "/v1/responses", token, body)
	var r apiResponse
	if res.status == http.StatusOK {
		require.NoError(t, json.Unmarshal([]byte(res.body), &r), res.body)
	}
	return res, r
}

// text is the text of a response's message items.
func (r apiResponse) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		for _, c := range o.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

const ticket = "I was charged twice for my invoice this month."

func TestResponsesAnswerThroughTheChatPipeline(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, r := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","instructions":"Classify the ticket as one of: billing, bug, feature_request. Answer with the label only.",
		"input":"`+ticket+`","temperature":0.2,"top_p":0.9,"max_output_tokens":50,"metadata":{"k":"v"},"store":true,"user":"u1"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	runID := res.header.Get("x-svc-run-id")
	require.NotEmpty(t, runID)
	assert.NotEmpty(t, res.header.Get("x-svc-route"))
	assert.Equal(t, "resp_"+strings.TrimPrefix(runID, "run_"), r.ID)
	assert.Equal(t, "response", r.Object)
	assert.Equal(t, "completed", r.Status)
	assert.Equal(t, "billing", r.text())
	require.Len(t, r.Output, 1)
	assert.Equal(t, "message", r.Output[0].Type)
	assert.Equal(t, "assistant", r.Output[0].Role)
	assert.Equal(t, "output_text", r.Output[0].Content[0].Type)
	assert.NotNil(t, r.Output[0].Content[0].Annotations)
	assert.True(t, strings.HasPrefix(r.Output[0].ID, "msg_"), r.Output[0].ID)
	require.NotNil(t, r.Usage)
	assert.Positive(t, r.Usage.InputTokens)
	assert.Equal(t, r.Usage.InputTokens+r.Usage.OutputTokens, r.Usage.TotalTokens)
	assert.NotNil(t, r.Usage.InputTokensDetails)
	assert.NotNil(t, r.Usage.OutputTokensDetails)
	// The request's settings are echoed.
	require.NotNil(t, r.Instructions)
	assert.Contains(t, *r.Instructions, "Classify")
	assert.Equal(t, 50, *r.MaxOutputTokens)
	assert.JSONEq(t, `{"format":{"type":"text"}}`, string(r.Text))
	assert.JSONEq(t, `"auto"`, string(r.ToolChoice))
	assert.JSONEq(t, `null`, string(r.Error))
	for _, k := range []string{`"metadata":{"k":"v"}`, `"temperature":0.2`, `"top_p":0.9`, `"user":"u1"`, `"previous_response_id":null`, `"incomplete_details":null`} {
		assert.Contains(t, res.body, k)
	}

	// The run is a chat run: its request is the translated chat body.
	run := ts.run(t, bootstrap, runID)["run"].(map[string]any)
	req, _ := json.Marshal(run["request"])
	assert.Contains(t, string(req), `"role":"system"`)
	assert.Contains(t, string(req), `"max_tokens":50`)
	assert.NotContains(t, string(req), `metadata`, "svc does not ask the upstream to store anything")
	assert.Equal(t, "ok", run["status"])
	assert.Positive(t, run["costUsd"])
	created, err := time.Parse(time.RFC3339Nano, run["createdAt"].(string))
	require.NoError(t, err)
	assert.Equal(t, created.Unix(), r.CreatedAt, "a response was created when its run began")
}

func TestResponsesInputItems(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, r := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":[
		{"role":"developer","content":"Classify the ticket as one of: billing, bug, feature_request. Answer with the label only."},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"`+ticket+`"}]}]}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "billing", r.text())
}

const weatherTool = `{"type":"function","name":"get_weather","description":"The weather in a city","strict":true,
	"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}`

func TestResponsesFunctionCallRoundTrip(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, r := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"Use get_weather for Paris","tools":[`+weatherTool+`],"tool_choice":"required"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.Len(t, r.Output, 1, res.body)
	call := r.Output[0]
	assert.Equal(t, "function_call", call.Type)
	assert.Equal(t, "get_weather", call.Name)
	assert.NotEmpty(t, call.CallID)
	assert.True(t, strings.HasPrefix(call.ID, "fc_"), call.ID)
	assert.Equal(t, "completed", call.Status)
	var args map[string]any
	require.NoError(t, json.Unmarshal([]byte(call.Arguments), &args), call.Arguments)
	assert.Contains(t, args, "city")
	require.Len(t, r.Tools, 1)
	assert.Equal(t, "get_weather", r.Tools[0].Name, "tools are echoed in the Responses shape")
	assert.JSONEq(t, `"required"`, string(r.ToolChoice))

	// The call and its output go back as input items.
	item, _ := json.Marshal(map[string]string{"type": "function_call", "call_id": call.CallID, "name": call.Name, "arguments": call.Arguments})
	res, r = ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","tools":[`+weatherTool+`],"input":[
		{"role":"user","content":"Use get_weather for Paris"},`+string(item)+`,
		{"type":"function_call_output","call_id":"`+call.CallID+`","output":"18 degrees and sunny"}]}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Contains(t, r.text(), "get_weather returned 18 degrees and sunny", "the mock read the tool's output")
	run := ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))["run"].(map[string]any)
	req, _ := json.Marshal(run["request"])
	var chat struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name, Description string
				Strict            bool
			} `json:"function"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(req, &chat))
	require.Len(t, chat.Messages, 3)
	assert.Equal(t, "assistant", chat.Messages[1].Role)
	require.Len(t, chat.Messages[1].ToolCalls, 1)
	assert.Equal(t, call.CallID, chat.Messages[1].ToolCalls[0].ID)
	assert.Equal(t, call.Arguments, chat.Messages[1].ToolCalls[0].Function.Arguments)
	assert.Equal(t, "tool", chat.Messages[2].Role)
	assert.Equal(t, call.CallID, chat.Messages[2].ToolCallID)
	require.Len(t, chat.Tools, 1, "tools nest as chat's")
	assert.Equal(t, "function", chat.Tools[0].Type)
	assert.Equal(t, "get_weather", chat.Tools[0].Function.Name)
	assert.Equal(t, "The weather in a city", chat.Tools[0].Function.Description)
	assert.True(t, chat.Tools[0].Function.Strict)
}

func TestResponsesJSONSchema(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	format := `{"type":"json_schema","name":"ticket","strict":true,"schema":{"type":"object","properties":{"label":{"type":"string","enum":["billing","bug"]}},"required":["label"],"additionalProperties":false}}`
	res, r := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"`+ticket+`","text":{"format":`+format+`}}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.text()), &out), r.text())
	assert.Contains(t, []any{"billing", "bug"}, out["label"])
	assert.JSONEq(t, `{"format":`+format+`}`, string(r.Text))

	res, r = ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"Answer in JSON: `+ticket+`","text":{"format":{"type":"json_object"}}}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.NoError(t, json.Unmarshal([]byte(r.text()), &out), r.text())
}

func TestResponsesStopAtMaxOutputTokensIsIncomplete(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, r := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"Write a long story about a lighthouse keeper and the sea.","max_output_tokens":2}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "incomplete", r.Status)
	require.NotNil(t, r.IncompleteDetails)
	assert.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
}

func TestResponsesBadInputIsRefusedInOpenAIsShape(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	for _, c := range []struct{ body, param string }{
		{`{"input":"hi"}`, "model"},
		{`{"model":"m"}`, "input"},
		{`{"model":"m","input":[]}`, "input"},
		{`{"model":"m","input":[5]}`, "input[0]"},
		{`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"item_reference","id":5}]}`, "input[1].id"},
		{`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":5}]}`, "input[0].arguments"},
		{`{"model":"m","input":"hi","metadata":{"a":5}}`, "metadata"},
		{`{"model":"m","input":42}`, "input"},
		{`{"model":"m","input":[{"role":"tool","content":"x"}]}`, "input[0].role"},
		{`{"model":"m","input":[{"type":"function_call","name":"f"}]}`, "input[0]"},
		{`{"model":"m","input":[{"type":"web_search_call"}]}`, "input[0].type"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "input[0].content[0]"},
		{`{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{`{"model":"m","input":"hi","tool_choice":"sometimes"}`, "tool_choice"},
		{`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name"},
		{`{"model":"m","input":"hi","text":{"format":{"type":"xml"}}}`, "text.format.type"},
		{`{"model":"m","input":"hi","max_output_tokens":0}`, "max_output_tokens"},
		{`{"model":"m","input":"hi","temperature":3}`, "temperature"},
		{`{"model":"m","input":"hi","background":true}`, "background"},
		{`{"model":"m","input":"hi","conversation":"conv_123"}`, "conversation"},
		{`{"model":"m","input":"hi","conversation":{"id":"conv_123"}}`, "conversation"},
		{`{"model":"m","input":"hi","prompt":{"id":"pmpt_123","version":"2"}}`, "prompt"},
		{`{"model":"m","input":"hi","model":"n"}`, "model"},
		{`{"model":"m","input":[{"type":"item_reference","id":"msg_nothing"}]}`, "input[0].id"},
		{`{"model":"m","input":"hi","previous_response_id":"resp_aaaaaaaaaaaaaaaaaaaa"}`, "previous_response_id"},
	} {
		res := ts.call(t, "POST", "/v1/responses", bootstrap, c.body)
		require.Equal(t, http.StatusBadRequest, res.status, c.body+": "+res.body)
		e := res.json["error"].(map[string]any)
		assert.Equal(t, "invalid_request_error", e["type"], c.body)
		assert.Equal(t, c.param, e["param"], c.body)
		assert.NotEmpty(t, e["message"], c.body)
	}
	res := ts.call(t, "POST", "/v1/responses", bootstrap, `not json`)
	assert.Equal(t, http.StatusBadRequest, res.status)
}

func TestResponsesGetByIDAndPreviousResponse(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, first := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":"My name is Ada. Say hello.","tools":[`+weatherTool+`],"temperature":0.5}`)
	require.Equal(t, http.StatusOK, res.status, res.body)

	got := ts.call(t, "GET", "/v1/responses/"+first.ID, bootstrap, "")
	require.Equal(t, http.StatusOK, got.status, got.body)
	var again apiResponse
	require.NoError(t, json.Unmarshal([]byte(got.body), &again))
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, first.Status, again.Status)
	assert.Equal(t, first.CreatedAt, again.CreatedAt)
	assert.Equal(t, first.text(), again.text())
	assert.Equal(t, first.Output[0].ID, again.Output[0].ID)
	assert.Equal(t, first.Usage, again.Usage)
	require.Len(t, again.Tools, 1)
	assert.Equal(t, "get_weather", again.Tools[0].Name)
	assert.Contains(t, got.body, `"temperature":0.5`)

	// The next call continues the stored conversation.
	res, second := ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","previous_response_id":"`+first.ID+`","input":"What is my name?"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.NotNil(t, second.PreviousResponseID)
	assert.Equal(t, first.ID, *second.PreviousResponseID)
	msgs := chatMessages(t, ts, res.header.Get("x-svc-run-id"))
	require.Len(t, msgs, 3)
	assert.Equal(t, "user", msgs[0]["role"])
	assert.Equal(t, "My name is Ada. Say hello.", msgs[0]["content"])
	assert.Equal(t, "assistant", msgs[1]["role"])
	assert.Equal(t, first.text(), msgs[1]["content"])
	assert.Equal(t, "What is my name?", msgs[2]["content"])

	// A chain of three: the second's conversation is the third's history.
	res, _ = ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","previous_response_id":"`+second.ID+`","input":"Thanks.","instructions":"Be brief."}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	msgs = chatMessages(t, ts, res.header.Get("x-svc-run-id"))
	require.Len(t, msgs, 6)
	assert.Equal(t, "system", msgs[0]["role"])
	assert.Equal(t, "Be brief.", msgs[0]["content"])
	assert.Equal(t, "My name is Ada. Say hello.", msgs[1]["content"])

	// An item_reference names an output item of a stored response.
	res, _ = ts.respond(t, bootstrap, `{"model":"gpt-4o-mini","input":[{"role":"user","content":"My name is Ada. Say hello."},
		{"type":"item_reference","id":"`+first.Output[0].ID+`"},{"role":"user","content":"And again?"}]}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	msgs = chatMessages(t, ts, res.header.Get("x-svc-run-id"))
	require.Len(t, msgs, 3)
	assert.Equal(t, "assistant", msgs[1]["role"])
	assert.Equal(t, first.text(), msgs[1]["content"])

	unknown := ts.call(t, "GET", "/v1/responses/resp_aaaaaaaaaaaaaaaaaaaa", bootstrap, "")
	assert.Equal(t, http.StatusNotFound, unknown.status)
	assert.Equal(t, "not_found_error", unknown.json["error"].(map[string]any)["type"])
	assert.Equal(t, http.StatusNotFound, ts.call(t, "GET", "/v1/responses/nonsense", bootstrap, "").status)
}

// chatMessages are the chat messages a run sent upstream.
func chatMessages(t *testing.T, ts *testServer, runID string) []map[string]any {
	t.Helper()
	run := ts.run(t, bootstrap, runID)["run"].(map[string]any)
	var msgs []map[string]any
	for _, m := range run["request"].(map[string]any)["messages"].([]any) {
		msgs = append(msgs, m.(map[string]any))
	}
	return msgs
}

func TestResponsesOfAnotherTenantAreNotFound(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirToken, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize})
	require.NoError(t, err)
	res, theirs := ts.respond(t, theirToken, `{"model":"gpt-4o-mini","input":"Say hello."}`)
	require.Equal(t, http.StatusOK, res.status, res.body)

	foreign := ts.call(t, "GET", "/v1/responses/"+theirs.ID, bootstrap, "")
	unknown := ts.call(t, "GET", "/v1/responses/resp_aaaaaaaaaaaaaaaaaaaa", bootstrap, "")
	assert.Equal(t, http.StatusNotFound, foreign.status)
	assert.Equal(t, strings.Replace(unknown.body, "resp_aaaaaaaaaaaaaaaaaaaa", theirs.ID, 1), foreign.body)
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/v1/responses/"+theirs.ID, theirToken, "").status)

	prev := ts.call(t, "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":"hi","previous_response_id":"`+theirs.ID+`"}`)
	assert.Equal(t, http.StatusBadRequest, prev.status)
	assert.Equal(t, "previous_response_not_found", prev.errorCode())
	ref := ts.call(t, "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":[{"type":"item_reference","id":"`+theirs.Output[0].ID+`"}]}`)
	assert.Equal(t, http.StatusBadRequest, ref.status, ref.body)
}

// responseEvent is one event of a streamed response.
type responseEvent struct {
	name string
	data map[string]any
	raw  string
}

// streamResponse posts a streamed request and reads its events.
func (ts *testServer) streamResponse(t *testing.T, token, body string) (*http.Response, []responseEvent) {
	t.Helper()
	req, err := http.NewRequest("POST", ts.URL+"/v1/responses", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var events []responseEvent
	var name string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			e := responseEvent{name: name, raw: strings.TrimPrefix(line, "data: ")}
			require.NoError(t, json.Unmarshal([]byte(e.raw), &e.data), line)
			events = append(events, e)
			name = ""
		}
	}
	require.NoError(t, sc.Err())
	return res, events
}

// checkSequence checks that every event names its type in both places
// and that sequence numbers count from 0.
func checkSequence(t *testing.T, events []responseEvent) []string {
	t.Helper()
	var names []string
	for i, e := range events {
		assert.Equal(t, e.name, e.data["type"], e.raw)
		assert.InDelta(t, float64(i), e.data["sequence_number"], 0, e.raw)
		names = append(names, e.name)
	}
	return names
}

func TestResponsesStreamText(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	body := `{"model":"gpt-4o-mini","instructions":"Classify the ticket as one of: billing, bug, feature_request. Answer with the label only.","input":"` + ticket + `"}`
	_, plain := ts.respond(t, bootstrap, body)
	res, events := ts.streamResponse(t, bootstrap, strings.Replace(body, `{"model"`, `{"stream":true,"model"`, 1))
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	runID := res.Header.Get("x-svc-run-id")
	require.NotEmpty(t, runID)
	names := checkSequence(t, events)
	require.GreaterOrEqual(t, len(names), 9, names)
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}, names[:4])
	assert.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}, names[len(names)-4:])
	var text strings.Builder
	for _, e := range events[4 : len(events)-4] {
		require.Equal(t, "response.output_text.delta", e.name)
		text.WriteString(e.data["delta"].(string))
	}
	assert.Equal(t, plain.text(), text.String())
	assert.Equal(t, text.String(), events[len(events)-4].data["text"])

	created := events[0].data["response"].(map[string]any)
	assert.Equal(t, "in_progress", created["status"])
	assert.Equal(t, "resp_"+strings.TrimPrefix(runID, "run_"), created["id"])
	var done apiResponse
	b, _ := json.Marshal(events[len(events)-1].data["response"])
	require.NoError(t, json.Unmarshal(b, &done))
	assert.Equal(t, "completed", done.Status)
	assert.Equal(t, plain.text(), done.text())
	require.NotNil(t, done.Usage, "the completed event carries usage")
	assert.Equal(t, plain.Usage.InputTokens, done.Usage.InputTokens)
	assert.Equal(t, plain.Usage.OutputTokens, done.Usage.OutputTokens)
	assert.Contains(t, *done.Instructions, "Classify")

	// The streamed response is stored like any other.
	got := ts.call(t, "GET", "/v1/responses/"+done.ID, bootstrap, "")
	require.Equal(t, http.StatusOK, got.status, got.body)
	var again apiResponse
	require.NoError(t, json.Unmarshal([]byte(got.body), &again))
	assert.Equal(t, done.text(), again.text())
	assert.Equal(t, done.Output[0].ID, again.Output[0].ID)
	assert.Equal(t, done.Usage, again.Usage)
}

func TestResponsesStreamFunctionCall(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res, events := ts.streamResponse(t, bootstrap, `{"model":"gpt-4o-mini","stream":true,"input":"Use get_weather for Paris","tools":[`+weatherTool+`]}`)
	require.Equal(t, http.StatusOK, res.StatusCode)
	names := checkSequence(t, events)
	require.GreaterOrEqual(t, len(names), 5, names)
	assert.Equal(t, "response.output_item.added", names[2])
	added := events[2].data["item"].(map[string]any)
	assert.Equal(t, "function_call", added["type"])
	assert.Equal(t, "get_weather", added["name"])
	assert.Equal(t, "", added["arguments"])
	var args strings.Builder
	for _, e := range events[3 : len(events)-3] {
		require.Equal(t, "response.function_call_arguments.delta", e.name)
		assert.Equal(t, added["id"], e.data["item_id"])
		args.WriteString(e.data["delta"].(string))
	}
	assert.Equal(t, []string{"response.function_call_arguments.done", "response.output_item.done", "response.completed"}, names[len(names)-3:])
	assert.Equal(t, args.String(), events[len(events)-3].data["arguments"])
	assert.Equal(t, "get_weather", events[len(events)-3].data["name"])
	item := events[len(events)-2].data["item"].(map[string]any)
	assert.Equal(t, args.String(), item["arguments"])
	assert.Equal(t, "completed", item["status"])
	assert.Equal(t, added["call_id"], item["call_id"])
	assert.Contains(t, args.String(), "Paris")
}

func TestResponsesStreamCutMidwaySaysSo(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{chunks: 2, streamErr: errors.New("upstream closed the connection")})
	res, events := ts.streamResponse(t, bootstrap, `{"model":"gpt-4o-mini","stream":true,"input":"hi"}`)
	require.Equal(t, http.StatusOK, res.StatusCode)
	names := checkSequence(t, events)
	require.GreaterOrEqual(t, len(names), 2)
	assert.Equal(t, []string{"error", "response.failed"}, names[len(names)-2:])
	assert.Contains(t, events[len(events)-2].data["message"], "upstream closed the connection")
	failed := events[len(events)-1].data["response"].(map[string]any)
	assert.Equal(t, "failed", failed["status"])

	// Stored, it is a failed response, which no call continues.
	got := ts.call(t, "GET", "/v1/responses/"+failed["id"].(string), bootstrap, "")
	require.Equal(t, http.StatusOK, got.status, got.body)
	assert.Equal(t, "failed", got.json["status"])
	assert.Contains(t, got.json["error"].(map[string]any)["message"], "upstream closed the connection")
	assert.Equal(t, failed["error"].(map[string]any)["code"], got.json["error"].(map[string]any)["code"], "the code streamed, read back")
	assert.NotEqual(t, "error", got.json["error"].(map[string]any)["code"])
	next := ts.call(t, "POST", "/v1/responses", bootstrap, `{"model":"gpt-4o-mini","input":"hi","previous_response_id":"`+failed["id"].(string)+`"}`)
	assert.Equal(t, http.StatusBadRequest, next.status, next.body)
	assert.Equal(t, "previous_response_id", next.json["error"].(map[string]any)["param"])
}

// BenchmarkLiveResponse is BenchmarkLiveCall through POST /v1/responses:
// the difference is what the translation adds to a call.
func BenchmarkLiveResponse(b *testing.B) {
	ts := newServerWith(b, bootstrap, nil, &fakeProvider{})
	h := ts.Config.Handler
	bodies := make([]string, b.N)
	for i := range bodies {
		bodies[i] = `{"model":"gpt-4o-mini","instructions":"Classify the ticket as one of: billing, bug, feature_request. Answer with the label only.",` +
			`"input":"I was charged twice (` + strconv.Itoa(i) + `) for my invoice this month."}`
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(bodies[i]))
		req.Header.Set("Authorization", "Bearer "+bootstrap)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("x-svc-route") != "live" {
			b.Fatalf("%d %q: %s", rec.Code, rec.Header().Get("x-svc-route"), rec.Body)
		}
	}
}

func TestResponsesMeetPoliciesAndTheCacheAsChatDoes(t *testing.T) {
	ts := policyServer(t, &fakeProvider{})
	for _, body := range []string{`{"model":"gpt-4o","input":"hello"}`, `{"model":"gpt-4o","input":"hello","stream":true}`} {
		res := ts.call(t, "POST", "/v1/responses", bootstrap, body, "X-Svc-App", "support")
		require.Equal(t, http.StatusForbidden, res.status, res.body)
		assert.Equal(t, "blocked", res.header.Get("x-svc-route"))
		assert.Equal(t, "policy_denied", res.errorCode())
		assert.Contains(t, res.json["error"].(map[string]any)["message"], "no-big-models")
	}

	ts, p := cachingServer(t)
	body := `{"model":"gpt-4o-mini","instructions":"Classify the ticket as one of: billing, bug, feature_request. Answer with the label only.","input":"` + ticket + `"}`
	first, a := ts.respond(t, bootstrap, body)
	require.Equal(t, http.StatusOK, first.status, first.body)
	assert.Equal(t, "live", first.header.Get("x-svc-route"))
	second, b := ts.respond(t, bootstrap, body)
	require.Equal(t, http.StatusOK, second.status, second.body)
	assert.Equal(t, "exact_cache", second.header.Get("x-svc-route"))
	assert.EqualValues(t, 1, p.calls.Load(), "the provider answered once")
	assert.Equal(t, a.text(), b.text())
	assert.NotEqual(t, a.ID, b.ID, "each call is its own run and response")
	// The chat request that came from the same conversation is the same one.
	chat := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	assert.Equal(t, "exact_cache", chat.header.Get("x-svc-route"))
}
