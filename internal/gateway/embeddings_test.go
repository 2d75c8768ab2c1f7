package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
)

func TestParseEmbedRequest(t *testing.T) {
	r, err := ParseEmbedRequest([]byte(`{"model":"text-embedding-3-small","input":["refund please","where is it"],"dimensions":64,"user":"u-1"}`))
	require.NoError(t, err)
	assert.Equal(t, "text-embedding-3-small", r.Model)
	assert.Equal(t, 2, r.Inputs)
	assert.Equal(t, 64, r.Dimensions)
	assert.Equal(t, "float", r.EncodingFormat)
	assert.Equal(t, []Message{{Role: "user", Content: "refund please"}, {Role: "user", Content: "where is it"}}, r.Messages,
		"the chat rules see each text as a user message")
	assert.True(t, json.Valid(r.Canonical), "an approval shows the canonical form")

	ids, err := ParseEmbedRequest([]byte(`{"model":"m","input":[[1,2],[3]]}`))
	require.NoError(t, err)
	assert.Equal(t, 2, ids.Inputs)
	assert.Empty(t, ids.Messages, "token ids have no text")
}

func TestEmbedCanonicalIdentifiesWhatChangesTheVectors(t *testing.T) {
	canonical := func(body string) string {
		r, err := ParseEmbedRequest([]byte(body))
		require.NoError(t, err, body)
		return string(r.Canonical)
	}
	base := canonical(`{"model":"m","input":"a"}`)
	assert.Equal(t, base, canonical(`{"input":"a", "encoding_format":"float","model":"m","user":"x"}`),
		"key order, spacing, user and the default encoding change nothing")
	for _, other := range []string{
		`{"model":"m","input":"b"}`, `{"model":"n","input":"a"}`, `{"model":"m","input":"a","dimensions":8}`,
		`{"model":"m","input":"a","encoding_format":"base64"}`, `{"model":"m","input":["a"]}`,
	} {
		assert.NotEqual(t, base, canonical(other), other)
	}
	chat, err := ParseRequest([]byte(`{"model":"m","input":"a","messages":[{"role":"user","content":"a"}]}`))
	require.NoError(t, err)
	emb, err := ParseEmbedRequest([]byte(`{"model":"m","input":"a","messages":[{"role":"user","content":"a"}]}`))
	require.NoError(t, err)
	assert.NotEqual(t, string(chat.Canonical), string(emb.Canonical), "one body read as chat and as embeddings: two keys")
}

func TestParseEmbedRequestRefusals(t *testing.T) {
	for body, param := range map[string]string{
		`[]`:                                             "",
		`{"input":"a"}`:                                  "model",
		`{"model":" ","input":"a"}`:                      "model",
		`{"model":"m"}`:                                  "input",
		`{"model":"m","input":null}`:                     "input",
		`{"model":"m","input":true}`:                     "input",
		`{"model":"m","input":[[1],"a"]}`:                "input",
		`{"model":"m","input":[1.5]}`:                    "input",
		`{"model":"m","input":"a","Input":1}`:            "Input",
		`{"model":"m","input":"a","dimensions":-1}`:      "dimensions",
		`{"model":"m","input":"a","encoding_format":""}`: "encoding_format",
	} {
		_, err := ParseEmbedRequest([]byte(body))
		require.Error(t, err, body)
		assert.True(t, errs.Is(err, errs.Invalid), body)
		var e *errs.Error
		if param != "" && assert.ErrorAs(t, err, &e, body) {
			assert.Equal(t, param, e.Param, body)
		}
	}
}
