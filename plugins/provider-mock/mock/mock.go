// Package mock is svc's deterministic provider, served by the
// svc-provider-mock plugin or run inside svc's process.
package mock

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Mock is svc's deterministic provider: the default when no live provider
// key is set. The same request body always gets a byte-identical answer
// (ids and "created" derive from a hash of the body), shaped so that demos
// and the learning loop see real patterns: a triage prompt gets one of its
// listed labels chosen by the ticket's words, JSON mode gets valid JSON that
// follows the schema, a named tool gets a tool call, anything else a short
// answer built from the last user message's key words. Token usage is a
// documented estimate (see tokens.go).
//
// A Mock is safe for concurrent use.
type Mock struct {
	// Latency is waited before answering (before the first chunk when
	// streaming), to imitate a remote model. Zero answers at once.
	Latency time.Duration
}

var _ pluginapi.Provider = (*Mock)(nil)

// New returns the mock for cfg: only its MockLatency counts, as the mock
// has no upstream. log is unused (the mock has nothing to report) and may
// be nil; it is taken so that every provider is built alike.
func New(cfg pluginapi.ProviderConfig, _ hclog.Logger) (pluginapi.Provider, error) {
	if cfg.MockLatency < 0 {
		return nil, errors.New("mock latency must not be negative")
	}
	return &Mock{Latency: cfg.MockLatency}, nil
}

// Chat answers a non-streaming request.
func (m *Mock) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	a, err := compose(req.Body)
	if err != nil {
		return pluginapi.ChatResponse{}, err
	}
	if err := m.wait(ctx); err != nil {
		return pluginapi.ChatResponse{}, err
	}
	return pluginapi.ChatResponse{Body: a.completion(), Usage: a.usage}, nil
}

// StreamChat answers a streaming request with the same content as Chat,
// chunk by chunk.
func (m *Mock) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	a, err := compose(req.Body)
	if err != nil {
		return err
	}
	if err := m.wait(ctx); err != nil {
		return err
	}
	return a.stream(ctx, req.IncludeUsage, send)
}

// mockModels is the fixed model list; created dates are the public release
// days of the models the ids imitate.
var mockModels = []pluginapi.Model{
	{ID: "gpt-4o-mini", OwnedBy: "mock", Created: 1721172741},
	{ID: "gpt-4o", OwnedBy: "mock", Created: 1715367049},
	{ID: "gpt-4.1-mini", OwnedBy: "mock", Created: 1744318173},
	{ID: "gpt-4.1", OwnedBy: "mock", Created: 1744316542},
	{ID: "gpt-4.1-nano", OwnedBy: "mock", Created: 1744321707},
	{ID: "o4-mini", OwnedBy: "mock", Created: 1744225351},
	{ID: "o3-mini", OwnedBy: "mock", Created: 1737146383},
	{ID: "text-embedding-3-small", OwnedBy: "mock", Created: 1705948997, Kind: pluginapi.KindEmbedding},
	{ID: "text-embedding-3-large", OwnedBy: "mock", Created: 1705953180, Kind: pluginapi.KindEmbedding},
	{ID: "text-embedding-ada-002", OwnedBy: "mock", Created: 1671217299, Kind: pluginapi.KindEmbedding},
}

// Models lists the models the mock answers for (it answers any model name,
// echoing it back).
func (m *Mock) Models(ctx context.Context) ([]pluginapi.Model, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]pluginapi.Model, len(mockModels))
	copy(out, mockModels)
	return out, nil
}

// wait sleeps for the configured latency, or returns ctx.Err() when ctx
// ends first (or has already ended).
func (m *Mock) wait(ctx context.Context) error {
	if m.Latency <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(m.Latency)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
