package jobs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// Each attempt of a job is a span, the root of its own trace, named by
// the job's type, with the job's id, attempt and status after it; the
// handler runs under it.
func TestEachAttemptIsARootSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c := newClock()
	q := newQueue(t, storetest.Open(t), c, jobs.Options{Tracer: tp.Tracer("test")})
	var inner trace.SpanContext
	calls := 0
	q.Register("test.flaky", func(ctx context.Context, _ jobs.Job) error {
		inner = trace.SpanContextFromContext(ctx)
		calls++
		if calls == 1 {
			return errors.New("boom")
		}
		return nil
	})
	// A job queued under a request's span still starts a trace of its own.
	reqCtx, reqSpan := tp.Tracer("test").Start(context.Background(), "request")
	j, err := q.Enqueue(reqCtx, tenant.DefaultID, "test.flaky", nil)
	require.NoError(t, err)
	reqSpan.End()

	require.Equal(t, 1, runDue(t, q))
	c.Set(get(t, q, tenant.DefaultID, j.ID).RunAt)
	require.Equal(t, 1, runDue(t, q))

	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "job test.flaky" {
			spans = append(spans, s)
		}
	}
	require.Len(t, spans, 2)
	for i, s := range spans {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		assert.False(t, s.Parent().IsValid(), "attempt %d is a root span", i+1)
		assert.Equal(t, trace.SpanKindConsumer, s.SpanKind())
		assert.Equal(t, j.ID, attrs["svc.job.id"].AsString())
		assert.Equal(t, "test.flaky", attrs["svc.job.type"].AsString())
		assert.EqualValues(t, i+1, attrs["svc.job.attempt"].AsInt64())
		assert.Equal(t, tenant.DefaultID, attrs["svc.tenant.id"].AsString())
	}
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	assert.Equal(t, jobs.Queued, spanAttr(spans[0], "svc.job.status"))
	assert.Equal(t, codes.Unset, spans[1].Status().Code)
	assert.Equal(t, jobs.Succeeded, spanAttr(spans[1], "svc.job.status"))
	assert.Equal(t, spans[1].SpanContext().SpanID(), inner.SpanID(), "the handler runs under the attempt's span")
}

func spanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.AsString()
		}
	}
	return ""
}
