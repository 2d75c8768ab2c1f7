package mock

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

type embedList struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

// embed asks the mock and returns the vectors, decoded from either format.
func embed(t *testing.T, p pluginapi.Provider, req map[string]any) (embedList, [][]float32, pluginapi.Usage) {
	t.Helper()
	b, err := json.Marshal(req)
	require.NoError(t, err)
	res, err := p.(pluginapi.Embedder).Embed(context.Background(), pluginapi.EmbedRequest{Body: b, Model: req["model"].(string)})
	require.NoError(t, err)
	var list embedList
	require.NoError(t, json.Unmarshal(res.Body, &list), string(res.Body))
	vecs := make([][]float32, len(list.Data))
	for i, d := range list.Data {
		assert.Equal(t, i, d.Index)
		assert.Equal(t, "embedding", d.Object)
		if req["encoding_format"] == "base64" {
			var s string
			require.NoError(t, json.Unmarshal(d.Embedding, &s))
			raw, err := base64.StdEncoding.DecodeString(s)
			require.NoError(t, err)
			require.Zero(t, len(raw)%4)
			for j := 0; j < len(raw); j += 4 {
				vecs[i] = append(vecs[i], math.Float32frombits(binary.LittleEndian.Uint32(raw[j:])))
			}
		} else {
			require.NoError(t, json.Unmarshal(d.Embedding, &vecs[i]))
		}
	}
	return list, vecs, res.Usage
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s / norm(a) / norm(b)
}

func TestEmbedSizesAndNorm(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for model, size := range map[string]int{"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
			"text-embedding-ada-002": 1536, "my-own-embedder": 1536} {
			list, vecs, usage := embed(t, p, map[string]any{"model": model, "input": "The quick brown fox"})
			assert.Equal(t, "list", list.Object)
			assert.Equal(t, model, list.Model, "the model is echoed")
			require.Len(t, vecs, 1)
			assert.Len(t, vecs[0], size, model)
			assert.InDelta(t, 1, norm(vecs[0]), 1e-5, model)
			assert.Positive(t, usage.PromptTokens)
			assert.Equal(t, usage.PromptTokens, usage.TotalTokens)
			assert.Equal(t, usage.PromptTokens, list.Usage.PromptTokens)
		}
	})
}

func TestEmbedDeterministic(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		req := map[string]any{"model": "text-embedding-3-small", "input": []string{"refund my order", "reset my password"}}
		_, a, _ := embed(t, p, req)
		_, b, _ := embed(t, p, req)
		assert.Equal(t, a, b)
		assert.NotEqual(t, a[0], a[1])
	})
}

// A shortened vector still holds every feature of the text: it is hashed
// into the dimensions asked for, so it is unit length and close texts stay
// closer than unrelated ones, down to a few dimensions.
func TestEmbedDimensionsKeepTheFeatures(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for _, dims := range []int{8, 64, 256} {
			_, v, _ := embed(t, p, map[string]any{"model": "text-embedding-3-large", "dimensions": dims,
				"input": []string{"hello", "How do I get a refund for my order?", "I want a refund for the order I placed", "The weather in Paris is sunny today"}})
			for i := range v {
				require.Len(t, v[i], dims)
				assert.InDelta(t, 1, norm(v[i]), 1e-5, "input %d at %d dimensions", i, dims)
			}
			if dims >= 64 {
				assert.Greater(t, cosine(v[1], v[2]), cosine(v[1], v[3]), "at %d dimensions", dims)
			}
		}
	})
}

func TestEmbedBase64MatchesFloat(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		req := map[string]any{"model": "text-embedding-3-small", "input": []string{"alpha beta", "gamma"}, "dimensions": 64}
		_, floats, _ := embed(t, p, req)
		req["encoding_format"] = "base64"
		_, decoded, _ := embed(t, p, req)
		assert.Equal(t, floats, decoded, "the same float32 values")
	})
}

func TestEmbedCloseTextsAreCloser(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		texts := []string{
			"How do I get a refund for my order?",
			"I want a refund for the order I placed",
			"The weather in Paris is sunny today",
			"refunds for orders",
			"What's the forecast for Paris? Sunny weather?",
		}
		_, v, _ := embed(t, p, map[string]any{"model": "text-embedding-3-small", "input": texts})
		assert.Greater(t, cosine(v[0], v[1]), cosine(v[0], v[2]))
		assert.Greater(t, cosine(v[0], v[3]), cosine(v[0], v[2]), "plural and singular meet")
		assert.Greater(t, cosine(v[2], v[4]), cosine(v[2], v[1]))
		assert.Greater(t, cosine(v[0], v[1]), 0.3, "paraphrases are clearly close")
		assert.Less(t, math.Abs(cosine(v[0], v[2])), 0.2, "unrelated texts are near orthogonal")
	})
}

func TestEmbedTokenIDs(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		list, v, usage := embed(t, p, map[string]any{"model": "text-embedding-3-small", "input": [][]int{{1, 2, 3}, {4, 5}}})
		require.Len(t, v, 2)
		assert.Len(t, list.Data, 2)
		assert.Equal(t, int64(5), usage.PromptTokens, "one token per id")
		_, one, _ := embed(t, p, map[string]any{"model": "text-embedding-3-small", "input": []int{1, 2, 3}})
		assert.Equal(t, v[0], one[0])
	})
}

func TestEmbedRefusals(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for name, body := range map[string]string{
			"empty string":     `{"model":"text-embedding-3-small","input":""}`,
			"empty array":      `{"model":"text-embedding-3-small","input":[]}`,
			"number":           `{"model":"text-embedding-3-small","input":5}`,
			"too many dims":    `{"model":"text-embedding-3-small","input":"a","dimensions":1537}`,
			"ada dims":         `{"model":"text-embedding-ada-002","input":"a","dimensions":8}`,
			"zero dims":        `{"model":"text-embedding-3-small","input":"a","dimensions":0}`,
			"unknown encoding": `{"model":"text-embedding-3-small","input":"a","encoding_format":"int8"}`,
		} {
			_, err := p.(pluginapi.Embedder).Embed(context.Background(), pluginapi.EmbedRequest{Body: []byte(body)})
			var pe *pluginapi.ProviderError
			if assert.True(t, errors.As(err, &pe), name) {
				assert.Equal(t, 400, pe.Status, name)
			}
		}
	})
}

func TestModelsMarkEmbeddings(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		models, err := p.Models(context.Background())
		require.NoError(t, err)
		kinds := map[string]string{}
		for _, m := range models {
			kinds[m.ID] = m.Kind
		}
		for id := range embeddingSizes {
			assert.Equal(t, pluginapi.KindEmbedding, kinds[id], id)
		}
		assert.Empty(t, kinds["gpt-4o-mini"], "a chat model's kind is left empty")
	})
}

func BenchmarkEmbed(b *testing.B) {
	body := []byte(`{"model":"text-embedding-3-small","input":["How do I get a refund for my order?","The weather in Paris is sunny today"]}`)
	m := &Mock{}
	for b.Loop() {
		if _, err := m.Embed(context.Background(), pluginapi.EmbedRequest{Body: body}); err != nil {
			b.Fatal(err)
		}
	}
}
