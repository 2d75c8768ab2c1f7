package anthropic

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// translated is the Messages API request body translate makes of body.
func translated(t *testing.T, body string) string {
	t.Helper()
	r, err := translate([]byte(body), false)
	require.NoError(t, err)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return string(b)
}

func TestTranslate(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{
			"a plain question gets the default max_tokens",
			`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hi"}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			"an assistant's refusal part is kept as its text",
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]},{"role":"user","content":"b"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"a"}]},
			  {"role":"assistant","content":[{"type":"text","text":"I can't help with that."}]},{"role":"user","content":[{"type":"text","text":"b"}]}]}`,
		},
		{
			"another provider's tool call id: the bytes the API refuses replaced, a digest of the id added, the same for the call and its result",
			`{"model":"m","messages":[{"role":"user","content":"Weather?"},
			  {"role":"assistant","tool_calls":[{"id":"functions.get_weather:0","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
			  {"role":"tool","tool_call_id":"functions.get_weather:0","content":"sunny"}],
			  "tools":[{"type":"function","function":{"name":"get_weather"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Weather?"}]},
			  {"role":"assistant","content":[{"type":"tool_use","id":"functions_get_weather_0_79ac1aaab216","name":"get_weather","input":{}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"functions_get_weather_0_79ac1aaab216","content":[{"type":"text","text":"sunny"}]}]}],
			  "tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{}}}]}`,
		},
		{
			"text of white space alone is dropped like empty text, from every role",
			`{"model":"m","messages":[{"role":"system","content":" "},{"role":"user","content":"  "},
			  {"role":"user","content":[{"type":"text","text":"\n"},{"type":"text","text":"Hi"}]},
			  {"role":"assistant","content":" \n"},{"role":"assistant","content":"Hello"},{"role":"user","content":"Bye"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]},
			  {"role":"assistant","content":[{"type":"text","text":"Hello"}]},{"role":"user","content":[{"type":"text","text":"Bye"}]}]}`,
		},
		{
			"a last assistant turn, which the API continues, loses its trailing white space",
			`{"model":"m","messages":[{"role":"user","content":"Say it."},{"role":"assistant","content":"Sure: "}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Say it."}]},
			  {"role":"assistant","content":[{"type":"text","text":"Sure:"}]}]}`,
		},
		{
			"max_tokens is kept",
			`{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"Hi"}]}`,
			`{"model":"m","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			"max_completion_tokens wins over max_tokens",
			`{"model":"m","max_tokens":50,"max_completion_tokens":70,"messages":[{"role":"user","content":"Hi"}]}`,
			`{"model":"m","max_tokens":70,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			"system and developer messages become the system prompt, wherever they are",
			`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
			  {"role":"developer","content":[{"type":"text","text":"Answer in French."}]}]}`,
			`{"model":"m","max_tokens":4096,"system":"Be brief.\n\nAnswer in French.","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			"multi-turn, consecutive same-role messages merged",
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},
			  {"role":"assistant","content":"c"},{"role":"assistant","content":[{"type":"text","text":"d"}]},{"role":"user","content":"e"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[
			  {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
			  {"role":"assistant","content":[{"type":"text","text":"c"},{"type":"text","text":"d"}]},
			  {"role":"user","content":[{"type":"text","text":"e"}]}]}`,
		},
		{
			"images by URL and by base64 data URL",
			`{"model":"m","messages":[{"role":"user","content":[
			  {"type":"text","text":"What is in these?"},
			  {"type":"image_url","image_url":{"url":"https://example.com/cat.jpg","detail":"high"}},
			  {"type":"image_url","image_url":{"url":"data:image/PNG;base64,iVBORw0KGgo="}}]}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[
			  {"type":"text","text":"What is in these?"},
			  {"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}},
			  {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`,
		},
		{
			"tool calls and tool results without tools: the history's tools declared, none to be called",
			`{"model":"m","messages":[{"role":"user","content":"Weather in SF and NYC?"},
			  {"role":"assistant","content":null,"tool_calls":[
			    {"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\": \"SF\"}"}},
			    {"id":"toolu_2","type":"function","function":{"name":"get_weather","arguments":""}}]},
			  {"role":"tool","tool_call_id":"toolu_1","content":"15 C"},
			  {"role":"tool","tool_call_id":"toolu_2","content":[{"type":"text","text":"20 C"}]},
			  {"role":"user","content":"Thanks. Which is warmer?"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[
			  {"role":"user","content":[{"type":"text","text":"Weather in SF and NYC?"}]},
			  {"role":"assistant","content":[
			    {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"location":"SF"}},
			    {"type":"tool_use","id":"toolu_2","name":"get_weather","input":{}}]},
			  {"role":"user","content":[
			    {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"15 C"}]},
			    {"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"20 C"}]},
			    {"type":"text","text":"Thanks. Which is warmer?"}]}],
			  "tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{}}}],
			  "tool_choice":{"type":"none"}}`,
		},
		{
			"tool calls and tool results with tools: the caller's tools and choice as given",
			`{"model":"m","messages":[{"role":"user","content":"Weather?"},
			  {"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
			  {"role":"tool","tool_call_id":"toolu_1","content":"15 C"}],
			  "tools":[{"type":"function","function":{"name":"now"}}],"tool_choice":"auto"}`,
			`{"model":"m","max_tokens":4096,"messages":[
			  {"role":"user","content":[{"type":"text","text":"Weather?"}]},
			  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"15 C"}]}]}],
			  "tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"auto"}}`,
		},
		{
			"a tool result after the user's text: the result first, as the Messages API wants",
			`{"model":"m","messages":[{"role":"user","content":"Weather?"},
			  {"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
			  {"role":"user","content":"In Celsius."},
			  {"role":"tool","tool_call_id":"toolu_1","content":"15 C"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[
			  {"role":"user","content":[{"type":"text","text":"Weather?"}]},
			  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},
			  {"role":"user","content":[
			    {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"15 C"}]},
			    {"type":"text","text":"In Celsius."}]}],
			  "tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{}}}],
			  "tool_choice":{"type":"none"}}`,
		},
		{
			"tools, tool_choice required, no parallel calls",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],
			  "tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather",
			    "parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}},
			    {"type":"function","function":{"name":"now"}}],
			  "tool_choice":"required","parallel_tool_calls":false}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
			  "tools":[{"name":"get_weather","description":"Get the weather",
			    "input_schema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}},
			    {"name":"now","input_schema":{"type":"object","properties":{}}}],
			  "tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
		},
		{
			"tool_choice auto",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
			  "tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"auto"}}`,
		},
		{
			"tool_choice none",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","parallel_tool_calls":false}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
			  "tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"none"}}`,
		},
		{
			"tool_choice naming a function",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],
			  "tool_choice":{"type":"function","function":{"name":"f"}}}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
			  "tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"f"}}`,
		},
		{
			"parallel_tool_calls false alone disables parallel use under auto",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"parallel_tool_calls":false}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
			  "tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`,
		},
		{
			"tool_choice without tools is dropped",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"tool_choice":"auto"}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			"json_object becomes an instruction after the system prompt",
			`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"response_format":{"type":"json_object"}}`,
			`{"model":"m","max_tokens":4096,"system":"Be brief.\n\n` + jsonInstruction + `","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			"json_schema becomes an instruction with the schema",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],
			  "response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{ "type": "object" }}}}`,
			`{"model":"m","max_tokens":4096,"system":"` + jsonSchemaInstruction + `{\"type\":\"object\"}","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			"text response_format changes nothing",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"text"}}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			"stop, temperature, top_p, user",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"stop":["END"," ","\n\nHuman:"],"temperature":0.2,"top_p":0.9,"user":"u-42"}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
			  "stop_sequences":["END","\n\nHuman:"],"temperature":0.2,"top_p":0.9,"metadata":{"user_id":"u-42"}}`,
		},
		{
			"stop as a string",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"stop":"END"}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stop_sequences":["END"]}`,
		},
		{
			"harmless unsupported fields are dropped",
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"n":1,"seed":7,"frequency_penalty":0.5,"presence_penalty":0.1,
			  "logit_bias":{"50256":-100},"store":true,"service_tier":"auto","stream_options":{"include_usage":true},"logprobs":false}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.JSONEq(t, tc.want, translated(t, tc.in))
		})
	}
}

