package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// FuzzTranslate checks that any body either is refused with a 400 naming
// what is wrong, or becomes a request the documented Messages API accepts:
// turns alternating, a max_tokens, tool results answering tool uses.
// Seeds: testdata/fuzz/FuzzTranslate, and the bodies below.
func FuzzTranslate(f *testing.F) {
	for _, seed := range []string{
		hello,
		`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}],"stop":"x","response_format":{"type":"json_object"}}`,
		`{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"t","content":"ok"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := translate(body, false)
		if err != nil {
			var pe *pluginapi.ProviderError
			if !errors.As(err, &pe) || pe.Status != 400 || pe.Type != typeInvalid || pe.Message == "" {
				t.Fatalf("refusal is not a 400 invalid_request_error: %#v", err)
			}
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("translated request does not encode: %v", err)
		}
		var wr wireRequest
		if err := json.Unmarshal(out, &wr); err != nil {
			t.Fatalf("translated request does not decode: %v", err)
		}
		if msg := wr.validate(); msg != "" && !toolResultOrphan(msg) {
			t.Fatalf("translated request is invalid upstream (%s): %s", msg, out)
		}
	})
}

// toolResultOrphan reports a tool result answering no earlier tool call:
// the caller's conversation, passed on for the upstream to judge.
func toolResultOrphan(msg string) bool {
	return strings.Contains(msg, "tool_result must answer")
}
