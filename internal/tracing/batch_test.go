package tracing

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// kept is an exporter that keeps the batches it is given.
type kept struct {
	mu       sync.Mutex
	batches  [][]string
	shutdown bool
	block    chan struct{} // when set, an export waits on it
}

func (k *kept) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if k.block != nil {
		select {
		case <-k.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	k.mu.Lock()
	k.batches = append(k.batches, names)
	k.mu.Unlock()
	return nil
}

func (k *kept) Shutdown(context.Context) error {
	k.mu.Lock()
	k.shutdown = true
	k.mu.Unlock()
	return nil
}

func (k *kept) sizes() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var n []int
	for _, b := range k.batches {
		n = append(n, len(b))
	}
	return n
}

// The OTEL_BSP_* variables set the processor as they set the SDK's.
func TestBatchOptions(t *testing.T) {
	o := readBatchOptions(vars(nil), func(err error) { t.Error(err) })
	assert.Equal(t, batchOptions{delay: 5 * time.Second, timeout: 30 * time.Second, queue: 2048, batch: 512}, o)
	o = readBatchOptions(vars(map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BSP_EXPORT_TIMEOUT": "0",
		"OTEL_BSP_MAX_QUEUE_SIZE": "300", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1000"}), func(err error) { t.Error(err) })
	assert.Equal(t, batchOptions{delay: 100 * time.Millisecond, timeout: 0, queue: 300, batch: 300}, o, "a batch is at most the queue")
	var warned int
	o = readBatchOptions(vars(map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "soon", "OTEL_BSP_MAX_QUEUE_SIZE": "-1"}), func(error) { warned++ })
	assert.Equal(t, batchOptions{delay: 5 * time.Second, timeout: 30 * time.Second, queue: 2048, batch: 512}, o)
	assert.Equal(t, 1, warned)
}

// provider is a tracer provider whose spans go through a batcher to k.
func provider(t *testing.T, k *kept, o batchOptions) (*sdktrace.TracerProvider, *batcher) {
	b := newBatcher(k, o, nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, b
}

func spans(tp *sdktrace.TracerProvider, n int, opts ...trace.SpanStartOption) {
	for range n {
		_, s := tp.Tracer(Name).Start(context.Background(), "s", opts...)
		s.End()
	}
}

// A full batch is exported at once, without waiting for the delay; the
// spans that fill no batch wait for the next one, or a flush.
func TestBatcherExportsAFullBatch(t *testing.T) {
	k := &kept{block: make(chan struct{})}
	tp, b := provider(t, k, batchOptions{delay: time.Hour, queue: 100, batch: 10})
	var unblock sync.Once
	t.Cleanup(func() { unblock.Do(func() { close(k.block) }) })
	spans(tp, 10) // a batch: the loop takes it and waits on the exporter
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 0 }, 10*time.Second, time.Millisecond)
	spans(tp, 25) // two batches and five while it waits
	unblock.Do(func() { close(k.block) })
	require.Eventually(t, func() bool { return len(k.sizes()) == 3 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []int{10, 10, 10}, k.sizes())
	b.mu.Lock()
	assert.Len(t, b.queue, 5, "the five wait in the queue")
	b.mu.Unlock()
	require.NoError(t, tp.ForceFlush(context.Background()))
	assert.Equal(t, []int{10, 10, 10, 5}, k.sizes())
}

// Spans that fill no batch leave when the delay has passed.
func TestBatcherExportsAfterTheDelay(t *testing.T) {
	k := &kept{}
	tp, _ := provider(t, k, batchOptions{delay: 20 * time.Millisecond, queue: 100, batch: 10})
	spans(tp, 3)
	require.Eventually(t, func() bool { return len(k.sizes()) == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []int{3}, k.sizes())
}

// A full queue drops spans rather than waiting; spans that are not
// sampled are not queued.
func TestBatcherDropsWhenFull(t *testing.T) {
	k := &kept{block: make(chan struct{})}
	tp, b := provider(t, k, batchOptions{delay: time.Hour, queue: 4, batch: 2})
	var unblock sync.Once
	// Registered after the provider's, so run before its shutdown.
	t.Cleanup(func() { unblock.Do(func() { close(k.block) }) })
	spans(tp, 2) // a batch: the loop takes it, and waits on the exporter
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 0 }, 10*time.Second, time.Millisecond)
	spans(tp, 6)
	assert.Equal(t, int64(2), b.dropped.Load())
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b), sdktrace.WithSampler(sdktrace.NeverSample()))
	spans(unsampled, 1)
	unblock.Do(func() { close(k.block) })
	require.NoError(t, tp.ForceFlush(context.Background()))
	assert.Equal(t, []int{2, 2, 2}, k.sizes())
}

