package mock

// Embeddings: deterministic vectors in which texts that share words, word
// pairs and spellings lie close together, so that a search demo works
// offline. Each text becomes weighted features (stemmed words, pairs of
// neighbouring content words, character trigrams of each word), each
// feature adds ±weight at one coordinate chosen by its hash (signed feature
// hashing), and the vector is scaled to length 1. `dimensions` keeps the
// first coordinates and scales them to length 1 again, as the
// text-embedding-3 models do.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// embeddingSizes are the documented vector sizes; any other model name gets
// defaultEmbeddingSize.
var embeddingSizes = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
}

const defaultEmbeddingSize = 1536

// fixedSize are the models whose size cannot be changed with `dimensions`.
var fixedSize = map[string]bool{"text-embedding-ada-002": true}

// Feature weights: a shared word counts most, a shared pair of words adds
// to it, shared spellings (trigrams) make "refund" and "refunds" or a typo
// close; stopwords count little.
const (
	weightWord     = 1.0
	weightStopword = 0.2
	weightPair     = 0.5
	weightTrigram  = 0.3
)

// embedRequest is what the mock reads of an embeddings request.
type embedRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

// Embed implements pluginapi.Embedder.
func (m *Mock) Embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	if err := m.wait(ctx); err != nil {
		return pluginapi.EmbedResponse{}, err
	}
	var r embedRequest
	if err := json.Unmarshal(req.Body, &r); err != nil {
		return pluginapi.EmbedResponse{}, invalidEmbed("", "We could not parse the JSON body of your request.")
	}
	texts, tokens, err := embedInputs(r.Input)
	if err != nil {
		return pluginapi.EmbedResponse{}, err
	}
	size, ok := embeddingSizes[r.Model]
	if !ok {
		size = defaultEmbeddingSize
	}
	dims := size
	if r.Dimensions != nil {
		switch d := *r.Dimensions; {
		case fixedSize[r.Model]:
			return pluginapi.EmbedResponse{}, invalidEmbed("dimensions", "This model does not support specifying dimensions.")
		case d < 1 || d > size:
			return pluginapi.EmbedResponse{}, invalidEmbed("dimensions", "Invalid 'dimensions': must be between 1 and "+strconv.Itoa(size)+".")
		default:
			dims = d
		}
	}
	b64 := false
	switch r.EncodingFormat {
	case "", "float":
	case "base64":
		b64 = true
	default:
		return pluginapi.EmbedResponse{}, invalidEmbed("encoding_format", "Invalid 'encoding_format': expected 'float' or 'base64'.")
	}
	body := make([]byte, 0, 64+len(texts)*(dims*11+64))
	body = append(body, `{"object":"list","data":[`...)
	// Features are hashed into the coordinates the answer has: the first
	// dims of a vector hashed over the model's full size would hold only a
	// few features (or none: "hello" at 8 dimensions was all zeros).
	vec := make([]float64, dims)
	raw := make([]byte, 4*dims)
	for i, text := range texts {
		clear(vec)
		embedText(vec, text)
		v := normalize(vec)
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"object":"embedding","index":`...)
		body = strconv.AppendInt(body, int64(i), 10)
		body = append(body, `,"embedding":`...)
		if b64 {
			for j, x := range v {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(float32(x)))
			}
			body = append(body, '"')
			body = base64.StdEncoding.AppendEncode(body, raw)
			body = append(body, '"')
		} else {
			body = append(body, '[')
			for j, x := range v {
				if j > 0 {
					body = append(body, ',')
				}
				body = strconv.AppendFloat(body, float64(float32(x)), 'g', -1, 32)
			}
			body = append(body, ']')
		}
		body = append(body, '}')
	}
	body = append(body, `],"model":`...)
	body = appendJSONString(body, r.Model)
	body = append(body, `,"usage":{"prompt_tokens":`...)
	body = strconv.AppendInt(body, int64(tokens), 10)
	body = append(body, `,"total_tokens":`...)
	body = strconv.AppendInt(body, int64(tokens), 10)
	body = append(body, "}}"...)
	return pluginapi.EmbedResponse{Body: body, Usage: pluginapi.Usage{PromptTokens: int64(tokens), TotalTokens: int64(tokens)}}, nil
}

func invalidEmbed(param, msg string) *pluginapi.ProviderError {
	return &pluginapi.ProviderError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_value", Param: param, Message: msg}
}

// embedInputs reads `input`: a string, an array of strings, an array of
// token ids or an array of such arrays. A token id is embedded as the word
// "#<id>" and counts as one token.
func embedInputs(raw json.RawMessage) ([]string, int, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, 0, invalidEmbed("input", "'input' cannot be an empty string.")
		}
		return []string{one}, estimateTokens(one), nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		n := 0
		for _, s := range many {
			if s == "" {
				return nil, 0, invalidEmbed("input", "'input' cannot contain an empty string.")
			}
			n += estimateTokens(s)
		}
		return many, n, nil
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []string{tokenText(ids)}, len(ids), nil
	}
	var lists [][]int64
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		texts, n := make([]string, len(lists)), 0
		for i, l := range lists {
			if len(l) == 0 {
				return nil, 0, invalidEmbed("input", "'input' cannot contain an empty array.")
			}
			texts[i], n = tokenText(l), n+len(l)
		}
		return texts, n, nil
	}
	return nil, 0, invalidEmbed("input", "Invalid 'input': expected a string, an array of strings, an array of token ids or an array of such arrays.")
}

func tokenText(ids []int64) string {
	b := make([]byte, 0, len(ids)*7)
	for _, id := range ids {
		b = append(b, " #"...)
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// embedText adds the features of text to vec.
func embedText(vec []float64, text string) {
	prev := ""
	found := false
	forEachWord(text, func(w string) {
		found = true
		lw := lowerWord(w)
		if stopwords[lw] {
			addFeature(vec, weightStopword, "w", lw, "")
			return // a stopword neither pairs nor spells
		}
		s := stem(lw)
		addFeature(vec, weightWord, "w", s, "")
		if prev != "" {
			addFeature(vec, weightPair, "p", prev, s)
		}
		prev = s
		padded := "^" + lw + "$"
		for i := 0; i+3 <= len(padded); i++ {
			addFeature(vec, weightTrigram, "t", padded[i:i+3], "")
		}
	})
	if !found { // only punctuation or symbols: the text itself is the feature
		addFeature(vec, weightWord, "x", text, "")
	}
}

// addFeature adds ±weight at the coordinate the feature's FNV-1a hash
// picks; the hash's top bit is the sign, so unrelated features cancel out
// on average instead of piling up.
func addFeature(vec []float64, weight float64, kind, a, b string) {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, s := range [...]string{kind, a, b} {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * prime
		}
		h = (h ^ 0xff) * prime // separates the parts
	}
	if h>>63 == 1 {
		weight = -weight
	}
	vec[h%uint64(len(vec))] += weight
}

// normalize scales v to length 1 in place (a zero vector stays zero).
func normalize(v []float64) []float64 {
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	if sum == 0 {
		return v
	}
	inv := 1 / math.Sqrt(sum)
	for i := range v {
		v[i] *= inv
	}
	return v
}
