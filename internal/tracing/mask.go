package tracing

import (
	"context"

	"github.com/svc-gateway/svc/internal/redact"
)

type maskingKey struct{}

// WithMasking marks ctx's call as one whose tenant has redaction on: the
// error texts its spans tell are masked as its stored run is.
func WithMasking(ctx context.Context) context.Context {
	return context.WithValue(ctx, maskingKey{}, true)
}

// Masking says whether ctx's call masks what its spans tell.
func Masking(ctx context.Context) bool {
	on, _ := ctx.Value(maskingKey{}).(bool)
	return on
}

// Describe is text as a span of ctx's call may tell it: masked when the
// call masks.
func Describe(ctx context.Context, text string) string {
	if text != "" && Masking(ctx) {
		return redact.String(text)
	}
	return text
}
