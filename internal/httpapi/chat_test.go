package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

const triage = `{"model":"gpt-4o-mini","messages":[` +
	`{"role":"system","content":"Classify the ticket as one of: billing, bug, feature_request. Answer with the label only."},` +
	`{"role":"user","content":"I was charged twice for my invoice this month."}]}`

// completion is the part of a chat.completion the tests read.
type completion struct {
	Object  string `json:"object"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

func decodeCompletion(t *testing.T, body string) completion {
	t.Helper()
	var c completion
	require.NoError(t, json.Unmarshal([]byte(body), &c), body)
	require.Len(t, c.Choices, 1, body)
	return c
}

func (ts *testServer) run(t *testing.T, token, id string) map[string]any {
	t.Helper()
	res := ts.call(t, "GET", "/api/v1/runs/"+id, token, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	return res.json
}

func TestChatCompletionRecordsARun(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage,
		"X-Svc-App", "support", "X-Svc-Agent", "triage-bot", "X-Svc-Subject", "user-7")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "application/json", res.header.Get("Content-Type"))
	c := decodeCompletion(t, res.body)
	assert.Equal(t, "chat.completion", c.Object)
	assert.Equal(t, "billing", c.Choices[0].Message.Content, "the mock picks the label the content's words point at")
	runID := res.header.Get("x-svc-run-id")
	assert.True(t, strings.HasPrefix(runID, "run_"), runID)
	assert.Equal(t, "live", res.header.Get("x-svc-route"))

	again := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	assert.Equal(t, c.Choices[0].Message.Content, decodeCompletion(t, again.body).Choices[0].Message.Content, "same request, same answer")
	assert.NotEqual(t, runID, again.header.Get("x-svc-run-id"), "every call is its own run")

	d := ts.run(t, bootstrap, runID)
	run := d["run"].(map[string]any)
	assert.Equal(t, runID, run["id"])
	assert.Equal(t, "live", run["route"])
	assert.Equal(t, "ok", run["status"])
	assert.Equal(t, "gpt-4o-mini", run["model"])
	assert.Equal(t, "support", run["app"])
	assert.Equal(t, "triage-bot", run["agent"])
	assert.Equal(t, "user-7", run["subject"])
	assert.Equal(t, "optimize", run["mode"], "the bootstrap token acts in optimize mode")
	assert.Equal(t, "mock", run["provider"])
	assert.InDelta(t, float64(c.Usage.PromptTokens), run["promptTokens"], 0)
	assert.InDelta(t, float64(c.Usage.CompletionTokens), run["completionTokens"], 0)
	want := (float64(c.Usage.PromptTokens)*0.15 + float64(c.Usage.CompletionTokens)*0.60) / 1e6
	assert.InDelta(t, want, run["costUsd"], 1e-12, "priced from gpt-4o-mini's row")
	assert.Equal(t, false, run["usageUnknown"])
	assert.Equal(t, false, run["priceUnknown"])
	assert.Greater(t, run["latencyMs"], 0.0)
	assert.NotEmpty(t, run["createdAt"])
	ex := run["routeExplanation"].(map[string]any)
	assert.Equal(t, "live", ex["route"])
	assert.NotEmpty(t, ex["reason"])
	assert.NotEmpty(t, ex["rejected"])
	assert.Equal(t, "allow", ex["policy"].(map[string]any)["decision"])
	for _, k := range []string{"cache", "artifact", "estimatedSavingsUsd", "fallback"} {
		assert.Contains(t, ex, k)
	}
	assert.JSONEq(t, triage, mustMarshal(t, run["request"]))
	assert.JSONEq(t, res.body, mustMarshal(t, run["response"]))

	events := d["events"].([]any)
	var types []string
	for _, e := range events {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	assert.Equal(t, []string{"request.received", "route.decided", "provider.completed"}, types)
	assert.Equal(t, []any{}, d["sideEffects"])

	integrity := ts.call(t, "GET", "/api/v1/runs/"+runID+"/integrity", bootstrap, "")
	require.Equal(t, http.StatusOK, integrity.status)
	assert.Equal(t, true, integrity.json["ok"])
	assert.InDelta(t, 3, integrity.json["events"], 0)
	assert.Nil(t, integrity.json["brokenAt"])
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// sse reads a text/event-stream answer into its data payloads.
func sse(t *testing.T, res *http.Response) []string {
	t.Helper()
	var data []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		require.True(t, strings.HasPrefix(line, "data: "), "every event line is data: %q", line)
		data = append(data, strings.TrimPrefix(line, "data: "))
	}
	require.NoError(t, sc.Err())
	return data
}

func (ts *testServer) stream(t *testing.T, token, body string, headers ...string) (*http.Response, []string) {
	t.Helper()
	req, err := http.NewRequest("POST", ts.URL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	return res, sse(t, res)
}

type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

func TestChatStreaming(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	// Temperature above 0: not cacheable, so the stream reaches the provider
	// (a cached answer replayed as a stream is tested with the cache).
	body := `{"model":"gpt-4o-mini","temperature":0.7,"messages":[{"role":"user","content":"Explain in three sentences why the sky is blue."}]}`
	plain := decodeCompletion(t, ts.call(t, "POST", "/v1/chat/completions", bootstrap, body).body)

	streamed := strings.Replace(body, `{"model"`, `{"stream":true,"model"`, 1)
	res, events := ts.stream(t, bootstrap, streamed)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	runID := res.Header.Get("x-svc-run-id")
	assert.NotEmpty(t, runID)
	assert.Equal(t, "live", res.Header.Get("x-svc-route"))
	require.Greater(t, len(events), 2)
	assert.Equal(t, "[DONE]", events[len(events)-1], "the stream ends with [DONE]")

	var text strings.Builder
	for _, e := range events[:len(events)-1] {
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(e), &c), e)
		assert.Equal(t, "chat.completion.chunk", c.Object)
		assert.Nil(t, c.Usage, "no usage chunk unless the client asks for one")
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	assert.Equal(t, plain.Choices[0].Message.Content, text.String(), "the deltas add up to the non-streamed answer")

	// svc asked the provider for usage anyway, and priced the run with it.
	run := ts.run(t, bootstrap, runID)["run"].(map[string]any)
	assert.Equal(t, true, run["stream"])
	assert.Equal(t, false, run["usageUnknown"])
	assert.InDelta(t, float64(plain.Usage.CompletionTokens), run["completionTokens"], 0)
	assert.Greater(t, run["costUsd"], 0.0)

	// A client that asks for usage gets the usage chunk.
	withUsage := strings.Replace(streamed, `"stream":true`, `"stream":true,"stream_options":{"include_usage":true}`, 1)
	_, events = ts.stream(t, bootstrap, withUsage)
	var last chunk
	require.NoError(t, json.Unmarshal([]byte(events[len(events)-2]), &last))
	require.NotNil(t, last.Usage)
	assert.Equal(t, plain.Usage.CompletionTokens, last.Usage.CompletionTokens)
}

func TestChatValidationErrorsAreProviderShaped(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	cases := []struct {
		name, body, param string
	}{
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"empty model", `{"model":" ","messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"no messages", `{"model":"gpt-4o-mini"}`, "messages"},
		{"empty messages", `{"model":"gpt-4o-mini","messages":[]}`, "messages"},
		{"messages not an array", `{"model":"gpt-4o-mini","messages":"hi"}`, "messages"},
		{"unknown role", `{"model":"gpt-4o-mini","messages":[{"role":"wizard","content":"hi"}]}`, "messages"},
		{"content a number", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":5}]}`, "messages"},
		{"temperature too high", `{"model":"gpt-4o-mini","temperature":3,"messages":[{"role":"user","content":"hi"}]}`, "temperature"},
		{"temperature a string", `{"model":"gpt-4o-mini","temperature":"hot","messages":[{"role":"user","content":"hi"}]}`, "temperature"},
		{"bad response format", `{"model":"gpt-4o-mini","response_format":{"type":"yaml"},"messages":[{"role":"user","content":"hi"}]}`, "response_format.type"},
		{"stream options without stream", `{"model":"gpt-4o-mini","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "stream_options"},
		{"not JSON", `{"model":`, ""},
		{"an array", `[1,2]`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, tc.body)
			require.Equal(t, http.StatusBadRequest, res.status, res.body)
			e := res.json["error"].(map[string]any)
			assert.Equal(t, "invalid_request_error", e["type"])
			assert.NotEmpty(t, e["message"])
			assert.NotEmpty(t, e["code"])
			if tc.param != "" {
				assert.Equal(t, tc.param, e["param"])
			} else {
				assert.Nil(t, e["param"])
			}
		})
	}
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage, "Content-Type", "text/plain")
	assert.Equal(t, http.StatusUnsupportedMediaType, res.status)
	assert.Equal(t, "invalid_request_error", res.json["error"].(map[string]any)["type"])

	res = ts.call(t, "POST", "/v1/chat/completions", "", triage)
	assert.Equal(t, http.StatusUnauthorized, res.status)
	assert.Contains(t, res.json["error"], "type", "a 401 under /v1 is provider-shaped too")

	assert.Equal(t, float64(0), ts.call(t, "GET", "/api/v1/runs", bootstrap, "").json["total"], "an invalid request records no run")
}

func TestModels(t *testing.T) {
	ts := newServer(t, "", nil)
	res := ts.call(t, "GET", "/v1/models", "", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "list", res.json["object"])
	data := res.json["data"].([]any)
	require.NotEmpty(t, data)
	m := data[0].(map[string]any)
	assert.Equal(t, "model", m["object"])
	assert.NotEmpty(t, m["id"])
	assert.Contains(t, m, "owned_by")
	assert.Contains(t, m, "created")
}

// fakeProvider fails or answers as a test needs.
type fakeProvider struct {
	chatErr   error
	noUsage   bool
	chunks    int
	streamErr error
}

func (f *fakeProvider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if f.chatErr != nil {
		return pluginapi.ChatResponse{}, f.chatErr
	}
	res := pluginapi.ChatResponse{Body: []byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)}
	if !f.noUsage {
		res.Usage = pluginapi.Usage{PromptTokens: 1000, CompletionTokens: 500, TotalTokens: 1500}
	}
	return res, nil
}

func (f *fakeProvider) StreamChat(_ context.Context, _ pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	if f.chatErr != nil {
		return f.chatErr
	}
	for i := range f.chunks {
		if err := send(pluginapi.ChatChunk{Data: fmt.Appendf(nil, `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"part%d "}}]}`, i)}); err != nil {
			return err
		}
	}
	return f.streamErr
}

func (f *fakeProvider) Models(context.Context) ([]pluginapi.Model, error) {
	if f.chatErr != nil {
		return nil, f.chatErr
	}
	return nil, nil
}

func TestProviderErrors(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		status    int
		typ, code string
	}{
		{"provider 4xx passes through", &pluginapi.ProviderError{Status: 404, Type: "invalid_request_error", Code: "model_not_found", Param: "model", Message: "The model `gpt-9` does not exist"},
			404, "invalid_request_error", "model_not_found"},
		{"provider 429 passes through", &pluginapi.ProviderError{Status: 429, Type: "rate_limit_exceeded", Code: "rate_limit_exceeded", Message: "Slow down"},
			429, "rate_limit_exceeded", "rate_limit_exceeded"},
		{"provider 422 keeps its status", &pluginapi.ProviderError{Status: 422, Type: "invalid_request_error", Code: "unsupported_value", Param: "tools", Message: "tools are not supported by this model"},
			422, "invalid_request_error", "unsupported_value"},
		{"upstream request timeout is 502", &pluginapi.ProviderError{Status: 408, Type: "timeout", Message: "request timed out"},
			502, "timeout", "timeout"},
		{"provider 5xx is 502", &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "overloaded"},
			502, "server_error", "server_error"},
		{"upstream auth failure is 502", &pluginapi.ProviderError{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided: " + testProviderSecret},
			502, "invalid_request_error", "invalid_api_key"},
		{"timeout is 502", context.DeadlineExceeded, 502, "upstream_error", "upstream_timeout"},
		{"plugin unreachable is 502", &pluginapi.UnavailableError{Err: errors.New("connection refused")}, 502, "upstream_error", "provider_unavailable"},
		{"anything else is 502", errors.New("dial tcp: connection reset using " + testProviderSecret), 502, "upstream_error", "upstream_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newServerWith(t, bootstrap, nil, &fakeProvider{chatErr: tc.err})
			for _, body := range []string{triage, strings.Replace(triage, `{"model"`, `{"stream":true,"model"`, 1)} {
				res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
				require.Equal(t, tc.status, res.status, res.body)
				e := res.json["error"].(map[string]any)
				assert.Equal(t, tc.typ, e["type"], res.body)
				assert.Equal(t, tc.code, e["code"], res.body)
				assert.NotContains(t, res.body, testProviderSecret, "the provider key never reaches a client")
				runID := res.header.Get("x-svc-run-id")
				require.NotEmpty(t, runID, "a failed call is still a run")
				run := ts.run(t, bootstrap, runID)["run"].(map[string]any)
				assert.Equal(t, "error", run["status"])
				assert.InDelta(t, tc.status, run["httpStatus"], 0)
				assert.NotContains(t, run["error"], testProviderSecret)
			}
		})
	}
}

func TestProviderRateLimitPassesItsRetryAfterOn(t *testing.T) {
	for wait, header := range map[time.Duration]string{2500 * time.Millisecond: "3", 0: "1"} {
		ts := newServerWith(t, bootstrap, nil, &fakeProvider{chatErr: &pluginapi.ProviderError{
			Status: 429, Type: "rate_limit_error", Code: "rate_limit_exceeded", Message: "Slow down", RetryAfter: wait}})
		for _, body := range []string{triage, strings.Replace(triage, `{"model"`, `{"stream":true,"model"`, 1)} {
			res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, body)
			require.Equal(t, http.StatusTooManyRequests, res.status, res.body)
			assert.Equal(t, header, res.header.Get("Retry-After"), "the provider asked for %v (whole seconds, rounded up; 1 when it did not say)", wait)
		}
	}
}

func TestUnknownUsageAndPriceAreFlagged(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{noUsage: true})
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusOK, res.status)
	run := ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))["run"].(map[string]any)
	assert.Equal(t, true, run["usageUnknown"], "never silently priced at 0")
	assert.InDelta(t, 0, run["costUsd"], 0)

	ts = newServerWith(t, bootstrap, nil, &fakeProvider{})
	res = ts.call(t, "POST", "/v1/chat/completions", bootstrap, strings.Replace(triage, "gpt-4o-mini", "acme-large-2", 1))
	run = ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))["run"].(map[string]any)
	assert.Equal(t, false, run["usageUnknown"])
	assert.Equal(t, true, run["priceUnknown"], "a model with no price row is flagged")
	assert.InDelta(t, 0, run["costUsd"], 0)

	res = ts.call(t, "POST", "/v1/chat/completions", bootstrap, strings.Replace(triage, "gpt-4o-mini", "gpt-4o-mini-2024-07-18", 1))
	run = ts.run(t, bootstrap, res.header.Get("x-svc-run-id"))["run"].(map[string]any)
	assert.Equal(t, false, run["priceUnknown"], "a dated variant finds its family's price")
	assert.InDelta(t, (1000*0.15+500*0.60)/1e6, run["costUsd"], 1e-12)
}

func TestStreamFailingMidwayIsCutAndRecorded(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{chunks: 2, streamErr: errors.New("upstream closed the connection to key " + testProviderSecret)})
	res, events := ts.stream(t, bootstrap, strings.Replace(triage, `{"model"`, `{"stream":true,"model"`, 1))
	require.Equal(t, http.StatusOK, res.StatusCode, "the status was sent with the first chunk")
	require.Len(t, events, 3)
	assert.NotEqual(t, "[DONE]", events[2], "a cut stream does not claim to be complete")
	var e struct {
		Error struct {
			Type, Code, Message string
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(events[2]), &e))
	assert.Equal(t, "upstream_error", e.Error.Type)
	assert.Contains(t, e.Error.Message, "upstream closed the connection")
	assert.NotContains(t, e.Error.Message, testProviderSecret)
	run := ts.run(t, bootstrap, res.Header.Get("x-svc-run-id"))["run"].(map[string]any)
	assert.Equal(t, "error", run["status"])
	assert.Equal(t, true, run["usageUnknown"])
}

func TestStreamFailingMidwayKeepsTheProvidersErrorType(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{chunks: 1, streamErr: &pluginapi.ProviderError{
		Status: 500, Type: "server_error", Code: "overloaded", Message: "the model is overloaded"}})
	res, events := ts.stream(t, bootstrap, strings.Replace(triage, `{"model"`, `{"stream":true,"model"`, 1))
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Len(t, events, 2)
	var e struct {
		Error struct {
			Type, Code, Message string
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(events[1]), &e))
	assert.Equal(t, "server_error", e.Error.Type)
	assert.Equal(t, "overloaded", e.Error.Code)
	assert.Equal(t, "the model is overloaded", e.Error.Message)
	assert.Equal(t, "live", res.Header.Get("x-svc-route"))
}

// pacedProvider streams chunks a gap apart; with watchCtx it stops when
// the call's context ends, otherwise only when a send fails, as a provider
// that has not noticed yet.
type pacedProvider struct {
	fakeProvider
	watchCtx bool
}

func (p *pacedProvider) StreamChat(ctx context.Context, _ pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	for i := range 100 {
		if err := send(pluginapi.ChatChunk{Data: fmt.Appendf(nil, `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"part%d "}}]}`, i)}); err != nil {
			return err
		}
		gap := time.After(20 * time.Millisecond)
		if p.watchCtx {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-gap:
			}
		} else {
			<-gap
		}
	}
	return nil
}

// A client that leaves mid-stream is recorded as gone (499), whether svc
// notices by the request's context or by a failed write: the provider did
// not fail.
func TestAClientLeavingMidStreamIsRecordedAsGone(t *testing.T) {
	for name, watchCtx := range map[string]bool{"by the context": true, "by a failed write": false} {
		t.Run(name, func(t *testing.T) {
			ts := newServerWith(t, bootstrap, nil, &pacedProvider{watchCtx: watchCtx})
			req, err := http.NewRequest("POST", ts.URL+"/v1/chat/completions",
				strings.NewReader(strings.Replace(triage, `{"model"`, `{"stream":true,"model"`, 1)))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+bootstrap)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			runID := res.Header.Get("x-svc-run-id")
			line, err := bufio.NewReader(res.Body).ReadString('\n')
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(line, "data: "), line)
			require.NoError(t, res.Body.Close()) // the client leaves

			var detail response
			require.Eventually(t, func() bool {
				detail = ts.call(t, "GET", "/api/v1/runs/"+runID, bootstrap, "")
				return detail.status == http.StatusOK
			}, 10*time.Second, 20*time.Millisecond, "the run is recorded")
			run := detail.json["run"].(map[string]any)
			assert.InDelta(t, 499, run["httpStatus"], 0)
			assert.Equal(t, "the client went away", run["error"])
			var types []string
			for _, e := range detail.json["events"].([]any) {
				types = append(types, e.(map[string]any)["type"].(string))
			}
			assert.Contains(t, types, "provider.cancelled")
			assert.NotContains(t, types, "provider.failed", "no provider failed")
		})
	}
}

// stalledProvider answers no call before the call's context ends.
type stalledProvider struct{ fakeProvider }

func (*stalledProvider) Chat(ctx context.Context, _ pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	<-ctx.Done()
	return pluginapi.ChatResponse{}, ctx.Err()
}

// A client that leaves before the answer leaves a run whose usage is
// unknown: the provider was called and may bill for it.
func TestAClientLeavingBeforeTheAnswerLeavesUsageUnknown(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &stalledProvider{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(triage))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bootstrap)
	req.Header.Set("Content-Type", "application/json")
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	var runs response
	require.Eventually(t, func() bool {
		runs = ts.call(t, "GET", "/api/v1/runs", bootstrap, "")
		return runs.status == http.StatusOK && len(runs.json["runs"].([]any)) == 1
	}, 10*time.Second, 20*time.Millisecond, "the run is recorded")
	run := runs.json["runs"].([]any)[0].(map[string]any)
	assert.InDelta(t, 499, run["httpStatus"], 0)
	assert.Equal(t, true, run["usageUnknown"], "never silently priced at 0")
}
