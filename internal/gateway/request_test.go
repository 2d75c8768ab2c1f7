package gateway_test

import (
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
