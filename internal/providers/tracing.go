package providers

import (
	"context"
	"strconv"
	"strings"

	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/tracing"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// startAttempt starts an attempt's client span, "chat gpt-4o-mini" (the
// model asked of the provider), under the call's span when it records.
// The provider is then passed this span's context as its traceparent.
func startAttempt(ctx context.Context, prov *Provider, model string, kind int) (context.Context, trace.Span) {
	if !tracing.Recording(ctx) {
		return ctx, trace.SpanFromContext(ctx)
	}
	op := semconv.GenAIOperationNameChat
	if kind == callEmbed {
		op = semconv.GenAIOperationNameEmbeddings
	}
	ctx, span := tracing.Start(ctx, tracing.OperationName(op.Value.AsString(), model), trace.SpanKindClient)
	attrs := tracing.NewAttrs()
	attrs.Add(op, semconv.GenAIRequestModel(model), tracing.Provider.String(prov.Name))
	if !strings.ContainsAny(prov.Plugin, `/\`) { // a plugin's name, not its binary's path
		attrs.Add(semconv.GenAIProviderNameKey.String(prov.Plugin))
	}
	attrs.SetOn(span)
	return ctx, span
}

// endAttempt ends an attempt's span with its outcome: the provider's
// status, and on a failure its error, the router's secrets hidden (and
// masked when the tenant has redaction on). An attempt with no outcome is
// one whose provider panicked.
func endAttempt(ctx context.Context, span trace.Span, a *Attempt, scrub func(string) string) {
	if !span.IsRecording() {
		return
	}
	if a.Outcome == "" {
		tracing.Fail(span, "panic", "the provider panicked")
		span.End()
		return
	}
	attrs := tracing.NewAttrs()
	attrs.Add(tracing.Outcome.String(a.Outcome))
	if a.Status != 0 {
		attrs.Add(semconv.HTTPResponseStatusCode(a.Status))
	}
	attrs.SetOn(span)
	if a.Outcome != OutcomeOK {
		class := a.Outcome
		if a.Status != 0 {
			class = strconv.Itoa(a.Status)
		}
		tracing.Fail(span, class, tracing.Describe(ctx, scrub(a.Error)))
	}
	span.End()
}

// answered puts the usage the provider answered with on the attempt's
// span in ctx (an embedding has no output tokens).
func answered(ctx context.Context, u pluginapi.Usage, embed bool) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || u.PromptTokens == 0 && u.CompletionTokens == 0 {
		return
	}
	attrs := tracing.NewAttrs()
	attrs.Add(semconv.GenAIUsageInputTokens(int(u.PromptTokens)))
	if !embed {
		attrs.Add(semconv.GenAIUsageOutputTokens(int(u.CompletionTokens)))
	}
	attrs.SetOn(span)
}