func TestTranslateStreamFlag(t *testing.T) {
	r, err := translate([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`), true)
	require.NoError(t, err)
	assert.True(t, r.Stream)
	r, err = translate([]byte(`{"model":"m","messages":[{"role":"user","content":"Hi"}]}`), false)
	require.NoError(t, err)
	assert.False(t, r.Stream)
}

func TestTranslateRefuses(t *testing.T) {
	// What the Messages API has no equivalent for is refused as
	// unsupported, for the call's next provider to serve.
	unsupported := map[string]bool{"n above 1": true, "logprobs": true, "top_logprobs": true, "audio output": true,
		"audio": true, "temperature above 1": true, "an audio part": true, "a tool that is not a function": true}
	for _, tc := range []struct {
		name, in, param string
	}{
		{"n above 1", `{"model":"m","n":2,"messages":[{"role":"user","content":"Hi"}]}`, "n"},
		{"logprobs", `{"model":"m","logprobs":true,"messages":[{"role":"user","content":"Hi"}]}`, "logprobs"},
		{"top_logprobs", `{"model":"m","top_logprobs":3,"messages":[{"role":"user","content":"Hi"}]}`, "logprobs"},
		{"audio output", `{"model":"m","modalities":["text","audio"],"messages":[{"role":"user","content":"Hi"}]}`, "modalities"},
		{"audio", `{"model":"m","audio":{"voice":"alloy"},"messages":[{"role":"user","content":"Hi"}]}`, "audio"},
		{"temperature above 1", `{"model":"m","temperature":1.5,"messages":[{"role":"user","content":"Hi"}]}`, "temperature"},
		{"max_tokens 0", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"Hi"}]}`, "max_tokens"},
		{"no model", `{"messages":[{"role":"user","content":"Hi"}]}`, "model"},
		{"only a system message", `{"model":"m","messages":[{"role":"system","content":"Hi"}]}`, "messages"},
		{"only white space", `{"model":"m","messages":[{"role":"user","content":" \t\n"}]}`, "messages"},
		{"an unknown role", `{"model":"m","messages":[{"role":"function","content":"Hi"}]}`, "messages[0].role"},
		{"an audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, "messages[0].content[0].type"},
		{"an ftp image", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"a data URL that is not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"an image type the API does not read", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/tiff;base64,AAAA"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"an image part without image_url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "messages[0].content[0].image_url"},
		{"an image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},{"role":"user","content":"Hi"}]}`, "messages[0].content[0].type"},
		{"tool arguments that are not an object", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"tool arguments that are not JSON", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{oops"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"a tool call without an id", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}]}`, "messages[1].tool_calls[0]"},
		{"a tool message without tool_call_id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id"},
		{"a tool that is not a function", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"code_interpreter"}]}`, "tools[0].type"},
		{"tool parameters that are not an object", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, "tools[0].function.parameters"},
		{"tool parameters of another type", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}]}`, "tools[0].function.parameters"},
		{"a tool without a name", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name"},
		{"an unknown tool_choice", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"sometimes"}`, "tool_choice"},
		{"a named tool_choice without tools", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"tool_choice":{"type":"function","function":{"name":"f"}}}`, "tool_choice"},
		{"an unknown response_format", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"yaml"}}`, "response_format.type"},
		{"json_schema without a schema", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, "response_format.json_schema.schema"},
		{"stop of the wrong type", `{"model":"m","messages":[{"role":"user","content":"Hi"}],"stop":7}`, ""},
		{"content of the wrong type", `{"model":"m","messages":[{"role":"user","content":7}]}`, ""},
		{"not an object", `[1,2]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := translate([]byte(tc.in), false)
			var pe *pluginapi.ProviderError
			require.True(t, errors.As(err, &pe), "want a ProviderError, got %v", err)
			assert.Equal(t, 400, pe.Status)
			assert.Equal(t, "invalid_request_error", pe.Type)
			if unsupported[tc.name] {
				assert.Equal(t, pluginapi.CodeUnsupported, pe.Code)
			} else {
				assert.Empty(t, pe.Code)
			}
			if tc.param != "" {
				assert.Equal(t, tc.param, pe.Param)
			}
			assert.NotEmpty(t, pe.Message)
		})
	}
}

