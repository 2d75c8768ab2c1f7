package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// CallSpans makes the eight spans of a plain live chat call as svc makes
// them (a server span and its children, with their attributes) and
// nothing else. It is the floor benchmarks measure what tracing adds to a
// call against: the SDK's own work for the spans every call must have
// (BenchmarkCallSpans, and svc-bench's spans made at the rate of its calls).
func CallSpans(tracer trace.Tracer) {
	ctx, root := tracer.Start(context.Background(), "POST", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", "POST")))
	cctx, call := Start(ctx, "chat", trace.SpanKindInternal)
	_, auth := Start(cctx, "authenticate", trace.SpanKindInternal)
	auth.SetAttributes(TenantID.String("t_1"), attribute.String("svc.auth.via", "key"))
	auth.End()
	call.SetName("chat gpt-4o-mini")
	call.SetAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", "gpt-4o-mini"),
		RunID.String("run_01J0000000000000000000000"), TenantID.String("t_1"), attribute.String("svc.mode", "observe"))
	_, policy := Start(cctx, "policy.evaluate", trace.SpanKindInternal)
	policy.SetAttributes(attribute.String("svc.policy.target", "chat"), attribute.String("svc.policy.decision", "allow"))
	policy.End()
	_, cache := Start(cctx, "cache.lookup", trace.SpanKindInternal)
	cache.SetAttributes(attribute.String("svc.cache.tier", "exact"), attribute.String("svc.cache.lookup", "miss"))
	cache.End()
	_, artifact := Start(cctx, "artifact.lookup", trace.SpanKindInternal)
	artifact.SetAttributes(attribute.Bool("svc.artifact.found", false))
	artifact.End()
	_, attempt := Start(cctx, "chat gpt-4o-mini-2024-07-18", trace.SpanKindClient)
	attempt.SetAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", "gpt-4o-mini"),
		Provider.String("openai"), attribute.String("gen_ai.provider.name", "openai"), Outcome.String("ok"),
		attribute.Int("http.response.status_code", 200), attribute.Int("gen_ai.usage.input_tokens", 12), attribute.Int("gen_ai.usage.output_tokens", 30))
	attempt.End()
	_, ledger := Start(cctx, "ledger.record", trace.SpanKindInternal)
	ledger.SetAttributes(RunID.String("run_01J0000000000000000000000"), attribute.Int("svc.ledger.events", 3))
	ledger.End()
	call.SetAttributes(Route.String("live"), Provider.String("openai"), attribute.String("gen_ai.response.id", "chatcmpl-123"),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"}))
	call.End()
	root.SetName("POST /v1/chat/completions")
	root.SetAttributes(attribute.String("http.route", "/v1/chat/completions"), attribute.String("url.path", "/v1/chat/completions"),
		attribute.Int("http.response.status_code", 200))
	root.End()
}
