package shape

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShapeSlots(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"Triage."},` +
		`{"role":"user","content":"Subject: Card declined\n\nMy card: it fails.\nOrder: 12"}]}`)
	sh, err := Parse("app", body)
	require.NoError(t, err)
	assert.Equal(t, []Slot{{"subject", "Card declined"}, {"text", "My card: it fails.\nOrder: 12"}}, sh.Slots)
	other, err := Parse("app", []byte(`{"model":"m","messages":[{"role":"system","content":"Triage."},`+
		`{"role":"user","content":"Subject: Other\n\nSomething else entirely"}]}`))
	require.NoError(t, err)
	assert.Equal(t, sh.Key, other.Key, "the varying parts do not change the pattern")
	for _, b := range []string{
		`{"model":"m2","messages":[{"role":"system","content":"Triage."},{"role":"user","content":"Subject: x\n\ny"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"Other."},{"role":"user","content":"Subject: x\n\ny"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"Triage."},{"role":"user","content":"Title: x\n\ny"}]}`,
		`{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"system","content":"Triage."},{"role":"user","content":"Subject: x\n\ny"}]}`,
		`{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"system","content":"Triage."},{"role":"user","content":"Subject: x\n\ny"}]}`,
	} {
		o, err := Parse("app", []byte(b))
		require.NoError(t, err)
		assert.NotEqual(t, sh.Key, o.Key, b)
	}
	o, _ := Parse("other-app", body)
	assert.NotEqual(t, sh.Key, o.Key, "the app is part of the shape")
	_, err = Parse("app", []byte(`{"model":"m","messages":[{"role":"system","content":"x"}]}`))
	assert.ErrorIs(t, err, ErrNoShape)
}

func TestRequestsAnArtifactMayNotAnswerHaveNoShape(t *testing.T) {
	const user = `{"role":"user","content":"Is this safe? Answer yes or no."}`
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Is this safe?"},{"type":"image_url","image_url":{"url":"https://x/1.png"}}]}]}`,
		`{"model":"m","messages":[` + user + `],"functions":[{"name":"refund"}]}`,
		`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"refund"}}],"tool_choice":"required"}`,
		`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"refund"}}],"tool_choice":{"type":"function","function":{"name":"refund"}}}`,
		`{"model":"m","messages":[` + user + `],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{}}}}`,
		`{"model":"m","messages":[` + user + `],"n":3}`,
		`{"model":"m","messages":[` + user + `],"logprobs":true}`,
	} {
		_, err := Parse("app", []byte(body))
		if err != ErrNoShape {
			t.Errorf("%s: got %v, want ErrNoShape", body, err)
		}
	}
	if _, err := Parse("app", []byte(`{"model":"m","messages":[`+user+`],"tool_choice":"auto","n":1}`)); err != nil {
		t.Errorf("a plain request has a shape: %v", err)
	}
}

func TestTextPartsShapeAsTheGatewayJoinsThem(t *testing.T) {
	parts, err := Parse("app", []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Subject: a"},{"type":"text","text":"b"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gateway, err := Of("app", "m", []Message{{Role: "user", Content: "Subject: a\nb"}}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if parts.Key != gateway.Key {
		t.Fatal("a stored request with text parts must have the key the gateway computes for it")
	}
}
