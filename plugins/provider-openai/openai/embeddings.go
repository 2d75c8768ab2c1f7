package openai

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
	ctx, cancel := u.withTimeout(ctx)
	res, err := u.embed(ctx, req)
	cancel()
	if err != nil {
		u.logError("embeddings", err, req.RequestID)
	}
	return res, err
}

func (u *Upstream) embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	resp, err := u.do(ctx, http.MethodPost, u.embeddingsURL, req.Body, req.Call(), hdrJSON)
	if err != nil {
		return pluginapi.EmbedResponse{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return pluginapi.EmbedResponse{}, u.statusError(resp)
	}
	body, err := readBody(resp, maxEmbeddingsResponseBytes)
	if errors.Is(err, errTooLarge) {
		return pluginapi.EmbedResponse{}, errEmbeddingsTooLarge
	}
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

// maxEmbeddingsResponseBytes bounds an embeddings answer: what fits in one
// message of the plugin connection (64 MiB, pluginapi's limit) with room
// for the message's own fields. The widest valid batch written as floats
// (2048 inputs of 3072 dimensions) is about 205 MiB, too much for svc to
// hold per call; a batch this large is refused with errEmbeddingsTooLarge,
// which says how to ask for less. A chat answer keeps
// DefaultMaxResponseBytes.
const maxEmbeddingsResponseBytes = 60 << 20

// errEmbeddingsTooLarge is an embeddings answer over
// maxEmbeddingsResponseBytes, in words the caller can act on.
var errEmbeddingsTooLarge = &pluginapi.ProviderError{
	Status: http.StatusBadGateway, Type: typeUpstream, Code: codeTooLarge,
	Message: "the provider's embeddings answer is larger than the 60 MiB svc accepts: send fewer inputs per call, " +
		"or ask for encoding_format \"base64\", about 4 times smaller than floats",
}

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
