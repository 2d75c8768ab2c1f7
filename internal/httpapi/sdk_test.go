package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// The official OpenAI Go SDK, pointed at svc, works as it does against the
// provider: svc is a drop-in base URL.
func sdkClient(ts *testServer, token string) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey(token), option.WithMaxRetries(0))
}

func sdkParams(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a concise assistant."),
			openai.UserMessage(prompt),
		},
	}
}

func TestOpenAISDKNonStreaming(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	client := sdkClient(ts, bootstrap)
	var raw *http.Response
	res, err := client.Chat.Completions.New(context.Background(), sdkParams("How do I reverse a list in Python?"),
		option.WithHeader("X-Svc-App", "sdk-test"), option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.Len(t, res.Choices, 1)
	assert.NotEmpty(t, res.Choices[0].Message.Content)
	assert.Equal(t, "stop", res.Choices[0].FinishReason)
	assert.Positive(t, res.Usage.PromptTokens)
	assert.Positive(t, res.Usage.CompletionTokens)
	assert.Equal(t, res.Usage.PromptTokens+res.Usage.CompletionTokens, res.Usage.TotalTokens)
	require.NotNil(t, raw)
	runID := raw.Header.Get("x-svc-run-id")
	require.NotEmpty(t, runID)
	assert.Equal(t, "live", raw.Header.Get("x-svc-route"))
	assert.Equal(t, "sdk-test", ts.run(t, bootstrap, runID)["run"].(map[string]any)["app"])

	models, err := client.Models.List(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, models.Data)
	assert.NotEmpty(t, models.Data[0].ID)
}

func TestOpenAISDKStreamingMatchesNonStreaming(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	client := sdkClient(ts, bootstrap)
	params := sdkParams("Describe, in a few sentences, how tides follow the moon and the sun.")
	whole, err := client.Chat.Completions.New(context.Background(), params)
	require.NoError(t, err)

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	var deltas string
	chunks := 0
	for stream.Next() {
		chunk := stream.Current()
		chunks++
		require.True(t, acc.AddChunk(chunk))
		for _, c := range chunk.Choices {
			deltas += c.Delta.Content
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	assert.Greater(t, chunks, 2)
	assert.Equal(t, whole.Choices[0].Message.Content, deltas, "the concatenated deltas equal the non-streamed content")
	assert.Equal(t, whole.Choices[0].Message.Content, acc.Choices[0].Message.Content)
	assert.Equal(t, whole.Usage.CompletionTokens, acc.Usage.CompletionTokens, "the usage chunk arrives when asked for")
}

func TestOpenAISDKToolCallsAndJSON(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	client := sdkClient(ts, bootstrap)
	params := sdkParams("What is the weather in Lisbon? Use get weather.")
	params.Tools = []openai.ChatCompletionToolParam{{
		Function: openai.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: openai.FunctionParameters{
				"type":       "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required":   []string{"city"},
			},
		},
	}}
	res, err := client.Chat.Completions.New(context.Background(), params)
	require.NoError(t, err)
	require.Len(t, res.Choices[0].Message.ToolCalls, 1, "the mock calls the tool the user named")
	call := res.Choices[0].Message.ToolCalls[0]
	assert.Equal(t, "get_weather", call.Function.Name)
	var args map[string]any
	require.NoError(t, json.Unmarshal([]byte(call.Function.Arguments), &args))
	assert.Contains(t, args, "city")
	assert.Equal(t, "tool_calls", res.Choices[0].FinishReason)

	params = sdkParams(`Return a JSON object {"category": ..., "priority": ...} for: my invoice is wrong`)
	params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &openai.ResponseFormatJSONObjectParam{}}
	res, err = client.Chat.Completions.New(context.Background(), params)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Choices[0].Message.Content), &obj), res.Choices[0].Message.Content)
	assert.Contains(t, obj, "category")
}

func TestOpenAISDKErrors(t *testing.T) {
	ts := newServer(t, bootstrap, nil)

	// svc's own validation.
	client := sdkClient(ts, bootstrap)
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini"})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	assert.Equal(t, "invalid_request_error", apiErr.Type)
	assert.Equal(t, "messages", apiErr.Param)
	assert.NotEmpty(t, apiErr.Message)

	// A bad token.
	stranger := sdkClient(ts, "svc_not-a-real-key")
	_, err = stranger.Chat.Completions.New(context.Background(), sdkParams("hi"))
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)

	// The provider's own error, passed through.
	failing := newServerWith(t, bootstrap, nil, &fakeProvider{chatErr: &pluginapi.ProviderError{
		Status: 404, Type: "invalid_request_error", Code: "model_not_found", Param: "model", Message: "The model `gpt-9` does not exist"}})
	client = sdkClient(failing, bootstrap)
	_, err = client.Chat.Completions.New(context.Background(), sdkParams("hi"))
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	assert.Equal(t, "model_not_found", apiErr.Code)
	assert.Equal(t, "The model `gpt-9` does not exist", apiErr.Message)

	// An upstream failure, streamed.
	down := newServerWith(t, bootstrap, nil, &fakeProvider{chatErr: errors.New("connection refused")})
	client = sdkClient(down, bootstrap)
	stream := client.Chat.Completions.NewStreaming(context.Background(), sdkParams("hi"))
	assert.False(t, stream.Next())
	require.ErrorAs(t, stream.Err(), &apiErr)
	assert.Equal(t, http.StatusBadGateway, apiErr.StatusCode)
	assert.Equal(t, "upstream_error", apiErr.Type)
}

// parallelToolsProvider answers with two tool calls at once.
type parallelToolsProvider struct{ fakeProvider }

func (p *parallelToolsProvider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	return pluginapi.ChatResponse{Body: []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
		`{"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"CET\"}"}}]},"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`),
		Usage: pluginapi.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}, nil
}

// A cached answer replayed as a stream gives each tool call the index its
// delta must carry: the SDK puts parallel calls together by it.
func TestOpenAISDKStreamsCachedParallelToolCalls(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &parallelToolsProvider{})
	client := sdkClient(ts, bootstrap)
	params := sdkParams("weather and time in Paris")
	whole, err := client.Chat.Completions.New(context.Background(), params)
	require.NoError(t, err)
	require.Len(t, whole.Choices[0].Message.ToolCalls, 2)

	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	calls := acc.Choices[0].Message.ToolCalls
	require.Len(t, calls, 2)
	assert.Equal(t, "get_weather", calls[0].Function.Name)
	assert.Equal(t, `{"city":"Paris"}`, calls[0].Function.Arguments)
	assert.Equal(t, "get_time", calls[1].Function.Name)
	assert.Equal(t, `{"tz":"CET"}`, calls[1].Function.Arguments)
}
