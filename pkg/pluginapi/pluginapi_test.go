package pluginapi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// fakeProvider answers from fields the test sets.
type fakeProvider struct {
	chatErr   error
	chunks    int
	streamErr error         // returned after the chunks
	gate      chan struct{} // when set, each chunk waits for a receive
	seenCtx   chan error    // receives ctx.Err() when a stream ends
	seen      chan pluginapi.ChatRequest
}

func (f *fakeProvider) Chat(_ context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if f.seen != nil {
		f.seen <- req
	}
	if f.chatErr != nil {
		return pluginapi.ChatResponse{}, f.chatErr
	}
	return pluginapi.ChatResponse{Body: []byte(`{"object":"chat.completion"}`), Usage: pluginapi.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10, CachedPromptTokens: 4, CacheWriteTokens: 2}}, nil
}

func (f *fakeProvider) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	for i := range f.chunks {
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
				if f.seenCtx != nil {
					f.seenCtx <- ctx.Err()
				}
				return ctx.Err()
			}
		}
		c := pluginapi.ChatChunk{Data: fmt.Appendf(nil, `{"i":%d}`, i)}
		if i == f.chunks-1 && req.IncludeUsage {
			c.Usage = &pluginapi.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}
			c.UsageOnly = true
		}
		if err := send(c); err != nil {
			return err
		}
	}
	return f.streamErr
}

func (f *fakeProvider) Models(context.Context) ([]pluginapi.Model, error) {
	return []pluginapi.Model{{ID: "m-1", Created: 1700000000, OwnedBy: "test"}}, nil
}

// dispense connects a host-side client to impl over a real in-memory gRPC
// connection, as go-plugin would across processes.
func dispense(t *testing.T, name string, p plugin.Plugin) any {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{name: p})
	t.Cleanup(func() { _ = client.Close() })
	v, err := client.Dispense(name)
	require.NoError(t, err)
	return v
}

func provider(t *testing.T, f *fakeProvider) pluginapi.Provider {
	return dispense(t, pluginapi.ProviderName, &pluginapi.ProviderPlugin{Impl: f}).(pluginapi.Provider)
}

