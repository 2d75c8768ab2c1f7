package gateway_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/tracing"
)

// spanRecorder records runs under a "ledger.record" span, as the ledger's
// recorder does.
type spanRecorder struct{}

func (spanRecorder) Record(ctx context.Context, _ *ledger.Record) error {
	_, span := tracing.Start(ctx, "ledger.record", trace.SpanKindInternal)
	span.End()
	return nil
}

// denier denies every request on target, and lets every provider be.
type denier struct{ target policy.Target }

func (d denier) Has(t policy.Target) bool { return t == d.target }

func (d denier) Decide(context.Context, governance.Call, *policy.Input) (governance.Decision, error) {
	return governance.Decision{Verdict: policy.Verdict{Decision: policy.Deny,
		Rules: []policy.RuleResult{{ID: "no", Effect: policy.Deny}}}, Enforced: true, Evaluated: true}, nil
}

func (d denier) Prepare(context.Context, governance.Call, *policy.Input) {}

func (d denier) Judge(ctx context.Context, c governance.Call, in *policy.Input) (governance.Judgment, error) {
	dec, err := d.Decide(ctx, c, in)
	return governance.Judgment{Decision: dec}, err
}

func (denier) Settle(_ context.Context, j governance.Judgment) (governance.Decision, error) {
	return j.Decision, nil
}

func (denier) NeedsSpend(context.Context, string) bool { return false }

func (denier) BudgetError(context.Context, *auth.Identity, policy.Verdict, *policy.Spend) *errs.Error {
	return nil
}

func (denier) JudgeProviders(context.Context, *auth.Identity, string, policy.Request, []policy.Candidate) ([]governance.ProviderVerdict, error) {
	return nil, nil
}

func traceCall(t *testing.T, o gateway.Options, body string, mode auth.Mode) ([]sdktrace.ReadOnlySpan, error) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	gw := gateway.New(o)
	req, err := gateway.ParseRequest([]byte(body))
	require.NoError(t, err)
	ctx, root := tp.Tracer("test").Start(context.Background(), "request")
	_, err = gw.Complete(ctx, &auth.Identity{TenantID: "t", Mode: mode}, req)
	root.End()
	return rec.Ended(), err
}

func oneProvider(p *traced) *providers.Router {
	return providers.NewRouter(&providers.Set{Providers: []*providers.Provider{{Name: "up", Plugin: "openai", Impl: p, Fingerprint: "up"}},
		Retries: providers.Retries{MaxAttempts: 1}}, nil)
}

// A failure's text on the call's and the attempt's spans is masked when
// the tenant has redaction on, as the run's is.
func TestTracedFailureIsMaskedForARedactingTenant(t *testing.T) {
	p := &traced{fail: true, message: "no quota for dave@example.com"}
	spans, err := traceCall(t, gateway.Options{Router: oneProvider(p), Recorder: discard{}, Redaction: masked{}},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, auth.Observe)
	require.Error(t, err)
	for _, kind := range []trace.SpanKind{trace.SpanKindInternal, trace.SpanKindClient} {
		s := spanNamed(t, spans, "chat gpt-4o-mini", kind)
		assert.Equal(t, codes.Error, s.Status().Code)
		assert.Contains(t, s.Status().Description, "no quota for ", kind)
		assert.NotContains(t, s.Status().Description, "dave@example.com", kind)
	}
}

// A blocked call's run is recorded under the call's span, not the policy
// evaluation's; a deny is the policy's decision, not its failure.
func TestTracedBlockedCall(t *testing.T) {
	spans, err := traceCall(t, gateway.Options{Router: oneProvider(&traced{}), Recorder: spanRecorder{}, Governor: denier{policy.Chat}},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, auth.Optimize)
	require.Error(t, err)
	call := spanNamed(t, spans, "chat gpt-4o-mini", trace.SpanKindInternal)
	pol := spanNamed(t, spans, "policy.evaluate", trace.SpanKindInternal)
	record := spanNamed(t, spans, "ledger.record", trace.SpanKindInternal)
	assert.Equal(t, call.SpanContext().SpanID(), pol.Parent().SpanID())
	assert.Equal(t, call.SpanContext().SpanID(), record.Parent().SpanID(), "the run is recorded under the call's span")
	assert.Equal(t, codes.Unset, pol.Status().Code, "a deny is a decision")
	assert.Equal(t, "deny", attrsOf(pol)["svc.policy.decision"].AsString())
	assert.Equal(t, "chat", attrsOf(pol)["svc.policy.target"].AsString())
	assert.Equal(t, "blocked", attrsOf(call)["svc.route"].AsString())
	assert.NotContains(t, attrsOf(call), attribute.Key("gen_ai.provider.name"), "no provider was called")
	assert.NotContains(t, attrsOf(call), attribute.Key("svc.provider"))
}

