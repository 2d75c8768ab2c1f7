package mock

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func jsonObjectFormat() map[string]any { return map[string]any{"type": "json_object"} }

func jsonSchemaFormat(schema any) map[string]any {
	return map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "out", "strict": true, "schema": schema}}
}

func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), s)
	return m
}

func TestJSONObjectDefault(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		got := content(t, p, body(t, map[string]any{"response_format": jsonObjectFormat()},
			sys("Answer in JSON."), user("What is the capital of France?")))
		m := decodeObject(t, got)
		assert.Equal(t, map[string]any{"answer": "Mock answer: capital France."}, m)

		got = content(t, p, body(t, map[string]any{"response_format": jsonObjectFormat()},
			sys("Classify the ticket into one of: billing, bug, feature_request. Respond in JSON."),
			user("The app crashes when I upload a photo.")))
		m = decodeObject(t, got)
		assert.Equal(t, "bug", m["label"])
		assert.IsType(t, "", m["answer"])
	})
}

func TestJSONObjectRequestedKeys(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		got := content(t, p, body(t, map[string]any{"response_format": jsonObjectFormat()},
			sys(`Triage the ticket. Categories: billing, bug, feature_request. Respond in JSON like {"category": "...", "priority": "...", "confidence": 0.5}.`),
			user("URGENT: the app crashes on login for all users")))
		m := decodeObject(t, got)
		assert.Equal(t, "bug", m["category"])
		assert.Equal(t, "high", m["priority"])
		assert.IsType(t, float64(0), m["confidence"])
		assert.Len(t, m, 3)
		assert.True(t, strings.HasPrefix(got, `{"category":`), "keys keep the prompt's order: %s", got)

		got = content(t, p, body(t, map[string]any{"response_format": jsonObjectFormat()},
			sys("Extract the sender. Return a JSON object with keys name, email and is_customer."),
			user("Hi, my name is Maria Lopez (maria@example.org), a customer since 2019.")))
		m = decodeObject(t, got)
		assert.Equal(t, map[string]any{"name": "Maria Lopez", "email": "maria@example.org", "is_customer": true}, m)
	})
}

func TestJSONSchemaOutput(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		schema := map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":       map[string]any{"type": "string"},
				"email":      map[string]any{"type": "string", "format": "email"},
				"order_id":   map[string]any{"type": "string"},
				"category":   map[string]any{"type": "string", "enum": []any{"billing", "shipping", "bug"}},
				"sentiment":  map[string]any{"type": "string"},
				"urgent":     map[string]any{"type": "boolean"},
				"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
				"rating":     map[string]any{"type": "integer", "minimum": 3, "maximum": 5},
				"quantity":   map[string]any{"type": "integer"},
				"tags":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "maxItems": 2},
				"summary":    map[string]any{"type": "string", "maxLength": 40},
				"code":       map[string]any{"type": "string", "minLength": 12},
				"created":    map[string]any{"type": "string", "format": "date-time"},
				"note":       map[string]any{"type": []any{"string", "null"}},
				"kind":       map[string]any{"const": "ticket"},
				"address": map[string]any{"type": "object", "properties": map[string]any{
					"city":    map[string]any{"type": "string"},
					"country": map[string]any{"type": "string"},
				}, "required": []any{"city", "country"}, "additionalProperties": false},
				"items": map[string]any{"type": "array", "minItems": 2, "items": map[string]any{"$ref": "#/$defs/item"}},
				"status": map[string]any{"anyOf": []any{
					map[string]any{"type": "null"},
					map[string]any{"type": "string", "enum": []any{"open", "closed"}},
				}},
			},
			"required": []any{"name", "email", "order_id", "category", "sentiment", "urgent", "confidence", "rating",
				"quantity", "tags", "summary", "code", "created", "note", "kind", "address", "items", "status"},
			"additionalProperties": false,
			"$defs": map[string]any{
				"item": map[string]any{"type": "object", "properties": map[string]any{
					"sku": map[string]any{"type": "string"},
					"qty": map[string]any{"type": "integer", "exclusiveMinimum": 0},
				}, "required": []any{"sku", "qty"}},
			},
		}
		b := body(t, map[string]any{"response_format": jsonSchemaFormat(schema)},
			sys("Extract the order details."),
			user("Hi, my name is Maria Lopez, email maria@example.org. I ordered 3 lamps (order ORD-12345) to be shipped to Lisbon, but the package never arrived and tracking shows nothing. Very disappointed!"))
		got := content(t, p, b)
		m := decodeObject(t, got)
		checkSchema(t, schema, schema, m, "$")

		assert.Equal(t, "Maria Lopez", m["name"])
		assert.Equal(t, "maria@example.org", m["email"])
		assert.Equal(t, "ORD-12345", m["order_id"])
		assert.Equal(t, "shipping", m["category"], "a string enum is chosen like a label")
		assert.Equal(t, "negative", m["sentiment"])
		assert.Equal(t, float64(3), m["quantity"], "a count-like integer comes from the text")
		assert.Equal(t, "ticket", m["kind"])
		assert.Equal(t, "Lisbon", m["address"].(map[string]any)["city"])
		assert.Len(t, m["items"], 2)
		// json.Marshal wrote the schema's properties sorted; the answer follows that order.
		assert.True(t, strings.HasPrefix(got, `{"address":{"city":`), got)
	})
}

