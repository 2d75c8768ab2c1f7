package httpapi_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The official Go SDK's Responses client works against svc: a function
// call and its output through previous_response_id, a stream, and a
// stored response read back.
func TestResponsesWithTheGoSDK(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	c := sdkClient(ts, bootstrap)
	ctx := context.Background()
	tool := responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}, false)

	first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini", Tools: []responses.ToolUnionParam{tool},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Use get_weather for Paris")}})
	require.NoError(t, err)
	require.Len(t, first.Output, 1)
	call := first.Output[0].AsFunctionCall()
	assert.Equal(t, "get_weather", call.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, call.Arguments)

	second, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini", Tools: []responses.ToolUnionParam{tool},
		PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfFunctionCallOutput(call.CallID, "18 degrees")}}})
	require.NoError(t, err)
	assert.Equal(t, "Mock answer: get_weather returned 18 degrees.", second.OutputText())
	assert.Equal(t, first.ID, second.PreviousResponseID)
	assert.Positive(t, second.Usage.TotalTokens)

	stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}})
	var text string
	var done responses.Response
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "response.output_text.delta":
			text += ev.Delta.OfString
		case "response.completed":
			done = ev.AsResponseCompleted().Response
		}
	}
	require.NoError(t, stream.Err())
	assert.NotEmpty(t, text)
	assert.Equal(t, text, done.OutputText())
	assert.Positive(t, done.Usage.OutputTokens)

	got, err := c.Responses.Get(ctx, done.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, text, got.OutputText())
}
