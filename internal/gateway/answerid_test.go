package gateway

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// answerID reads the id and the model wherever the answer puts them,
// from a stored stream's first chunk, and nothing from what is not an
// answer.
func TestAnswerID(t *testing.T) {
	for body, want := range map[string][2]string{
		`{"id":"c-1","object":"chat.completion","model":"m-1","choices":[{"message":{"content":"x"}}]}`: {"c-1", "m-1"},
		`{"choices":[{"message":{"content":"{\"id\":\"no\"}"}}],"usage":{},"model":"m-2","id":"c-2"}`:   {"c-2", "m-2"},
		`{"object":"chat.completion","model":"m-3","choices":[]}`:                                       {"", "m-3"},
		`{"chunks":[{"id":"c-4","model":"m-4","choices":[]},{"id":"c-5","model":"m-5"}]}`:               {"c-4", "m-4"},
		`{"chunks":[]}`: {"", ""},
		` {"id" : "c\"6", "model":"m\\7\u00e9"} `: {`c"6`, `m\7é`},
		`{"choices":[{"content":"}]{\"x","n":[1,{"a":null}]}],"created":17,"ok":true,"id":"c-8","model":"m-8"}`: {"c-8", "m-8"},
		`{"choices":[{"content":"}"`: {"", ""},
		`[1,2]`:                      {"", ""},
		`{"id":`:                     {"", ""},
		`{"id":7}`:                   {"", ""},
		``:                           {"", ""},
	} {
		id, model := answerID([]byte(body))
		assert.Equal(t, want, [2]string{id, model}, body)
	}
}

// An answer whose id and model have nothing to unescape costs their two
// strings and nothing more.
func TestAnswerIDAllocatesItsStringsOnly(t *testing.T) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[]}`)
	if n := testing.AllocsPerRun(100, func() { answerID(body) }); n > 2 {
		t.Fatalf("answerID allocates %v times, want 2", n)
	}
}

// BenchmarkAnswerID reads a long answer's id and model: the keys before
// its choices, not its text.
func BenchmarkAnswerID(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("Paris is the capital of France. ", 200) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
	b.ReportAllocs()
	for b.Loop() {
		if id, _ := answerID(body); id == "" {
			b.Fatal("no id")
		}
	}
}

// finishReasons finds every choice's finish reason, a stored stream's
// chunks' too, and never one quoted inside a message's text.
func TestFinishReasons(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"one choice", `{"id":"a","choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]}`, []string{"stop"}},
		{"two choices, spaces", `{"choices":[{"finish_reason" : "length"},{"finish_reason":"tool_calls"}]}`, []string{"length", "tool_calls"}},
		{"quoted in the text", `{"choices":[{"message":{"content":"say \"finish_reason\":\"evil\""},"finish_reason":"stop"}]}`, []string{"stop"}},
		{"a stream", `{"object":"chat.completion.stream","chunks":[{"choices":[{"finish_reason":null}]},{"choices":[{"finish_reason":"stop"}]}]}`, []string{"stop"}},
		{"none", `{"error":{"message":"no"}}`, nil},
		{"cut short", `{"choices":[{"finish_reason":"st`, nil},
	} {
		assert.Equal(t, c.want, finishReasons([]byte(c.body)), c.name)
	}
}
