package pluginapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	pb "github.com/svc-gateway/svc/pkg/pluginapi/proto"
)

// fakeEmbedder is a provider with embeddings.
type fakeEmbedder struct {
	fakeProvider
	seen    chan pluginapi.EmbedRequest
	failure error
}

func (f *fakeEmbedder) Embed(_ context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	f.seen <- req
	if f.failure != nil {
		return pluginapi.EmbedResponse{}, f.failure
	}
	return pluginapi.EmbedResponse{Body: []byte(`{"object":"list"}`), Usage: pluginapi.Usage{PromptTokens: 4, TotalTokens: 4}}, nil
}

func (f *fakeEmbedder) Models(context.Context) ([]pluginapi.Model, error) {
	return []pluginapi.Model{{ID: "e-1", Kind: pluginapi.KindEmbedding}, {ID: "c-1"}}, nil
}

func embedder(t *testing.T, impl pluginapi.Provider) pluginapi.Embedder {
	v := dispense(t, pluginapi.ProviderName, &pluginapi.ProviderPlugin{Impl: impl})
	e, ok := v.(pluginapi.Embedder)
	require.True(t, ok, "the host's provider client is an Embedder")
	return e
}

func TestEmbedRoundTrip(t *testing.T) {
	f := &fakeEmbedder{seen: make(chan pluginapi.EmbedRequest, 1)}
	e := embedder(t, f)
	res, err := e.Embed(context.Background(), pluginapi.EmbedRequest{Body: []byte(`{"input":"hi"}`), Model: "e-1", RequestID: "run_1"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"list"}`, string(res.Body))
	assert.Equal(t, pluginapi.Usage{PromptTokens: 4, TotalTokens: 4}, res.Usage)
	assert.Equal(t, pluginapi.EmbedRequest{Body: []byte(`{"input":"hi"}`), Model: "e-1", RequestID: "run_1"}, <-f.seen)

	models, err := e.(pluginapi.Provider).Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []pluginapi.Model{{ID: "e-1", Kind: pluginapi.KindEmbedding}, {ID: "c-1"}}, models, "the kind crosses")
}

func TestEmbedProviderErrorCrosses(t *testing.T) {
	f := &fakeEmbedder{seen: make(chan pluginapi.EmbedRequest, 1),
		failure: &pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Code: "bad", Param: "input", Message: "no"}}
	_, err := embedder(t, f).Embed(context.Background(), pluginapi.EmbedRequest{Model: "e-1"})
	var pe *pluginapi.ProviderError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, pluginapi.ProviderError{Status: 400, Type: "invalid_request_error", Code: "bad", Param: "input", Message: "no"}, *pe)
}

func TestEmbedWithoutEmbedderIsModelNotFound(t *testing.T) {
	// A Provider that is not an Embedder, served by this pluginapi.
	_, err := embedder(t, &fakeProvider{}).Embed(context.Background(), pluginapi.EmbedRequest{Model: "text-embedding-3-small"})
	assertNoEmbeddings(t, err)
}

// oldPlugin is a plugin built before embeddings: its gRPC server has no
// Embed method of its own.
type oldPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	client pluginapi.ProviderPlugin
}

type oldServer struct{ pb.UnimplementedProviderServer }

func (p *oldPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterProviderServer(s, oldServer{})
	return nil
}

func (p *oldPlugin) GRPCClient(ctx context.Context, b *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return p.client.GRPCClient(ctx, b, c)
}

func TestEmbedOldPluginIsModelNotFound(t *testing.T) {
	v := dispense(t, pluginapi.ProviderName, &oldPlugin{})
	_, err := v.(pluginapi.Embedder).Embed(context.Background(), pluginapi.EmbedRequest{Model: "text-embedding-3-small"})
	assertNoEmbeddings(t, err)
}

func assertNoEmbeddings(t *testing.T, err error) {
	t.Helper()
	var pe *pluginapi.ProviderError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, 404, pe.Status)
	assert.Equal(t, "model_not_found", pe.Code)
	assert.Equal(t, "invalid_request_error", pe.Type)
	assert.Contains(t, pe.Message, "`text-embedding-3-small`")
}
