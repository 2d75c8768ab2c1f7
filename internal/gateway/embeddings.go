package gateway

// Embeddings: POST /v1/embeddings through the same pipeline as a chat
// call, minus what does not apply (artifacts, tool calls, streaming). The
// chat rules see each text input as a user message, so a rule on the model,
// the app or the content (no card numbers leave for the provider) holds for
// embeddings too. Embeddings are deterministic, so every request is
// cacheable in the exact tier; the run stores a summary of the vectors
// (count, size, SHA-256 of the answer) rather than the vectors themselves.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// maxEmbedInputs is the most inputs one request may carry, as the
// provider's API allows.
const maxEmbedInputs = 2048

// EmbedRequest is a validated embeddings request. Its Request carries the
// body, the model, the cache's canonical form and the text inputs as user
// messages (what the chat rules see).
type EmbedRequest struct {
	Request
	Inputs         int    // how many inputs
	Dimensions     int    // 0: the model's own size
	EncodingFormat string // "float" or "base64"
}

// wireEmbedRequest is what svc reads of an embeddings request; other fields
// pass through to the provider.
type wireEmbedRequest struct {
	Model          *string         `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat *string         `json:"encoding_format"`
	User           *string         `json:"user"`
}

// ParseEmbedRequest validates an embeddings body the way the provider
// would, answering in the provider's terms.
func ParseEmbedRequest(body []byte) (*EmbedRequest, error) {
	var w wireEmbedRequest
	if err := decodeWire(body, &w, nil); err != nil {
		return nil, err
	}
	switch {
	case w.Model == nil:
		return nil, invalid("model", "Missing required parameter: 'model'.")
	case len(bytes.TrimSpace([]byte(*w.Model))) == 0 || len(*w.Model) > 256:
		return nil, invalid("model", "Invalid value for 'model': expected a model name.")
	case len(w.Input) == 0 || string(w.Input) == "null":
		return nil, invalid("input", "Missing required parameter: 'input'.")
	}
	r := &EmbedRequest{Request: Request{Body: body, Model: *w.Model}, EncodingFormat: "float"}
	var err error
	if r.Messages, r.Inputs, err = embedInputs(w.Input); err != nil {
		return nil, err
	}
	if d := w.Dimensions; d != nil {
		if *d < 1 {
			return nil, invalid("dimensions", "Invalid 'dimensions': must be at least 1.")
		}
		r.Dimensions = *d
	}
	if f := w.EncodingFormat; f != nil {
		if *f != "float" && *f != "base64" {
			return nil, invalid("encoding_format", "Invalid 'encoding_format': expected one of 'float', 'base64'.")
		}
		r.EncodingFormat = *f
	}
	if r.Canonical, err = embedCanonical(body, r.EncodingFormat); err != nil {
		return nil, invalid("", "We could not parse the JSON body of your request. The body must be a JSON object.")
	}
	r.Unlearnable = "an embeddings request"
	return r, nil
}

// embedInputs reads `input`: a string, an array of strings, an array of
// token ids, or an array of arrays of token ids. Text inputs become user
// messages for the chat rules; token ids have no text to show them.
func embedInputs(raw json.RawMessage) ([]Message, int, error) {
	const want = "Invalid 'input': expected a string, an array of strings, an array of token ids or an array of arrays of token ids."
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, 0, invalid("input", want)
		}
		if s == "" {
			return nil, 0, invalid("input", "Invalid 'input': the string must not be empty.")
		}
		return []Message{{Role: "user", Content: s}}, 1, nil
	case '[':
	default:
		return nil, 0, invalid("input", want)
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, 0, invalid("input", want)
	}
	if len(items) == 0 {
		return nil, 0, invalid("input", "Invalid 'input': empty array. Expected an array with minimum length 1.")
	}
	// One flat array of token ids is one input, however long; an array
	// of strings or of token arrays holds one input an item.
	if first := items[0][0]; (first == '"' || first == '[') && len(items) > maxEmbedInputs {
		return nil, 0, invalid("input", "Invalid 'input': at most %d inputs per request.", maxEmbedInputs)
	}
	switch items[0][0] {
	case '"': // strings
		msgs := make([]Message, len(items))
		for i, it := range items {
			if it[0] != '"' || json.Unmarshal(it, &msgs[i].Content) != nil {
				return nil, 0, invalid("input", "Invalid 'input[%d]': expected a string like the other inputs.", i)
			}
			if msgs[i].Content == "" {
				return nil, 0, invalid("input", "Invalid 'input[%d]': the string must not be empty.", i)
			}
			msgs[i].Role = "user"
		}
		return msgs, len(items), nil
	case '[': // arrays of token ids
		for i, it := range items {
			if it[0] != '[' || !tokenIDs(it) {
				return nil, 0, invalid("input", "Invalid 'input[%d]': expected a non-empty array of token ids (integers, 0 or more).", i)
			}
		}
		return nil, len(items), nil
	}
	if !tokenIDs(raw) { // one array of token ids
		return nil, 0, invalid("input", want)
	}
	return nil, 1, nil
}

// tokenIDs reports whether raw is a non-empty array of whole numbers, 0 or
// more (null, which would decode as 0, is none).
func tokenIDs(raw json.RawMessage) bool {
	var ids []json.RawMessage
	if json.Unmarshal(raw, &ids) != nil || len(ids) == 0 {
		return false
	}
	for _, id := range ids {
		if _, err := strconv.ParseUint(string(id), 10, 63); err != nil {
			return false
		}
	}
	return true
}

// embedCanonical is what identifies an embeddings request in the exact
// cache: the body without `user` (it changes no vector), with the encoding
// spelled out, in canonical form, under an "embeddings" key: never the
// canonical form of a chat request, so the two never share a cache entry
// (it is also what an approval of the request shows).
func embedCanonical(body []byte, format string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	delete(m, "user")
	m["encoding_format"], _ = json.Marshal(format)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	canonical, err := cache.CanonicalRequest(b)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(canonical)+15)
	out = append(append(append(out, `{"embeddings":`...), canonical...), '}')
	return out, nil
}

// Embed answers an embeddings call through the provider, or from the
// exact cache, and records the run. A provider without embeddings answers
// 404 model_not_found.
func (g *Gateway) Embed(ctx context.Context, id *auth.Identity, req *EmbedRequest) (res Result, err error) {
	ctx, c := g.start(ctx, id, &req.Request, semconv.GenAIOperationNameEmbeddings)
	defer g.end(ctx, c, nil, &err)
	c.run.Explanation.Reason = "no cached vectors for this input: the provider embedded it"
	c.reject(ledger.RouteArtifact, "embeddings are not learned: no artifact answers them")
	if err := g.route(ctx, c); err != nil {
		return Result{RunID: c.run.ID, Route: c.run.Route}, err
	}
	if err := g.governChat(ctx, c); err != nil {
		return Result{RunID: c.run.ID, Route: c.run.Route}, err
	}
	g.lookupExact(ctx, c)
	var body []byte
	if c.servable() {
		body = g.serveEmbedding(c, nil)
	} else {
		c.calledProvider = true
		res, err := g.router.Embed(ctx, c.plan, pluginapi.EmbedRequest{Body: req.Body, Model: req.Model, RequestID: c.run.ID})
		if err != nil {
			fb := g.fallback(c, err)
			if fb == nil {
				return Result{RunID: c.run.ID, Route: c.run.Route}, g.fail(ctx, c, err)
			}
			body = g.serveEmbedding(c, fb)
		} else {
			body = res.Body
			g.price(c, &res.Usage)
		}
	}
	list := readEmbeddings(body)
	if c.calledProvider {
		if problem := list.problem(req); problem != "" {
			// Not passed on, nor cached: the provider's fault, billed as it may be.
			return Result{RunID: c.run.ID, Route: c.run.Route}, g.fail(ctx, c, &pluginapi.ProviderError{Status: 502,
				Type: "upstream_error", Code: pluginapi.CodeBadResponse, Message: "the provider's embeddings answer " + problem})
		}
	}
	c.run.Response = list.summary(body)
	if err := g.finish(ctx, c, httpstatus.Of(nil), ""); err != nil {
		return Result{}, err
	}
	g.storeExact(c, body)
	return Result{RunID: c.run.ID, Route: c.run.Route, Body: body}, nil
}

// serveEmbedding answers from the exact cache, saying why that is sound.
func (g *Gateway) serveEmbedding(c *call, fb *fallbackDetail) []byte {
	body := g.serveExact(c, fb)
	reason := "embeddings are deterministic: the identical input was embedded at " +
		c.exact.entry.StoredAt.UTC().Format(time.RFC3339) + ", and its vectors were served from the exact cache"
	if fb != nil {
		reason = "the provider failed; " + reason
	}
	c.run.Explanation.Reason = reason
	return body
}

// embedAnswer is an embeddings answer as svc reads it: its vectors' sizes,
// not the vectors.
type embedAnswer struct {
	Model string          `json:"model"`
	Data  []embedItem     `json:"data"`
	Usage json.RawMessage `json:"usage"`
	// readable is false when the answer does not read as a list.
	readable bool
}

// readEmbeddings reads an embeddings answer once, for its check and its
// summary.
func readEmbeddings(body []byte) *embedAnswer {
	var list embedAnswer
	list.readable = json.Unmarshal(body, &list) == nil
	return &list
}

// summary is what a run keeps of the vectors: how many, their size and
// encoding, the usage, and the SHA-256 of the answer the client got. The
// vectors themselves are the cache's to keep, not the ledger's, and are
// never copied here: an answer may be tens of MiB.
func (l *embedAnswer) summary(body []byte) json.RawMessage {
	sum := sha256.Sum256(body)
	s := embedSummaryJSON{Object: "embeddings.summary", SHA256: hex.EncodeToString(sum[:]), Bytes: len(body)}
	if l.readable {
		s.Model, s.Vectors, s.Usage = l.Model, len(l.Data), l.Usage
		if len(l.Data) > 0 {
			s.Dimensions, s.EncodingFormat = l.Data[0].Embedding.dims, l.Data[0].Embedding.format
		}
	}
	return mustJSON(s)
}

// embedItem is an item of an embeddings answer as readEmbeddings reads it:
// its vector's size, not the vector.
type embedItem struct {
	Index     *int        `json:"index"`
	Embedding vectorShape `json:"embedding"`
}

// problem says what is wrong with a provider's embeddings answer to req,
// "" when nothing is: one vector for each input, each index once, all of
// one size and in the encoding asked for. svc passes on, and caches, no
// answer a client could not use.
func (l *embedAnswer) problem(req *EmbedRequest) string {
	if !l.readable {
		return "does not read as a list of vectors"
	}
	if len(l.Data) != req.Inputs {
		return "has " + strconv.Itoa(len(l.Data)) + " vectors for " + strconv.Itoa(req.Inputs) + " inputs"
	}
	want := req.EncodingFormat
	if want == "" {
		want = "float"
	}
	seen := make([]bool, len(l.Data))
	for i, item := range l.Data {
		at := i // a server that numbers none lists them in order
		if item.Index != nil {
			at = *item.Index
		}
		switch {
		case at < 0 || at >= len(seen) || seen[at]:
			return "does not number its vectors 0 to " + strconv.Itoa(len(seen)-1) + ", each once"
		case item.Embedding.dims == 0 || item.Embedding.format != want:
			return "has a vector that is not a list of numbers in the encoding asked for (" + want + ")"
		case item.Embedding.dims != l.Data[0].Embedding.dims:
			return "has vectors of different sizes"
		}
		seen[at] = true
	}
	return ""
}

type vectorShape struct {
	dims   int
	format string
}

func (v *vectorShape) UnmarshalJSON(raw []byte) error {
	v.dims, v.format = vectorSize(raw)
	return nil
}

type embedSummaryJSON struct {
	Object         string          `json:"object"`
	Model          string          `json:"model,omitempty"`
	Vectors        int             `json:"vectors"`
	Dimensions     int             `json:"dimensions,omitempty"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	Usage          json.RawMessage `json:"usage,omitempty"`
	Bytes          int             `json:"bytes"`
	SHA256         string          `json:"sha256"`
}

// vectorSize reads one vector's size: the numbers of a float array, or the
// float32s of a base64 string.
func vectorSize(raw json.RawMessage) (int, string) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) >= 2 && raw[0] == '"':
		if !isBase64(raw[1 : len(raw)-1]) {
			return 0, ""
		}
		return base64.StdEncoding.DecodedLen(len(raw)-2) / 4, "base64"
	case len(raw) > 2 && raw[0] == '[':
		if first := bytes.TrimLeft(raw[1:], " \t\r\n"); len(first) == 0 || first[0] != '-' && (first[0] < '0' || first[0] > '9') {
			return 0, "" // a list of something else than numbers
		}
		return bytes.Count(raw, []byte{','}) + 1, "float"
	}
	return 0, ""
}

// isBase64 says whether s is standard base64 of whole 4-byte groups.
func isBase64(s []byte) bool {
	if len(s)%4 != 0 {
		return false
	}
	for i, b := range s {
		switch {
		case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z', b >= '0' && b <= '9', b == '+', b == '/':
		case b == '=' && i >= len(s)-2:
		default:
			return false
		}
	}
	return true
}
