package gateway_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/gateway"
)

func TestParseRequestReadsWhatSvcReasonsAbout(t *testing.T) {
	body := `{"model":"gpt-4o-mini","temperature":0,"stream":true,"stream_options":{"include_usage":true},` +
		`"response_format":{"type":"json_object"},"seed":3,` +
		`"tools":[{"type":"function","function":{"name":"get_weather"}},{"type":"function","function":{"name":"lookup"}}],` +
		`"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"there"}]},{"role":"assistant","content":null,"tool_calls":[]}]}`
	r, err := gateway.ParseRequest([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, "gpt-4o-mini", r.Model)
	assert.True(t, r.Stream)
	assert.True(t, r.IncludeUsage)
	require.NotNil(t, r.Temperature)
	assert.Zero(t, *r.Temperature)
	assert.Equal(t, "json_object", r.ResponseFormat)
	assert.Equal(t, []string{"get_weather", "lookup"}, r.Tools)
	assert.Equal(t, []gateway.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi\nthere"}, {Role: "assistant"}}, r.Messages)
	assert.Equal(t, body, string(r.Body), "the body passes through untouched")
}

func TestParseRequestErrorsNameTheField(t *testing.T) {
	for body, param := range map[string]string{
		`{"messages":[{"role":"user","content":"x"}]}`:                                                         "model",
		`{"model":5,"messages":[]}`:                                                                            "model",
		`{"model":"m","messages":[{"content":"x"}]}`:                                                           "messages",
		`{"model":"m","messages":[{"role":"user"}]}`:                                                           "messages",
		`{"model":"m","messages":[{"role":"user","content":{}}]}`:                                              "messages",
		`{"model":"m","messages":[{"role":"user","content":"x"}],"top_p":2}`:                                   "top_p",
		`{"model":"m","messages":[{"role":"user","content":"x"}],"n":0}`:                                       "n",
		`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":0}`:                              "max_tokens",
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":"yes"}`:                              "stream",
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`: "tools",
	} {
		_, err := gateway.ParseRequest([]byte(body))
		e := errs.As(err)
		require.NotNil(t, e, body)
		assert.Equal(t, errs.Invalid, e.Kind, body)
		assert.Equal(t, param, e.Param, body)
		assert.NotEmpty(t, e.Public, body)
	}
}

// FuzzParseRequest: any body is either a request with a model and messages
// or an Invalid error; never a panic.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":2.5}`,
		`[]`, `null`, `{`, `{"model":"\u0000","messages":[{}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := gateway.ParseRequest(body)
		if err != nil {
			if e := errs.As(err); e == nil || e.Kind != errs.Invalid {
				t.Fatalf("error %v is not an Invalid *errs.Error", err)
			}
			return
		}
		if r.Model == "" || len(r.Messages) == 0 {
			t.Fatalf("accepted a request without model or messages: %q", body)
		}
	})
}

func TestKeysDifferingOnlyInCaseAreRefused(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-4o","MODEL":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"evil"}],"Messages":[{"role":"user","content":"benign"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"evil","CONTENT":"benign"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a","Name":"b"}}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"stream":false,"Stream":true}`,
	} {
		_, err := gateway.ParseRequest([]byte(body))
		require.Error(t, err, body)
		assert.Contains(t, err.Error(), "more than one letter case", body)
	}
	_, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"the Model and the MODEL"}],"metadata":{"a":{"b":[{"c":1,"d":2}]},"e":"f"}}`))
	assert.NoError(t, err, "values and distinct keys are fine")
}

// Keys are read as the provider reads them, exactly: a repeated key (in
// one case or two) and a field's name in another case are refused and
// named, in every object, where Go alone would keep the last of the
// repeats and bind the other spelling.
func TestKeysAreReadAsWritten(t *testing.T) {
	for _, c := range []struct{ body, param, says string }{
		{`{"model":"gpt-4o","model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, "model", "appears more than once"},
		{`{"MODEL":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, "MODEL", "did you mean 'model'"},
		{`{"model":"gpt-4o","messages":[{"Role":"user","content":"hi"}]}`, "messages[0].Role", "did you mean 'role'"},
		{`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"user","content":"a","content":"b"}]}`, "messages[1].content", "appears more than once"},
		{`{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","TEXT":"evil"}]}]}`, "messages[0].content[0].TEXT", "did you mean 'text'"},
		{`{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"stream_options":{"Include_Usage":true},"stream":true}`, "stream_options.Include_Usage", "did you mean"},
		{`{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a","parameters":{"p":1,"p":2}}}]}`, "tools[0].function.parameters.p", "appears more than once"},
	} {
		_, err := gateway.ParseRequest([]byte(c.body))
		e := errs.As(err)
		require.NotNil(t, e, c.body)
		assert.Equal(t, errs.Invalid, e.Kind, c.body)
		assert.Equal(t, c.param, e.Param, c.body)
		assert.Contains(t, e.Public, c.says, c.body)
	}
	r, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi","Name":"x"}],"metadata":{"Team":"a","team_b":"b"},"Seed":1}`))
	require.NoError(t, err, "a key that is no field of svc's passes through, in any case")
	assert.Equal(t, "gpt-4o", r.Model)
}

// BenchmarkParseRequest is a typical chat request and one with a long
// prompt, through validation and the canonical form.
func BenchmarkParseRequest(b *testing.B) {
	small := []byte(`{"model":"gpt-4o-mini","temperature":0.2,"max_tokens":200,"user":"u-1","metadata":{"team":"support"},` +
		`"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}}],` +
		`"messages":[{"role":"system","content":"Classify the ticket as one of: billing, bug, feature_request."},` +
		`{"role":"user","content":[{"type":"text","text":"I was charged twice for my invoice this month."}]}]}`)
	long := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("Summarize this report. ", 50_000) + `"}]}`)
	for name, body := range map[string][]byte{"small": small, "1MB": long} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gateway.ParseRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The token limit is read once, with the request: max_completion_tokens
// before max_tokens.
func TestParseRequestReadsTheTokenLimit(t *testing.T) {
	for body, want := range map[string]int{
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`:                                            0,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":64}`:                            64,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":64,"max_completion_tokens":32}`: 32,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":16}`:                 16,
	} {
		r, err := gateway.ParseRequest([]byte(body))
		require.NoError(t, err)
		assert.Equal(t, want, r.MaxTokens, body)
	}
}