// Spans a full queue dropped are told to the handler once the export
// that was under way ends, counted since the last report.
func TestBatcherReportsDroppedSpans(t *testing.T) {
	k := &kept{block: make(chan struct{})}
	var (
		mu       sync.Mutex
		reported []string
	)
	b := newBatcher(k, batchOptions{delay: time.Hour, queue: 4, batch: 2}, func(err error) {
		mu.Lock()
		reported = append(reported, err.Error())
		mu.Unlock()
	})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	var unblock sync.Once
	t.Cleanup(func() { unblock.Do(func() { close(k.block) }); _ = tp.Shutdown(context.Background()) })
	spans(tp, 2) // a batch: the loop takes it, and waits on the exporter
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 0 }, 10*time.Second, time.Millisecond)
	spans(tp, 7) // 4 queued, 3 dropped
	unblock.Do(func() { close(k.block) })
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(reported) == 1 }, 10*time.Second, time.Millisecond)
	mu.Lock()
	assert.Equal(t, "traces not exported: 3 spans dropped: the queue of 4 spans waiting for export was full (OTEL_BSP_MAX_QUEUE_SIZE)", reported[0])
	mu.Unlock()
	assert.Zero(t, b.dropped.Load(), "counted from the report on")
}

// Shutdown exports what is queued and stops the exporter; nothing is
// queued after it.
func TestBatcherShutdown(t *testing.T) {
	k := &kept{}
	tp, b := provider(t, k, batchOptions{delay: time.Hour, queue: 100, batch: 10})
	spans(tp, 3)
	require.NoError(t, tp.Shutdown(context.Background()))
	assert.Equal(t, []int{3}, k.sizes())
	assert.True(t, k.shutdown)
	b.OnEnd(tracetestSpan())
	assert.Empty(t, b.queue)
	assert.NoError(t, b.ForceFlush(context.Background()))
}

// A shutdown whose context ends while a batch is being exported still
// stops the exporter, which cancels that export, rather than leave it
// running after the shutdown returned.
func TestBatcherShutdownThatTimesOutStopsTheExporter(t *testing.T) {
	k := &kept{block: make(chan struct{})}
	var unblock sync.Once
	t.Cleanup(func() { unblock.Do(func() { close(k.block) }) })
	b := newBatcher(k, batchOptions{delay: time.Hour, queue: 10, batch: 1}, nil)
	b.OnEnd(tracetestSpan()) // a batch: the loop takes it and waits on the exporter
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 0 }, 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, b.Shutdown(ctx), context.Canceled)
	k.mu.Lock()
	defer k.mu.Unlock()
	assert.True(t, k.shutdown)
}

// An export that outlasts the export timeout is cancelled.
func TestBatcherExportTimeout(t *testing.T) {
	k := &kept{block: make(chan struct{})}
	_, b := provider(t, k, batchOptions{delay: time.Hour, timeout: time.Millisecond, queue: 10, batch: 10})
	b.OnEnd(tracetestSpan())
	err := b.ForceFlush(context.Background())
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}

// tracetestSpan is a sampled span that ended.
func tracetestSpan() sdktrace.ReadOnlySpan {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	return tracetest.SpanStub{Name: "s", SpanContext: sc}.Snapshot()
}
