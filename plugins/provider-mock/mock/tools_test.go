package mock

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func weatherTools() []any {
	var tools []any
	if err := json.Unmarshal([]byte(`[
	{"type":"function","function":{"name":"get_weather","description":"Get the current weather",
	  "parameters":{"type":"object","properties":{
	    "location":{"type":"string","description":"City name"},
	    "unit":{"type":"string","enum":["celsius","fahrenheit"]},
	    "days":{"type":"integer","minimum":1,"maximum":7}},
	  "required":["location"]}}},
	{"type":"function","function":{"name":"searchWeb","description":"Search the web",
	  "parameters":{"type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"integer"}},"required":["query"]}}},
	{"type":"function","function":{"name":"lookup_order",
	  "parameters":{"type":"object","properties":{"order_id":{"type":"string"},"include_items":{"type":"boolean"}},
	  "required":["order_id","include_items"],"additionalProperties":false}}},
	{"type":"function","function":{"name":"send_email",
	  "parameters":{"type":"object","properties":{"to":{"type":"string","format":"email"},"subject":{"type":"string"},"body":{"type":"string"}},
	  "required":["to","subject","body"]}}},
	{"type":"function","function":{"name":"ping"}}
	]`), &tools); err != nil {
		panic(err)
	}
	return tools
}

// toolCall runs b and returns the one tool call, failing if there is none.
func callOf(t *testing.T, p pluginapi.Provider, b []byte) (name string, args map[string]any, c completion) {
	t.Helper()
	c, _ = chat(t, p, b)
	ch := c.Choices[0]
	require.Equal(t, "tool_calls", ch.FinishReason)
	require.Nil(t, ch.Message.Content, "content is null on a tool call")
	require.Len(t, ch.Message.ToolCalls, 1)
	tc := ch.Message.ToolCalls[0]
	assert.Regexp(t, `^call_[0-9a-f]{24}$`, tc.ID)
	assert.Equal(t, "function", tc.Type)
	require.NoError(t, json.Unmarshal([]byte(tc.Function.Arguments), &args), tc.Function.Arguments)
	return tc.Function.Name, args, c
}

func TestToolCallNamed(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		tools := map[string]any{"tools": weatherTools()}

		name, args, _ := callOf(t, p, body(t, tools, user("Call get_weather for Berlin in fahrenheit for the next 3 days")))
		assert.Equal(t, "get_weather", name)
		assert.Equal(t, map[string]any{"location": "Berlin", "unit": "fahrenheit", "days": float64(3)}, args)

		name, args, _ = callOf(t, p, body(t, tools, user("What does get weather say for New York City?")))
		assert.Equal(t, "get_weather", name, "underscores read as spaces")
		assert.Equal(t, map[string]any{"location": "New York City"}, args, "only required and mentioned arguments")

		name, args, _ = callOf(t, p, body(t, tools, user("please search web to find the best pizza in Naples")))
		assert.Equal(t, "searchWeb", name, "camelCase read as words")
		assert.Equal(t, "find the best pizza in Naples", args["query"])

		name, args, _ = callOf(t, p, body(t, tools, user("Can you LOOKUP_ORDER #98765?")))
		assert.Equal(t, "lookup_order", name, "case-insensitive")
		assert.Equal(t, map[string]any{"order_id": "98765", "include_items": true}, args)

		name, args, _ = callOf(t, p, body(t, tools, user("send_email to bob@example.com saying the report is ready")))
		assert.Equal(t, "send_email", name)
		assert.Equal(t, "bob@example.com", args["to"])
		assert.NotEmpty(t, args["subject"])
		assert.NotEmpty(t, args["body"])

		name, args, _ = callOf(t, p, body(t, tools, user("ping the server")))
		assert.Equal(t, "ping", name)
		assert.Empty(t, args, "no parameters → {}")
	})
}

func TestToolCallNotNamed(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		tools := map[string]any{"tools": weatherTools()}
		for _, text := range []string{
			"What's the weather like in Paris today?",
			"Tell me a joke about weathermen", // "weather" alone is not the tool's name
			"I have a get_weatherly question", // not at a word boundary
		} {
			c, _ := chat(t, p, body(t, tools, user(text)))
			assert.Equal(t, "stop", c.Choices[0].FinishReason, text)
			assert.Empty(t, c.Choices[0].Message.ToolCalls, text)
			require.NotNil(t, c.Choices[0].Message.Content)
			assert.True(t, strings.HasPrefix(*c.Choices[0].Message.Content, answerPrefix))
		}
	})
}

func TestToolChoice(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		tools := weatherTools()

		// none: never a tool call, even when named.
		c, _ := chat(t, p, body(t, map[string]any{"tools": tools, "tool_choice": "none"}, user("get_weather in Oslo")))
		assert.Equal(t, "stop", c.Choices[0].FinishReason)
		assert.Equal(t, "Mock answer: get_weather Oslo.", *c.Choices[0].Message.Content)

		// auto behaves like no tool_choice.
		name, _, _ := callOf(t, p, body(t, map[string]any{"tools": tools, "tool_choice": "auto"}, user("get_weather in Oslo")))
		assert.Equal(t, "get_weather", name)

		// A forced function is called whatever the text says.
		forced := map[string]any{"type": "function", "function": map[string]any{"name": "lookup_order"}}
		name, args, _ := callOf(t, p, body(t, map[string]any{"tools": tools, "tool_choice": forced}, user("hello there")))
		assert.Equal(t, "lookup_order", name)
		assert.Regexp(t, `^mock-[0-9a-f]{8}$`, args["order_id"])
		name, _, _ = callOf(t, p, body(t, map[string]any{"tools": tools, "tool_choice": forced}, user("get_weather in Oslo")))
		assert.Equal(t, "lookup_order", name)

		// required: the named tool, else the first.
		name, _, _ = callOf(t, p, body(t, map[string]any{"tools": tools, "tool_choice": "required"}, user("send_email to a@b.co")))
		assert.Equal(t, "send_email", name)
		name, args, _ = callOf(t, p, body(t, map[string]any{"tools": tools, "tool_choice": "required"}, user("hello there")))
		assert.Equal(t, "get_weather", name)
		assert.Equal(t, "San Francisco", args["location"])
	})
}

func TestToolResultIsAnswered(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		tools := weatherTools()
		b := body(t, map[string]any{"tools": tools},
			user("get_weather in Oslo"),
			msg{Role: "assistant", Content: nil, ToolCalls: []any{map[string]any{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "get_weather", "arguments": `{"location":"Oslo"}`}}}},
			msg{Role: "tool", ToolCallID: "call_1", Content: `{"temp":-3,"sky":"snow"}`},
		)
		c, _ := chat(t, p, b)
		assert.Equal(t, "stop", c.Choices[0].FinishReason, "no second call of the same tool")
		assert.Equal(t, `Mock answer: get_weather returned {"temp":-3,"sky":"snow"}.`, *c.Choices[0].Message.Content)
	})
}

func TestToolCallDeterministicAndCounted(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := body(t, map[string]any{"tools": weatherTools()}, user("Use get_weather for Paris please"))
		_, _, c1 := callOf(t, p, b)
		_, _, c2 := callOf(t, p, b)
		assert.Equal(t, c1.Choices[0].Message.ToolCalls[0].ID, c2.Choices[0].Message.ToolCalls[0].ID)
		assert.Positive(t, c1.Usage.CompletionTokens)
		assert.Equal(t, c1.Usage.PromptTokens+c1.Usage.CompletionTokens, c1.Usage.TotalTokens)
	})
}