func TestJSONSchemaKeepsPropertyOrder(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := []byte(`{"model":"m","messages":[{"role":"user","content":"The printer is broken again"}],
			"response_format":{"type":"json_schema","json_schema":{"name":"t","schema":{"type":"object",
			"properties":{"title":{"type":"string"},"body":{"type":"string"},"area":{"type":"string"}},
			"required":["title","body","area"]}}}}`)
		got := content(t, p, b)
		assert.Equal(t, `{"title":"Printer broken","body":"printer broken","area":"mock area"}`, got)
	})
}

func TestJSONSchemaTopLevelArrayAndLabels(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		schema := map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"positive", "negative", "neutral"}}}
		got := content(t, p, body(t, map[string]any{"response_format": jsonSchemaFormat(schema)}, user("I love this phone, it is fantastic")))
		assert.Equal(t, `["positive"]`, got)

		schema = map[string]any{"type": "object", "properties": map[string]any{
			"label":  map[string]any{"type": "string"},
			"reason": map[string]any{"type": "string"},
		}, "required": []any{"label", "reason"}}
		got = content(t, p, body(t, map[string]any{"response_format": jsonSchemaFormat(schema)},
			sys("Classify into one of: billing, bug, feature_request."), user("Please add a dark mode, it would be nice.")))
		m := decodeObject(t, got)
		assert.Equal(t, "feature_request", m["label"])
		assert.NotEmpty(t, m["reason"])
	})
}

// checkSchema validates v against the small JSON Schema subset the mock
// claims to honour.
func checkSchema(t *testing.T, root, s map[string]any, v any, path string) {
	t.Helper()
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		s = root["$defs"].(map[string]any)[name].(map[string]any)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if matchesType(a.(map[string]any), v) {
				checkSchema(t, root, a.(map[string]any), v, path)
				return
			}
		}
		t.Errorf("%s: %v matches no anyOf branch", path, v)
		return
	}
	if c, ok := s["const"]; ok {
		assert.Equal(t, c, v, path)
		return
	}
	if enum, ok := s["enum"].([]any); ok {
		assert.Contains(t, enum, v, path)
	}
	if !matchesType(s, v) {
		t.Errorf("%s: %v (%T) does not match type %v", path, v, v, s["type"])
		return
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asSlice(s["required"]) {
			assert.Contains(t, x, r, path)
		}
		if s["additionalProperties"] == false {
			for k := range x {
				assert.Contains(t, props, k, path)
			}
		}
		for k, pv := range x {
			if ps, ok := props[k].(map[string]any); ok {
				checkSchema(t, root, ps, pv, path+"."+k)
			}
		}
	case []any:
		if n, ok := s["minItems"].(int); ok {
			assert.GreaterOrEqual(t, len(x), n, path)
		}
		if n, ok := s["maxItems"].(int); ok {
			assert.LessOrEqual(t, len(x), n, path)
		}
		if is, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				checkSchema(t, root, is, e, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case float64:
		if m, ok := s["minimum"].(int); ok {
			assert.GreaterOrEqual(t, x, float64(m), path)
		}
		if m, ok := s["maximum"].(int); ok {
			assert.LessOrEqual(t, x, float64(m), path)
		}
		if m, ok := s["exclusiveMinimum"].(int); ok {
			assert.Greater(t, x, float64(m), path)
		}
	case string:
		if n, ok := s["maxLength"].(int); ok {
			assert.LessOrEqual(t, len([]rune(x)), n, path)
		}
		if n, ok := s["minLength"].(int); ok {
			assert.GreaterOrEqual(t, len([]rune(x)), n, path)
		}
		switch s["format"] {
		case "email":
			assert.Contains(t, x, "@", path)
		case "date-time":
			assert.Regexp(t, `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`, x, path)
		}
	}
}

