package gateway_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// traced is a provider that keeps the trace context of each call and
// fails when asked to.
type traced struct {
	mu      sync.Mutex
	parents []string
	fail    bool
	message string // the failure's text, when not the default
	cancel  func() // called by Chat, which then fails as the context does
	answer  []byte // the answer, when not instantBody
}

func (p *traced) seen(tp string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parents = append(p.parents, tp)
}

func (p *traced) Chat(_ context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	p.seen(req.TraceParent)
	if p.cancel != nil {
		p.cancel()
		return pluginapi.ChatResponse{}, context.Canceled
	}
	if p.fail {
		msg := "upstream exploded"
		if p.message != "" {
			msg = p.message
		}
		return pluginapi.ChatResponse{}, &pluginapi.ProviderError{Status: 500, Type: "server_error", Message: msg}
	}
	body := instantBody
	if p.answer != nil {
		body = p.answer
	}
	return pluginapi.ChatResponse{Body: body, Usage: pluginapi.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}, nil
}

func (p *traced) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}

func (p *traced) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

func (p *traced) Embed(_ context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	p.seen(req.TraceParent)
	return pluginapi.EmbedResponse{Body: []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"e-1"}`),
		Usage: pluginapi.Usage{PromptTokens: 3, TotalTokens: 3}}, nil
}

// runs keeps the runs recorded.
type runs struct {
	mu   sync.Mutex
	runs []*ledger.Run
}

func (r *runs) Record(_ context.Context, rec *ledger.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, rec.Run)
	return nil
}

func tracedGateway(p *traced, rec gateway.Recorder) *gateway.Gateway {
	set := &providers.Set{Providers: []*providers.Provider{{Name: "up", Plugin: "openai", Impl: p, Fingerprint: "up"}},
		Retries: providers.Retries{MaxAttempts: 1}}
	return gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: rec})
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func spanNamed(t *testing.T, spans []sdktrace.ReadOnlySpan, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name && s.SpanKind() == kind {
			return s
		}
	}
	t.Fatalf("no span %q of kind %s", name, kind)
	return nil
}

// A failed call's span and its attempt's say what failed: the error
// answered with, the provider's status.
func TestTracedCallThatFails(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	gw := tracedGateway(&traced{fail: true}, discard{})
	req, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	ctx, root := tp.Tracer("test").Start(context.Background(), "request")
	_, err = gw.Complete(ctx, &auth.Identity{TenantID: "t", Mode: auth.Observe}, req)
	root.End()
	require.Error(t, err)

	spans := rec.Ended()
	call := spanNamed(t, spans, "chat gpt-4o-mini", trace.SpanKindInternal)
	assert.Equal(t, codes.Error, call.Status().Code)
	assert.NotEmpty(t, attrsOf(call)["error.type"].AsString())
	attempt := spanNamed(t, spans, "chat gpt-4o-mini", trace.SpanKindClient)
	a := attrsOf(attempt)
	assert.Equal(t, codes.Error, attempt.Status().Code)
	assert.Equal(t, "500", a["error.type"].AsString())
	assert.EqualValues(t, 500, a["http.response.status_code"].AsInt64())
	assert.Equal(t, providers.OutcomeError, a["svc.outcome"].AsString())
}

// An embeddings call is traced by the same conventions, its attempt's
// span passed to the provider; its inputs are no messages, and content
// capture leaves them out.
func TestTracedEmbeddings(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	p := &traced{}
	set := &providers.Set{Providers: []*providers.Provider{{Name: "up", Plugin: "openai", Impl: p, Fingerprint: "up"}},
		Retries: providers.Retries{MaxAttempts: 1}}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: discard{}, TraceContent: true})
	req, err := gateway.ParseEmbedRequest([]byte(`{"model":"e-1","input":"hello"}`))
	require.NoError(t, err)
	ctx, root := tp.Tracer("test").Start(context.Background(), "request")
	_, err = gw.Embed(ctx, &auth.Identity{TenantID: "t", Mode: auth.Observe}, req)
	root.End()
	require.NoError(t, err)

	spans := rec.Ended()
	call := spanNamed(t, spans, "embeddings e-1", trace.SpanKindInternal)
	assert.Equal(t, "embeddings", attrsOf(call)["gen_ai.operation.name"].AsString())
	assert.EqualValues(t, 3, attrsOf(call)["gen_ai.usage.input_tokens"].AsInt64())
	_, output := attrsOf(call)["gen_ai.usage.output_tokens"]
	assert.False(t, output, "an embedding has no output tokens")
	_, captured := attrsOf(call)["gen_ai.input.messages"]
	assert.False(t, captured, "an embeddings call has no messages to record")
	attempt := spanNamed(t, spans, "embeddings e-1", trace.SpanKindClient)
	require.Len(t, p.parents, 1)
	assert.Equal(t, "00-"+attempt.SpanContext().TraceID().String()+"-"+attempt.SpanContext().SpanID().String()+"-01", p.parents[0])
}

// With nothing recording, the provider is passed the caller's own trace
// context, unchanged, and the run names its trace; without one, neither.
func TestUntracedCallPassesTheCallersContextOn(t *testing.T) {
	p := &traced{}
	recorded := &runs{}
	gw := tracedGateway(p, recorded)
	req, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	id := &auth.Identity{TenantID: "t", Mode: auth.Observe}

	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	_, err = gw.Complete(trace.ContextWithRemoteSpanContext(context.Background(), remote), id, req)
	require.NoError(t, err)
	_, err = gw.Complete(context.Background(), id, req)
	require.NoError(t, err)

	assert.Equal(t, []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""}, p.parents)
	require.Len(t, recorded.runs, 2)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", recorded.runs[0].TraceID)
	assert.Empty(t, recorded.runs[1].TraceID)
}

// streamer streams a two-word answer and its usage.
type streamer struct{ traced }

func (p *streamer) StreamChat(_ context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	p.seen(req.TraceParent)
	for _, c := range []string{
		`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"up-1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi "}}]}`,
		`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"up-1","choices":[{"index":0,"delta":{"content":"carol@example.net"},"finish_reason":"stop"}]}`,
	} {
		if err := send(pluginapi.ChatChunk{Data: []byte(c)}); err != nil {
			return err
		}
	}
	return send(pluginapi.ChatChunk{Data: []byte(`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"up-1","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`),
		Usage: &pluginapi.Usage{PromptTokens: 4, CompletionTokens: 2, TotalTokens: 6}, UsageOnly: true})
}

