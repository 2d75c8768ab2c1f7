package gateway

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
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

// embedList is an embeddings answer of n float vectors of dims numbers.
func embedList(n, dims int) []byte {
	vec := "[" + strings.TrimSuffix(strings.Repeat("-0.012345678,", dims), ",") + "]"
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":0,"embedding":` + vec + `}`)
	}
	b.WriteString(`],"model":"text-embedding-3-large","usage":{"prompt_tokens":5,"total_tokens":5}}`)
	return b.Bytes()
}

// summarize is what a run keeps of an embeddings answer.
func summarize(body []byte) json.RawMessage { return readEmbeddings(body).summary(body) }

func TestEmbedSummary(t *testing.T) {
	var got map[string]any
	require.NoError(t, json.Unmarshal(summarize(embedList(3, 4)), &got))
	assert.Equal(t, "embeddings.summary", got["object"])
	assert.Equal(t, "text-embedding-3-large", got["model"])
	assert.Equal(t, 3.0, got["vectors"])
	assert.Equal(t, 4.0, got["dimensions"])
	assert.Equal(t, "float", got["encoding_format"])

	b64 := `{"data":[{"embedding":"AAAAAAAAAAA="}],"model":"m"}`
	require.NoError(t, json.Unmarshal(summarize([]byte(b64)), &got))
	assert.Equal(t, 2.0, got["dimensions"])
	assert.Equal(t, "base64", got["encoding_format"])
}

// The summary copies none of the vectors: what it allocates is a small part
// of the answer it reads.
func TestEmbedSummaryDoesNotCopyTheVectors(t *testing.T) {
	body := embedList(256, 3072) // about 10 MiB
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	summarize(body)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(len(body)/10), "of a %d-byte answer", len(body))
}

func BenchmarkEmbedSummary(b *testing.B) {
	body := embedList(256, 3072)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		summarize(body)
	}
}
