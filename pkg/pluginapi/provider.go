package pluginapi

import "context"

// Provider answers chat-completions requests: the slot a model provider's
// plugin fills. svc calls one Provider per process; it must be safe for
// concurrent use.
//
// Requests and responses travel as the chat-completions JSON itself, so a
// provider passes through every field it does not understand and svc answers
// the client with the provider's own body.
type Provider interface {
	// Chat answers a non-streaming request. A failure the client should see
	// in the provider's words is a *ProviderError; any other error is
	// reported as an upstream failure (502).
	Chat(ctx context.Context, req ChatRequest) (ChatResponse, error)

	// StreamChat answers a streaming request by calling send once per chunk,
	// in order, as chunks become available. It stops and returns send's
	// error if send fails (the client went away), and returns ctx.Err()
	// when ctx is cancelled. An error before the first chunk is reported to
	// the client like Chat's; after it, the stream is cut.
	StreamChat(ctx context.Context, req ChatRequest, send func(ChatChunk) error) error

	// Models lists the models the provider offers, for GET /v1/models:
	// only those it answers, each with its Kind.
	Models(ctx context.Context) ([]Model, error)
}

// ChatRequest is one chat-completions call.
type ChatRequest struct {
	// Body is the request JSON as the client sent it, validated by svc;
	// its "stream" agrees with the method called.
	Body []byte
	// Model is Body's "model", for routing without parsing.
	Model string
	// IncludeUsage is set on streaming calls: the provider should report
	// token usage (for OpenAI-compatible upstreams, by asking with
	// stream_options.include_usage) so that svc can price the call.
	IncludeUsage bool
	// RequestID identifies the call in svc (the run id), for upstream
	// correlation and logs.
	RequestID string
	// TraceParent and TraceState are the W3C trace context of the call
	// (svc's attempt span, or the client's own when svc traces nothing):
	// a provider sends them upstream as the traceparent and tracestate
	// headers. Empty: none.
	TraceParent string
	TraceState  string
}

// ChatResponse is a complete non-streamed answer.
type ChatResponse struct {
	// Body is the chat.completion JSON to return to the client.
	Body []byte
	// Usage is the token usage the provider reported.
	Usage Usage
}

// ChatChunk is one streamed chat.completion.chunk.
type ChatChunk struct {
	// Data is one chat.completion.chunk JSON object (without the SSE
	// "data: " framing).
	Data []byte
	// Usage is set on the chunk that carries the call's token usage.
	Usage *Usage
	// UsageOnly marks a chunk that exists only to report usage (no
	// choices); svc forwards it only to clients that asked for usage.
	UsageOnly bool
}

// Usage is the token count of a call.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	// CachedPromptTokens and CacheWriteTokens are the part of PromptTokens
	// the provider read from, and wrote to, its prompt cache: providers
	// price them apart from other input tokens.
	CachedPromptTokens int64
	CacheWriteTokens   int64
}

// MaxTokens is ten times what the largest context window of any model
// holds: no call reads or writes more, and a count beyond it is garbage.
const MaxTokens = 100_000_000

// Believable says whether every count of u is one a provider could mean:
// none negative, none beyond MaxTokens. svc takes a usage that is not as
// unknown: believed, it would lower the tenant's spend, which budgets
// guard, or raise it past any budget on the word of a broken upstream.
func (u Usage) Believable() bool {
	return Believable(u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.CachedPromptTokens, u.CacheWriteTokens)
}

// Believable says whether every one of counts is within 0 and MaxTokens:
// a provider checks its upstream's own counts with it before adding them
// up, where a negative one could hide in a positive sum.
func Believable(counts ...int64) bool {
	for _, n := range counts {
		if n < 0 || n > MaxTokens {
			return false
		}
	}
	return true
}

// MaxModels is the most models a provider lists: far more than any real
// upstream serves, and a bound on what a list an upstream sends can cost
// svc (each model crosses to svc, and out to every client that asks). A
// provider stops its list there.
const MaxModels = 10_000

// Model is one entry of the provider's model list.
type Model struct {
	ID      string
	OwnedBy string
	Created int64 // Unix seconds
	// Kind is what the model answers: KindChat (or empty, as plugins built
	// before the field say) or KindEmbedding.
	Kind string
}