func asSlice(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func matchesType(s map[string]any, v any) bool {
	types := []string{}
	switch ty := s["type"].(type) {
	case string:
		types = append(types, ty)
	case []any:
		for _, x := range ty {
			types = append(types, x.(string))
		}
	default:
		return true
	}
	for _, ty := range types {
		switch ty {
		case "object":
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case "array":
			if _, ok := v.([]any); ok {
				return true
			}
		case "string":
			if _, ok := v.(string); ok {
				return true
			}
		case "number":
			if _, ok := v.(float64); ok {
				return true
			}
		case "integer":
			if f, ok := v.(float64); ok && f == math.Trunc(f) {
				return true
			}
		case "boolean":
			if _, ok := v.(bool); ok {
				return true
			}
		case "null":
			if v == nil {
				return true
			}
		}
	}
	return false
}

func TestJSONSchemaCombinators(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		b := []byte(`{"model":"m","messages":[{"role":"user","content":"Book a table for 4 people in Rome on 2025-06-01, my name is Ann Lee"}],
			"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{
			"allOf":[
				{"type":"object","properties":{"city":{"type":"string"},"date":{"type":"string","format":"date"}},"required":["city"]},
				{"properties":{"guests":{"$ref":"#/definitions/count"},"booking_id":{"type":"string","format":"uuid"}}}
			],
			"definitions":{"count":{"oneOf":[{"type":"integer","maximum":10},{"type":"string"}]}},
			"properties":{"first_name":{"type":"string"},"notes":{"type":"string"},"done":{"type":"boolean","default":false}}}}}}`)
		m := decodeObject(t, content(t, p, b))
		assert.Equal(t, "Ann", m["first_name"])
		assert.Equal(t, "Rome", m["city"])
		assert.Equal(t, "2025-06-01", m["date"])
		assert.Equal(t, float64(4), m["guests"])
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, m["booking_id"])
		assert.Equal(t, false, m["done"], "a default is used as given")
		assert.NotEmpty(t, m["notes"])
	})
}

func TestJSONStringEscaping(t *testing.T) {
	for _, s := range []string{"plain", `q"uote\back`, "tab\tnl\ncr\r\x01", "\u2028\u2029", "bad\xffutf8", "日本語 émoji 😀"} {
		out := appendJSONString(nil, s)
		var back string
		require.NoError(t, json.Unmarshal(out, &back), string(out))
		want := strings.ToValidUTF8(s, "\uFFFD")
		assert.Equal(t, want, back)
	}
}

// A schema can ask for more than any answer holds; the answer stops at the
// mock's output limit with finish_reason "length", as a model's would.
func TestJSONSchemaAnswersAreBounded(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		self := map[string]any{"$ref": "#"}
		nested := map[string]any{"type": "integer"}
		for range 4 {
			nested = map[string]any{"type": "array", "minItems": 40, "items": nested}
		}
		for name, schema := range map[string]any{
			"huge minLength": map[string]any{"type": "object", "properties": map[string]any{
				"a": map[string]any{"type": "string", "minLength": 50_000_000}}},
			"minItems at each level": nested,
			"recursive, three branches": map[string]any{"type": "object", "properties": map[string]any{
				"a": self, "b": self, "c": self, "d": self, "e": self}},
		} {
			t.Run(name, func(t *testing.T) {
				c, _ := chat(t, p, body(t, map[string]any{"response_format": jsonSchemaFormat(schema)}, user("hi")))
				require.NotNil(t, c.Choices[0].Message.Content)
				assert.LessOrEqual(t, len(*c.Choices[0].Message.Content), maxGenerated+1024)
				assert.Equal(t, "length", c.Choices[0].FinishReason)
			})
		}
	})
}

func TestJSONSchemaNumbersAtTheLimits(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		got := content(t, p, body(t, map[string]any{"response_format": jsonSchemaFormat(map[string]any{
			"type": "object", "properties": map[string]any{
				"near_max": map[string]any{"type": "number", "exclusiveMinimum": 1e308, "exclusiveMaximum": 1.7e308},
				"big":      map[string]any{"type": "integer", "minimum": 1e19},
			}})}, user("hi")))
		m := decodeObject(t, got)
		assert.Greater(t, m["near_max"], 1e308)
		assert.Less(t, m["near_max"], 1.7e308)
		assert.GreaterOrEqual(t, m["big"], 1e19, got)
	})
}

func TestJSONSchemaRequiredMembersWithoutProperties(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		got := content(t, p, body(t, map[string]any{"response_format": jsonSchemaFormat(map[string]any{
			"type": "object", "properties": map[string]any{"label": map[string]any{"type": "string"}},
			"required": []string{"label", "answer"}})}, user("What is two plus two?")))
		m := decodeObject(t, got)
		assert.Contains(t, m, "label")
		assert.Contains(t, m, "answer", got)
	})
}