func TestProviderRoundTrip(t *testing.T) {
	f := &fakeProvider{seen: make(chan pluginapi.ChatRequest, 1)}
	p := provider(t, f)
	res, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: []byte(`{"model":"m"}`), Model: "m", RequestID: "run_1"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"chat.completion"}`, string(res.Body))
	assert.Equal(t, pluginapi.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10, CachedPromptTokens: 4, CacheWriteTokens: 2}, res.Usage)
	req := <-f.seen
	assert.Equal(t, "run_1", req.RequestID)
	assert.Equal(t, "m", req.Model)

	models, err := p.Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []pluginapi.Model{{ID: "m-1", Created: 1700000000, OwnedBy: "test"}}, models)
}

func TestProviderErrorCrossesTheBoundaryIntact(t *testing.T) {
	want := &pluginapi.ProviderError{Status: 404, Type: "invalid_request_error", Code: "model_not_found", Param: "model", Message: "The model `x` does not exist"}
	p := provider(t, &fakeProvider{chatErr: want})
	_, err := p.Chat(context.Background(), pluginapi.ChatRequest{})
	var got *pluginapi.ProviderError
	require.ErrorAs(t, err, &got)
	assert.Equal(t, want, got)

	// A 429 keeps the provider's advice on when to try again; a plugin
	// cannot make svc pass on a negative wait or one beyond a day.
	for sent, want := range map[time.Duration]time.Duration{1500 * time.Millisecond: 1500 * time.Millisecond, -time.Second: 0, 48 * time.Hour: 24 * time.Hour} {
		p = provider(t, &fakeProvider{chatErr: &pluginapi.ProviderError{Status: 429, Type: "rate_limit_error", Message: "slow down", RetryAfter: sent}})
		_, err = p.Chat(context.Background(), pluginapi.ChatRequest{})
		require.ErrorAs(t, err, &got)
		assert.Equal(t, want, got.RetryAfter, "sent %v", sent)
	}

	// A 5xx provider error keeps its detail too (it is not mistaken for an
	// unreachable plugin).
	p = provider(t, &fakeProvider{chatErr: &pluginapi.ProviderError{Status: 503, Type: "server_error", Message: "overloaded"}})
	_, err = p.Chat(context.Background(), pluginapi.ChatRequest{})
	require.ErrorAs(t, err, &got)
	assert.Equal(t, 503, got.Status)
	var unavailable *pluginapi.UnavailableError
	assert.False(t, errors.As(err, &unavailable))

	p = provider(t, &fakeProvider{chatErr: errors.New("dial upstream: connection refused")})
	_, err = p.Chat(context.Background(), pluginapi.ChatRequest{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connection refused")
	assert.False(t, errors.As(err, &got))
}

func TestAnOversizedErrorCrossesCutAndLeavesTheConnectionUp(t *testing.T) {
	huge := strings.Repeat("m", 5<<20)
	f := &fakeProvider{chatErr: &pluginapi.ProviderError{Status: 529, Type: strings.Repeat("t", 1<<20), Message: huge}}
	p := provider(t, f)
	_, err := p.Chat(context.Background(), pluginapi.ChatRequest{})
	var got *pluginapi.ProviderError
	require.ErrorAs(t, err, &got, "the provider's error, not a broken connection")
	assert.Equal(t, 529, got.Status)
	assert.Less(t, len(got.Message), 16<<10)
	assert.True(t, strings.HasPrefix(got.Message, "mmmm") && strings.HasSuffix(got.Message, "…"))
	assert.Less(t, len(got.Type), 1<<10)

	// The same connection serves the next call.
	f.chatErr = nil
	_, err = p.Chat(context.Background(), pluginapi.ChatRequest{})
	require.NoError(t, err)
	f.streamErr, f.chunks = errors.New(huge), 1
	err = p.StreamChat(context.Background(), pluginapi.ChatRequest{}, func(pluginapi.ChatChunk) error { return nil })
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 16<<10)
	_, err = p.Models(context.Background())
	require.NoError(t, err)
}

func TestStreamCrossesChunkByChunk(t *testing.T) {
	gate := make(chan struct{})
	p := provider(t, &fakeProvider{chunks: 3, gate: gate})
	got := make(chan pluginapi.ChatChunk)
	done := make(chan error, 1)
	go func() {
		done <- p.StreamChat(context.Background(), pluginapi.ChatRequest{IncludeUsage: true}, func(c pluginapi.ChatChunk) error {
			got <- c
			return nil
		})
	}()
	// Each chunk reaches the host before the plugin produces the next: the
	// stream is never buffered whole.
	for i := range 3 {
		gate <- struct{}{}
		select {
		case c := <-got:
			assert.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(c.Data))
			if i == 2 {
				require.NotNil(t, c.Usage)
				assert.Equal(t, int64(2), c.Usage.CompletionTokens)
				assert.True(t, c.UsageOnly)
			} else {
				assert.Nil(t, c.Usage)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("chunk %d did not arrive before the next was produced", i)
		}
	}
	require.NoError(t, <-done)
}

func TestStreamErrorAfterChunks(t *testing.T) {
	p := provider(t, &fakeProvider{chunks: 2, streamErr: &pluginapi.ProviderError{Status: 502, Type: "upstream_error", Message: "upstream cut the stream"}})
	n := 0
	err := p.StreamChat(context.Background(), pluginapi.ChatRequest{}, func(pluginapi.ChatChunk) error { n++; return nil })
	assert.Equal(t, 2, n)
	var pe *pluginapi.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "upstream cut the stream", pe.Message)
}

// When the host stops listening (the client went away), the plugin's
// context is cancelled so that it can cancel its upstream call.
func TestStreamCancellationReachesThePlugin(t *testing.T) {
	gate := make(chan struct{}, 1)
	seen := make(chan error, 1)
	p := provider(t, &fakeProvider{chunks: 5, gate: gate, seenCtx: seen})
	ctx, cancel := context.WithCancel(context.Background())
	gate <- struct{}{}
	err := p.StreamChat(ctx, pluginapi.ChatRequest{}, func(pluginapi.ChatChunk) error {
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	select {
	case err := <-seen:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin's context was not cancelled")
	}
}

// Chunks already on their way when the caller cancels are not passed to
// send: the stream stops at the cancel, as a provider in process stops.
func TestNoChunkIsSentAfterTheCallersCancel(t *testing.T) {
	p := provider(t, &fakeProvider{chunks: 50})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := p.StreamChat(ctx, pluginapi.ChatRequest{}, func(pluginapi.ChatChunk) error {
		n++
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, n)
}

func TestSendFailureStopsTheStream(t *testing.T) {
	p := provider(t, &fakeProvider{chunks: 50})
	stop := errors.New("client went away")
	n := 0
	err := p.StreamChat(context.Background(), pluginapi.ChatRequest{}, func(pluginapi.ChatChunk) error { n++; return stop })
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 1, n)
}

type fakeTransport struct{ got chan pluginapi.EmailMessage }

func (f *fakeTransport) Send(_ context.Context, msg pluginapi.EmailMessage) (string, error) {
	if msg.Subject == "fail" {
		return "", errors.New("smtp: 550 mailbox unavailable")
	}
	f.got <- msg
	return "msg-42", nil
}

func TestEmailRoundTrip(t *testing.T) {
	f := &fakeTransport{got: make(chan pluginapi.EmailMessage, 1)}
	tr := dispense(t, pluginapi.EmailName, &pluginapi.EmailPlugin{Impl: f}).(pluginapi.EmailTransport)
	msg := pluginapi.EmailMessage{From: "svc <no-reply@example.com>", To: []string{"a@example.com", "b@example.com"}, Subject: "Invitation", Text: "hi", HTML: "<p>hi</p>"}
	id, err := tr.Send(context.Background(), msg)
	require.NoError(t, err)
	assert.Equal(t, "msg-42", id)
	assert.Equal(t, msg, <-f.got)

	_, err = tr.Send(context.Background(), pluginapi.EmailMessage{Subject: "fail"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "550 mailbox unavailable")
}

type fakeCompiler struct{}

func (fakeCompiler) Compile(_ context.Context, page pluginapi.Page) ([]byte, error) {
	if len(page.HTML) == 0 {
		return nil, errors.New("empty page")
	}
	return fmt.Appendf(nil, `{"url":%q,"bytes":%d,"type":%q}`, page.URL, len(page.HTML), page.ContentType), nil
}

func TestPageCompilerRoundTrip(t *testing.T) {
	c := dispense(t, pluginapi.PageCompilerName, &pluginapi.PageCompilerPlugin{Impl: fakeCompiler{}}).(pluginapi.PageCompiler)
	som, err := c.Compile(context.Background(), pluginapi.Page{URL: "https://example.com/", HTML: []byte("<html></html>"), ContentType: "text/html"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"url":"https://example.com/","bytes":13,"type":"text/html"}`, string(som))
	_, err = c.Compile(context.Background(), pluginapi.Page{})
	assert.ErrorContains(t, err, "empty page")
}