type nullSink struct{}

func (nullSink) Begin(string, string) error { return nil }
func (nullSink) Chunk([]byte) error         { return nil }

// masked says every tenant has redaction on.
type masked struct{}

func (masked) Redaction(context.Context, string) bool { return true }

// A streamed call's span reads its answer from the chunks: the response's
// id and model, the usage, and, with content capture on, the text, masked
// for a tenant with redaction on.
func TestTracedStream(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	set := &providers.Set{Providers: []*providers.Provider{{Name: "up", Plugin: "openai", Impl: &streamer{}, Fingerprint: "up"}},
		Retries: providers.Retries{MaxAttempts: 1}}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: discard{}, TraceContent: true, Redaction: masked{}})
	req, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"mail dave@example.com"}]}`))
	require.NoError(t, err)
	ctx, root := tp.Tracer("test").Start(context.Background(), "request")
	_, err = gw.Stream(ctx, &auth.Identity{TenantID: "t", Mode: auth.Observe}, req, nullSink{})
	root.End()
	require.NoError(t, err)

	a := attrsOf(spanNamed(t, rec.Ended(), "chat gpt-4o-mini", trace.SpanKindInternal))
	assert.Equal(t, "chatcmpl-s", a["gen_ai.response.id"].AsString())
	assert.Equal(t, "up-1", a["gen_ai.response.model"].AsString())
	assert.EqualValues(t, 4, a["gen_ai.usage.input_tokens"].AsInt64())
	assert.EqualValues(t, 2, a["gen_ai.usage.output_tokens"].AsInt64())
	assert.Equal(t, []string{"stop"}, a["gen_ai.response.finish_reasons"].AsStringSlice(), "from the assembled stream")
	assert.Equal(t, "openai", a["gen_ai.provider.name"].AsString(), "the answering provider's plugin")
	in, out := a["gen_ai.input.messages"].AsString(), a["gen_ai.output.messages"].AsString()
	assert.Contains(t, in, "mail ")
	assert.NotContains(t, in, "dave@example.com")
	assert.Contains(t, out, "Hi ")
	assert.NotContains(t, out, "carol@example.net")
}

// Every step of a call has its span, the call's child, whether or not it
// had work to do: policy.evaluate tells the decision when no rule can
// judge the call too, artifact.lookup whether an artifact was found when
// the tenant has none too.
func TestEveryStepHasItsSpan(t *testing.T) {
	for _, tc := range []struct {
		name          string
		targets       map[policy.Target]bool
		agent, tenant string
		found         bool
	}{
		{name: "no policy, no artifact of the tenant", tenant: "ten_other"},
		{name: "a chat rule, an artifact", targets: map[policy.Target]bool{policy.Chat: true}, tenant: tenantID, found: true},
		{name: "a provider rule", targets: map[policy.Target]bool{policy.Provider: true}, tenant: "ten_other"},
		{name: "tool rules only", targets: map[policy.Target]bool{policy.Tool: true}, tenant: "ten_other"},
		{name: "an agent's call", agent: "bot", tenant: "ten_other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			f := newFixture(t, setup{governor: &governor{targets: tc.targets}, artifact: synth.ArtifactShadow})
			ctx, root := tp.Tracer("test").Start(context.Background(), "request")
			_, err := f.gw.Complete(ctx, &auth.Identity{TenantID: tc.tenant, KeyID: "key_1", Mode: auth.Observe, Agent: tc.agent},
				question(t, `"max_tokens":40,"max_completion_tokens":30,`))
			root.End()
			require.NoError(t, err)

			spans := rec.Ended()
			call := spanNamed(t, spans, "chat "+model, trace.SpanKindInternal)
			assert.EqualValues(t, 30, attrsOf(call)["gen_ai.request.max_tokens"].AsInt64(), "max_completion_tokens wins")
			assert.Equal(t, "chatcmpl-1", attrsOf(call)["gen_ai.response.id"].AsString())
			assert.Equal(t, model, attrsOf(call)["gen_ai.response.model"].AsString())
			step := map[string]sdktrace.ReadOnlySpan{}
			for _, name := range []string{"policy.evaluate", "artifact.lookup", "cache.lookup"} {
				var got []sdktrace.ReadOnlySpan
				for _, s := range spans {
					if s.Name() == name {
						got = append(got, s)
					}
				}
				require.Len(t, got, 1, name)
				assert.Equal(t, call.SpanContext().SpanID(), got[0].Parent().SpanID(), name)
				step[name] = got[0]
			}
			assert.Equal(t, "allow", attrsOf(step["policy.evaluate"])["svc.policy.decision"].AsString())
			assert.Equal(t, "chat", attrsOf(step["policy.evaluate"])["svc.policy.target"].AsString())
			assert.Equal(t, tc.found, attrsOf(step["artifact.lookup"])["svc.artifact.found"].AsBool())
		})
	}
}

// An answer from the exact cache used no tokens and asked no provider:
// its call's span has neither usage nor a provider, where the call it
// stands for has its own.
func TestTracedCacheHitHasNoUsage(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFixture(t, setup{})
	id := &auth.Identity{TenantID: tenantID, KeyID: "key_1", Mode: auth.Optimize}
	for range 2 {
		ctx, root := tp.Tracer("test").Start(context.Background(), "request")
		_, err := f.gw.Complete(ctx, id, question(t, ""))
		root.End()
		require.NoError(t, err)
	}
	var calls []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "chat "+model && s.SpanKind() == trace.SpanKindInternal {
			calls = append(calls, s)
		}
	}
	require.Len(t, calls, 2)
	live, hit := attrsOf(calls[0]), attrsOf(calls[1])
	require.Equal(t, "live", live["svc.route"].AsString())
	assert.EqualValues(t, 10, live["gen_ai.usage.input_tokens"].AsInt64())
	assert.EqualValues(t, 2, live["gen_ai.usage.output_tokens"].AsInt64())
	require.Equal(t, "exact_cache", hit["svc.route"].AsString())
	assert.NotContains(t, hit, attribute.Key("gen_ai.usage.input_tokens"))
	assert.NotContains(t, hit, attribute.Key("gen_ai.usage.output_tokens"))
	assert.Equal(t, model, hit["gen_ai.response.model"].AsString(), "the answer is still the model's")
	assert.NotEmpty(t, live["gen_ai.provider.name"].AsString())
	assert.NotEmpty(t, live["svc.provider"].AsString())
	assert.NotContains(t, hit, attribute.Key("gen_ai.provider.name"), "no provider answered")
	assert.NotContains(t, hit, attribute.Key("svc.provider"))
}