// A client that goes away is no failure of svc's: the call's span says
// "cancelled" and leaves its status unset.
func TestTracedCallWhoseClientLeft(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	gw := gateway.New(gateway.Options{Router: oneProvider(&traced{cancel: cancel}), Recorder: discard{}})
	req, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	ctx, root := tp.Tracer("test").Start(ctx, "request")
	_, err = gw.Complete(ctx, &auth.Identity{TenantID: "t", Mode: auth.Observe}, req)
	root.End()
	require.Error(t, err)
	call := spanNamed(t, rec.Ended(), "chat gpt-4o-mini", trace.SpanKindInternal)
	assert.Equal(t, "cancelled", attrsOf(call)["error.type"].AsString())
	assert.Equal(t, codes.Unset, call.Status().Code)
}

// The tool calls of an answer are put before the tool policies under a
// span of their own.
func TestTracedToolCallPolicy(t *testing.T) {
	p := &traced{answer: []byte(`{"id":"chatcmpl-t","object":"chat.completion","created":1,"model":"up-1","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"rm","arguments":"{}"}}]},` +
		`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)}
	spans, err := traceCall(t, gateway.Options{Router: oneProvider(p), Recorder: spanRecorder{}, Governor: denier{policy.Tool}},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, auth.Optimize)
	require.Error(t, err)
	call := spanNamed(t, spans, "chat gpt-4o-mini", trace.SpanKindInternal)
	var pol sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "policy.evaluate" && attrsOf(s)["svc.policy.target"].AsString() == "tool" {
			pol = s
		}
	}
	require.NotNil(t, pol, "no policy.evaluate span on the tool calls")
	assert.Equal(t, call.SpanContext().SpanID(), pol.Parent().SpanID())
	assert.Equal(t, "deny", attrsOf(pol)["svc.policy.decision"].AsString())
	record := spanNamed(t, spans, "ledger.record", trace.SpanKindInternal)
	assert.Equal(t, call.SpanContext().SpanID(), record.Parent().SpanID())
	assert.Equal(t, "blocked", attrsOf(call)["svc.route"].AsString())
	assert.Contains(t, attrsOf(call), attribute.Key("gen_ai.provider.name"), "blocked on its answer: the provider that answered is named")
	assert.Contains(t, attrsOf(call), attribute.Key("svc.provider"))
}

// Captured content is cut at 64 KiB, at a character's boundary.
func TestTracedContentIsBounded(t *testing.T) {
	long := strings.Repeat("é", 40<<10) // 80 KiB
	spans, err := traceCall(t, gateway.Options{Router: oneProvider(&traced{}), Recorder: discard{}, TraceContent: true},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`+long+`"}]}`, auth.Observe)
	require.NoError(t, err)
	in := attrsOf(spanNamed(t, spans, "chat gpt-4o-mini", trace.SpanKindInternal))["gen_ai.input.messages"].AsString()
	assert.LessOrEqual(t, len(in), 64<<10)
	assert.Greater(t, len(in), 64<<10-4)
	assert.True(t, utf8.ValidString(in))
}

// A non-streamed answer's finish reasons are on the call's span.
func TestTracedFinishReasons(t *testing.T) {
	spans, err := traceCall(t, gateway.Options{Router: oneProvider(&traced{}), Recorder: discard{}},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, auth.Observe)
	require.NoError(t, err)
	a := attrsOf(spanNamed(t, spans, "chat gpt-4o-mini", trace.SpanKindInternal))
	assert.Equal(t, []string{"stop"}, a["gen_ai.response.finish_reasons"].AsStringSlice())
	assert.Equal(t, "openai", a["gen_ai.provider.name"].AsString())
}
