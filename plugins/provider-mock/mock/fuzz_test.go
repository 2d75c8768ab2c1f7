package mock

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// FuzzChat checks that no body makes the mock panic, that every answer is
// valid JSON, that streaming reassembles to the same content, and that
// failures are 400 ProviderErrors.
func FuzzChat(f *testing.F) {
	for _, b := range sampleBodies(f) {
		f.Add(string(b))
	}
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"Labels:\n- a\n- b"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"one of (a, b"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"either 'x' or 'y'"}],"max_tokens":1}`,
		`{"model":"m","messages":[{"role":"user","content":"\u00e9t\u00e9 \u65e5\u672c \ud83d\ude00"}],"response_format":{"type":"json_object"}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"$ref":"#","type":"object","properties":{"a":{"$ref":"#"}}}}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		m := &Mock{}
		resp, err := m.Chat(context.Background(), pluginapi.ChatRequest{Body: []byte(body)})
		if err != nil {
			var pe *pluginapi.ProviderError
			if !errors.As(err, &pe) || pe.Status != 400 {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !json.Valid(resp.Body) {
			t.Fatalf("invalid JSON: %s", resp.Body)
		}
		var c completion
		if err := json.Unmarshal(resp.Body, &c); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		err = m.StreamChat(context.Background(), pluginapi.ChatRequest{Body: []byte(body), IncludeUsage: true}, func(ch pluginapi.ChatChunk) error {
			if !json.Valid(ch.Data) {
				t.Fatalf("invalid chunk: %s", ch.Data)
			}
			var k chunk
			if err := json.Unmarshal(ch.Data, &k); err != nil {
				return err
			}
			for _, x := range k.Choices {
				if x.Delta.Content != nil {
					got.WriteString(*x.Delta.Content)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := c.Choices[0].Message.Content; want != nil && *want != got.String() {
			t.Fatalf("stream %q != chat %q", got.String(), *want)
		}
		if c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens {
			t.Fatalf("usage does not add up: %+v", c.Usage)
		}
	})
}

// FuzzPromptText drives the label, JSON and tool heuristics with arbitrary
// prompt text.
func FuzzPromptText(f *testing.F) {
	for _, s := range []string{
		"Classify into one of: billing, bug, feature_request.\n\nTicket: refund me",
		"Labels:\n1. a\n2) b\n- c: d\n\n",
		"Categories (pick one): x, y\nget_weather in Paris",
		"Answer with either \"yes\" or \"no\"? Is it? 'a' or 'b'",
		"Respond in JSON like {\"category\": 1, \"n\": 2} with keys a, b and c",
		"my name is Ann Lee, ann@x.io, order #12345, 2024-05-01, https://x.y/z, +1 555 123 4567",
	} {
		f.Add(s)
	}
	tools := weatherTools()
	schema := jsonSchemaFormat(map[string]any{"type": "object", "properties": map[string]any{
		"label": map[string]any{"type": "string"}, "city": map[string]any{"type": "string", "maxLength": 3},
		"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"n":    map[string]any{"type": "integer", "exclusiveMaximum": 2},
	}})
	f.Fuzz(func(t *testing.T, text string) {
		for _, extra := range []map[string]any{
			nil,
			{"tools": tools},
			{"response_format": jsonObjectFormat()},
			{"response_format": schema},
			{"max_tokens": 2},
		} {
			b := body(t, extra, sys(text), user(text))
			resp, err := (&Mock{}).Chat(context.Background(), pluginapi.ChatRequest{Body: b})
			if err != nil {
				t.Fatal(err)
			}
			var c completion
			if err := json.Unmarshal(resp.Body, &c); err != nil {
				t.Fatalf("%v: %s", err, resp.Body)
			}
			if extra != nil && extra["response_format"] != nil && c.Choices[0].Message.Content != nil &&
				!json.Valid([]byte(*c.Choices[0].Message.Content)) {
				t.Fatalf("JSON mode answer is not JSON: %s", *c.Choices[0].Message.Content)
			}
			for _, tc := range c.Choices[0].Message.ToolCalls {
				if !json.Valid([]byte(tc.Function.Arguments)) {
					t.Fatalf("arguments are not JSON: %s", tc.Function.Arguments)
				}
			}
		}
	})
}
