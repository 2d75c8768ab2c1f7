package shape

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReadReplySeesToolCalls(t *testing.T) {
	for body, want := range map[string]bool{
		`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"refund","arguments":"{}"}}]}}]}`: true,
		`{"choices":[{"message":{"content":null,"function_call":{"name":"refund","arguments":"{}"}}}]}`:                                        true,
		`{"chunks":[{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"refund"}}]}}]}]}`:                             true,
		`{"choices":[{"message":{"content":"ok","tool_calls":null}}]}`:                                                                         false,
		`{"choices":[{"message":{"content":"ok","tool_calls":[]}}]}`:                                                                           false,
	} {
		if got := ReadReply([]byte(body)).ToolCall; got != want {
			t.Errorf("%s: got %v", body, got)
		}
	}
}

func TestToolCalls(t *testing.T) {
	completion := `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"c1","type":"function","function":{"name":"refund","arguments":"{\"order\":7}"}},
		{"id":"c2","type":"function","function":{"name":"notify","arguments":"{}"}}]}}]}`
	assert.Equal(t, []ToolCall{{"refund", `{"order":7}`}, {"notify", "{}"}}, ToolCalls([]byte(completion)))

	legacy := `{"choices":[{"message":{"function_call":{"name":"refund","arguments":"{}"}}}]}`
	assert.Equal(t, []ToolCall{{"refund", "{}"}}, ToolCalls([]byte(legacy)))

	// A stream: names in the first piece, arguments in every piece, calls
	// told apart by index.
	stream := `{"chunks":[
		{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"refund","arguments":"{\"ord"}}]}}]},
		{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"notify","arguments":""}}]}}]},
		{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"er\":7}"}}]}}]}]}`
	assert.Equal(t, []ToolCall{{"refund", `{"order":7}`}, {"notify", ""}}, ToolCalls([]byte(stream)))

	assert.Empty(t, ToolCalls([]byte(`{"choices":[{"message":{"content":"just text"}}]}`)))
	assert.Empty(t, ToolCalls([]byte(`not json`)))
}
