package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Embed implements pluginapi.Embedder: the request body goes to the
// upstream's /embeddings unchanged and its body comes back unchanged, in
// the encoding the client asked for. An upstream that does not know the
// model answers 404 model_not_found, passed on in its own words.
func (u *Upstream) Embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	u.init()
	res, err := u.embed(ctx, req)
	if err != nil {
		u.logError("embeddings", err, req.RequestID)
	}
	return res, err
}

func (u *Upstream) embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	resp, err := u.do(ctx, http.MethodPost, u.embeddingsURL, req.Body, req.RequestID, hdrJSON)
	if err != nil {
		return pluginapi.EmbedResponse{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return pluginapi.EmbedResponse{}, u.statusError(resp)
	}
	body, err := readBody(resp, max(u.maxResponse(), maxEmbeddingsResponseBytes))
	if err != nil {
		return pluginapi.EmbedResponse{}, u.readError(ctx, err, "response")
	}
	var parsed struct {
		Data  json.RawMessage `json:"data"`
		Usage *usageJSON      `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(body, &parsed); !isObject(body) || err != nil && !errors.As(err, &typeErr) {
		return pluginapi.EmbedResponse{}, &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
			Message: "provider returned a response that is not a JSON object",
		}
	}
	if !isNull(parsed.Error) {
		return pluginapi.EmbedResponse{}, u.inBodyError(parsed.Error)
	}
	if len(parsed.Data) == 0 || parsed.Data[0] != '[' {
		return pluginapi.EmbedResponse{}, &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
			Message: "provider returned an embeddings response without a data list",
		}
	}
	var usage pluginapi.Usage
	if parsed.Usage != nil {
		usage = parsed.Usage.usage()
	}
	return pluginapi.EmbedResponse{Body: body, Usage: usage}, nil
}

// maxEmbeddingsResponseBytes bounds an embeddings answer: room for the
// largest valid batch as floats, 2048 inputs (OpenAI's limit) of 3072
// dimensions (text-embedding-3-large, the widest), each number at most 24
// bytes in its shortest form ("-1.2345678901234567e-05"), written one a
// line as OpenAI pretty-prints it (8 spaces of indent, a comma, a newline:
// 34 bytes), plus 256 bytes an item for its object and index and 64 KiB
// for the list's own fields: 214,499,328 bytes, 205 MiB. A chat answer
// keeps DefaultMaxResponseBytes.
const maxEmbeddingsResponseBytes = 2048*(3072*(8+24+2)+256) + 64<<10

// notServed are the model families an OpenAI upstream lists that svc has
// no endpoint for (images, audio, moderation, realtime) or that answer the
// Responses API only: /v1/models leaves them out.
var notServed = []string{"dall-e", "gpt-image", "chatgpt-image", "sora", "whisper", "tts", "transcribe", "moderation",
	"realtime", "audio", "babbage-002", "davinci-002", "o1-pro", "o3-pro", "gpt-5-pro", "deep-research",
	"computer-use", "codex"}

// modelKind says what an upstream model answers, from its name (a model
// list says no more): pluginapi.KindEmbedding for an embedding model
// ("text-embedding-3-small", "nomic-embed-text"), "" for one svc cannot
// answer, else pluginapi.KindChat (the local servers' names, "llama3.1",
// are chat models).
func modelKind(id string) string {
	lower := strings.ToLower(id)
	if strings.Contains(lower, "embed") {
		return pluginapi.KindEmbedding
	}
	for _, family := range notServed {
		if strings.Contains(lower, family) {
			return ""
		}
	}
	return pluginapi.KindChat
}
