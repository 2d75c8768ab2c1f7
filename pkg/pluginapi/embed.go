package pluginapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/svc-gateway/svc/pkg/pluginapi/proto"
)

// Embedder answers embeddings requests: the optional part of a Provider
// whose upstream serves embedding models. A Provider that is not an Embedder
// (or a plugin built before embeddings) answers every embeddings call with
// NoEmbeddings, svc's 404 model_not_found.
type Embedder interface {
	// Embed answers one embeddings request. A failure the client should
	// see in the provider's words is a *ProviderError, as for Chat.
	Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error)
}

// EmbedRequest is one embeddings call.
type EmbedRequest struct {
	// Body is the request JSON as the client sent it, validated by svc:
	// input, model, dimensions, encoding_format ("float" or "base64"), user.
	Body []byte
	// Model is Body's "model".
	Model string
	// RequestID identifies the call in svc (the run id).
	RequestID string
	// TraceParent and TraceState: as ChatRequest's.
	TraceParent string
	TraceState  string
}

// EmbedResponse is the answer: the list JSON to return to the client, in
// the encoding the request asked for, and its usage (prompt tokens only).
type EmbedResponse struct {
	Body  []byte
	Usage Usage
}

// Model kinds, Model.Kind: what a model answers.
const (
	KindChat      = "chat"      // chat completions (also an empty Kind)
	KindEmbedding = "embedding" // embeddings
)

// NoEmbeddings is the answer of a provider without embeddings: the model
// does not exist there, in the provider's words.
func NoEmbeddings(model string) *ProviderError {
	return &ProviderError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Param: "model",
		Message: "The model `" + model + "` does not exist or you do not have access to it" + noEmbeddingsSuffix}
}

// noEmbeddingsSuffix ends NoEmbeddings's message: it tells that answer
// from an upstream's own 404.
const noEmbeddingsSuffix = ": this provider serves no embeddings."

// IsNoEmbeddings says whether err is NoEmbeddings's answer: the provider
// has no embeddings at all, which says nothing of its health.
func IsNoEmbeddings(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Status == http.StatusNotFound && pe.Code == "model_not_found" &&
		strings.HasSuffix(pe.Message, noEmbeddingsSuffix)
}

// Embed calls the plugin's Embed; a plugin that does not implement it
// answers NoEmbeddings.
func (c *providerClient) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	res, err := c.client.Embed(ctx, &pb.EmbedRequest{Body: req.Body, Model: req.Model, RequestId: req.RequestID,
		TraceParent: req.TraceParent, TraceState: req.TraceState})
	if status.Code(err) == codes.Unimplemented {
		return EmbedResponse{}, NoEmbeddings(req.Model)
	}
	if err != nil {
		return EmbedResponse{}, fromStatus(ctx, err)
	}
	return EmbedResponse{Body: res.GetBody(), Usage: fromPBUsage(res.GetUsage())}, nil
}

var _ Embedder = (*providerClient)(nil)

// Embed serves the gRPC call from Impl when it is an Embedder; otherwise
// it answers Unimplemented, as a plugin built before embeddings does.
func (s *providerServer) Embed(ctx context.Context, req *pb.EmbedRequest) (*pb.EmbedResponse, error) {
	e, ok := s.impl.(Embedder)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this provider serves no embeddings")
	}
	res, err := e.Embed(ctx, EmbedRequest{Body: req.GetBody(), Model: req.GetModel(), RequestID: req.GetRequestId(),
		TraceParent: req.GetTraceParent(), TraceState: req.GetTraceState()})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.EmbedResponse{Body: res.Body, Usage: toPBUsage(res.Usage)}, nil
}