// Every request the translation accepts is one the fake upstream, built
// from the documentation, accepts too.
func TestTranslatedRequestsAreValid(t *testing.T) {
	for _, in := range []string{
		`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":"c"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":""}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":""},{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklGR"}}]}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`,
		// Another provider's tool call ids, blank text, and a prefill
		// ending in white space: each one the Messages API refuses as is.
		`{"model":"m","messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":" \n","tool_calls":[{"id":"functions.get_weather:0","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"functions.get_weather:0","content":"  "}]}`,
		`{"model":"m","messages":[{"role":"system","content":"  "},{"role":"user","content":"   "},{"role":"user","content":[{"type":"text","text":"\t"},{"type":"text","text":"Hi"}]},{"role":"assistant","content":"Sure: "}]}`,
	} {
		r, err := translate([]byte(in), false)
		require.NoError(t, err, in)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		var wr wireRequest
		require.NoError(t, json.Unmarshal(b, &wr))
		assert.Empty(t, wr.validate(), in)
	}
}

// Anthropic refuses an input_schema without "type":"object"; OpenAI takes
// one, so it is added.
// Ids the Messages API takes are kept; any other becomes one it takes,
// and two ids that differ stay two.
func TestToolUseID(t *testing.T) {
	assert.Equal(t, "toolu_01A-b_9", toolUseID("toolu_01A-b_9"))
	for _, id := range []string{"functions.get_weather:0", "call é 1", "", "a/b"} {
		assert.Regexp(t, toolUseIDPattern, toolUseID(id), id)
		assert.Equal(t, toolUseID(id), toolUseID(id), "the same id every time")
	}
	assert.NotEqual(t, toolUseID("a.b"), toolUseID("a:b"))
	assert.NotEqual(t, toolUseID("a.b"), toolUseID("a_b"))
}

func TestToolParametersWithoutTypeBecomeAnObjectSchema(t *testing.T) {
	for in, want := range map[string]string{
		`{}`: `{"type":"object"}`,
		`{"properties":{"city":{"type":"string"}}}`: `{"type":"object","properties":{"city":{"type":"string"}}}`,
		`{"type":"object","properties":{}}`:         `{"type":"object","properties":{}}`,
	} {
		body := `{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":` + in + `}}]}`
		r, err := translate([]byte(body), false)
		require.NoError(t, err, in)
		require.Len(t, r.Tools, 1)
		assert.JSONEq(t, want, string(r.Tools[0].InputSchema), in)
	}
}
