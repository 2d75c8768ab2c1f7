package providers

import (
	"context"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/tracing"
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
	ctx, span := tracing.Start(ctx, op.Value.AsString()+" "+model, trace.SpanKindClient)
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, op, semconv.GenAIRequestModel(model), tracing.Provider.String(prov.Name))
	if !strings.ContainsAny(prov.Plugin, `/\`) { // a plugin's name, not its binary's path
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(prov.Plugin))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endAttempt ends an attempt's span with its outcome: the provider's
// status, and on a failure its error.
func endAttempt(span trace.Span, a *Attempt) {
	if !span.IsRecording() {
		return
	}
	if a.Status != 0 {
		span.SetAttributes(tracing.Outcome.String(a.Outcome), semconv.HTTPResponseStatusCode(a.Status))
	} else {
		span.SetAttributes(tracing.Outcome.String(a.Outcome))
	}
	if a.Outcome != OutcomeOK {
		class := a.Outcome
		if a.Status != 0 {
			class = strconv.Itoa(a.Status)
		}
		tracing.Fail(span, class, a.Error)
	}
	span.End()
}
