package tracing

import (
	"context"

	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/redact"
)

// Call is the span of a gateway call started before the call's model is
// read: the HTTP layer starts it as a request arrives, so that the steps
// before the gateway (authentication, the body read) are its children too,
// and the gateway takes it (TakeCall) to name it by its model and end it.
// A request refused before the gateway takes it ends it (End).
type Call struct {
	span      trace.Span
	operation string
	taken     bool
}

type callKey struct{}

// StartCall starts, under ctx's span when it records, the span of a
// gateway call of operation ("chat", "embeddings"), named by the operation
// alone until its model is known. It returns ctx unchanged and nil when
// ctx's span does not record.
func StartCall(ctx context.Context, operation string) (context.Context, *Call) {
	if !Recording(ctx) {
		return ctx, nil
	}
	ctx, span := Start(ctx, operation, trace.SpanKindInternal)
	c := &Call{span: span, operation: operation}
	return context.WithValue(ctx, callKey{}, c), c
}

// TakeCall hands the gateway the call span ctx's request started, once:
// the span is ctx's own (no other span was started under it since). It
// returns nil when there is none to take, and the gateway starts its own.
func TakeCall(ctx context.Context) trace.Span {
	c, _ := ctx.Value(callKey{}).(*Call)
	if c == nil || c.taken || trace.SpanContextFromContext(ctx).SpanID() != c.span.SpanContext().SpanID() {
		return nil
	}
	c.taken = true
	return c.span
}

// End ends the call span when the gateway never took it (a request refused
// before it: a credential, a body), marked with the answer's error class
// and public message when status is 400 or more, or as cancelled when the
// client went away (499). The message is always masked: the tenant's
// redaction setting is not read before the gateway takes the call. A nil
// Call, or one taken, is left alone.
func (c *Call) End(status int, class, message string) {
	if c == nil || c.taken {
		return
	}
	c.span.SetAttributes(semconv.GenAIOperationNameKey.String(c.operation))
	switch {
	case status == httpstatus.ClientClosed: // no failure of svc's, as the gateway marks it
		c.span.SetAttributes(semconv.ErrorTypeKey.String("cancelled"))
	case status >= 400:
		Fail(c.span, class, redact.String(message))
	}
	c.span.End()
}
