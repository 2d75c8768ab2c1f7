package providertest_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/pluginapi/providertest"
)

// fake answers from its fields and remembers how each Chat reached it.
type fake struct {
	err error // returned by every call when set

	mu      sync.Mutex
	methods []string // the gRPC method of each Chat's context ("" in process)
	sizes   []int    // each Chat's body length
}

func (f *fake) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	method, _ := grpc.Method(ctx)
	f.mu.Lock()
	f.methods = append(f.methods, method)
	f.sizes = append(f.sizes, len(req.Body))
	f.mu.Unlock()
	if f.err != nil {
		return pluginapi.ChatResponse{}, f.err
	}
	return pluginapi.ChatResponse{Body: []byte(`{"model":"` + req.Model + `"}`), Usage: pluginapi.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}}, nil
}

func (f *fake) StreamChat(_ context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	if f.err != nil {
		return f.err
	}
	for i := range 3 {
		c := pluginapi.ChatChunk{Data: fmt.Appendf(nil, `{"i":%d}`, i)}
		if i == 2 && req.IncludeUsage {
			c.Usage, c.UsageOnly = &pluginapi.Usage{PromptTokens: 1, TotalTokens: 1}, true
		}
		if err := send(c); err != nil {
			return err
		}
	}
	return nil
}

func (f *fake) Models(context.Context) ([]pluginapi.Model, error) {
	if f.err != nil {
		return nil, f.err
	}
	return []pluginapi.Model{{ID: "e-1", OwnedBy: "t", Created: 1700000000, Kind: pluginapi.KindEmbedding}}, nil
}

func (f *fake) Embed(_ context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	if f.err != nil {
		return pluginapi.EmbedResponse{}, f.err
	}
	return pluginapi.EmbedResponse{Body: append([]byte("echo:"), req.Body...), Usage: pluginapi.Usage{PromptTokens: 4, TotalTokens: 4}}, nil
}

func TestModesRunsBothWithTheProviderItselfInProcess(t *testing.T) {
	p := &fake{}
	var ran []string
	providertest.Modes(t, p, func(t *testing.T, got pluginapi.Provider) {
		ran = append(ran, t.Name())
		if _, ok := got.(*fake); ok {
			assert.Same(t, p, got, "in process: the provider itself")
		}
		res, err := got.Chat(context.Background(), pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m-1"})
		require.NoError(t, err)
		assert.Equal(t, `{"model":"m-1"}`, string(res.Body))
		assert.Equal(t, pluginapi.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}, res.Usage)
	})
	assert.Equal(t, []string{t.Name() + "/in_process", t.Name() + "/plugin"}, ran)
	// The plugin mode's Chat came over gRPC, on the shared ChatCalls
	// stream, as svc's chats to a plugin process do.
	assert.Equal(t, []string{"", "/svc.pluginapi.v1.Provider/ChatCalls"}, p.methods)
}

func TestAProviderErrorSurvivesThePluginMode(t *testing.T) {
	want := pluginapi.ProviderError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
		Param: "model", Message: "slow down", RetryAfter: 1500 * time.Millisecond}
	perr := want
	providertest.Modes(t, &fake{err: &perr}, func(t *testing.T, p pluginapi.Provider) {
		check := func(what string, err error) {
			var pe *pluginapi.ProviderError
			require.ErrorAs(t, err, &pe, what)
			assert.Equal(t, want, *pe, what)
		}
		_, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: []byte(`{}`)})
		check("Chat", err)
		check("StreamChat", p.StreamChat(context.Background(), pluginapi.ChatRequest{Body: []byte(`{}`)},
			func(pluginapi.ChatChunk) error { return nil }))
		_, err = p.Models(context.Background())
		check("Models", err)
		_, err = p.(pluginapi.Embedder).Embed(context.Background(), pluginapi.EmbedRequest{Body: []byte(`{}`)})
		check("Embed", err)
	})
}

func TestEmbedAndStreamInBothModes(t *testing.T) {
	providertest.Modes(t, &fake{}, func(t *testing.T, p pluginapi.Provider) {
		e, ok := p.(pluginapi.Embedder)
		require.True(t, ok, "an Embedder in both modes")
		res, err := e.Embed(context.Background(), pluginapi.EmbedRequest{Body: []byte(`{"input":"a"}`), Model: "e-1"})
		require.NoError(t, err)
		assert.Equal(t, `echo:{"input":"a"}`, string(res.Body))
		assert.Equal(t, pluginapi.Usage{PromptTokens: 4, TotalTokens: 4}, res.Usage)

		var chunks []pluginapi.ChatChunk
		err = p.StreamChat(context.Background(), pluginapi.ChatRequest{Body: []byte(`{}`), IncludeUsage: true},
			func(c pluginapi.ChatChunk) error { chunks = append(chunks, c); return nil })
		require.NoError(t, err)
		require.Len(t, chunks, 3)
		assert.Equal(t, `{"i":0}`, string(chunks[0].Data))
		assert.Nil(t, chunks[0].Usage)
		assert.True(t, chunks[2].UsageOnly)
		assert.Equal(t, &pluginapi.Usage{PromptTokens: 1, TotalTokens: 1}, chunks[2].Usage)

		models, err := p.Models(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []pluginapi.Model{{ID: "e-1", OwnedBy: "t", Created: 1700000000, Kind: pluginapi.KindEmbedding}}, models)
	})
}

// The plugin mode has svc's message limits, not gRPC's default of 4 MiB:
// a request svc would send a plugin process reaches the provider.
func TestThePluginModeTakesWhatSvcSendsAPlugin(t *testing.T) {
	p := &fake{}
	big := bytes.Repeat([]byte("a"), 6<<20)
	_, err := providertest.Plugin(t, p).Chat(context.Background(), pluginapi.ChatRequest{Body: big})
	require.NoError(t, err)
	assert.Equal(t, []int{len(big)}, p.sizes)
}
