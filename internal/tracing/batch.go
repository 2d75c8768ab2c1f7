package tracing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batchOptions are the batch span processor's settings, read from the
// OTEL_BSP_* variables with the SDK's defaults.
type batchOptions struct {
	delay   time.Duration // between exports of a batch that is not full
	timeout time.Duration // an export's; 0 is none
	queue   int           // spans waiting at most; more are dropped
	batch   int           // spans an export sends at most
}

func readBatchOptions(getenv func(string) string, warn func(error)) batchOptions {
	ms := func(name string, def int) int {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			warn(errors.New(name + ": " + err.Error()))
			return def
		}
		return n
	}
	o := batchOptions{
		delay:   time.Duration(ms("OTEL_BSP_SCHEDULE_DELAY", 5000)) * time.Millisecond,
		timeout: time.Duration(ms("OTEL_BSP_EXPORT_TIMEOUT", 30000)) * time.Millisecond,
		queue:   ms("OTEL_BSP_MAX_QUEUE_SIZE", sdktrace.DefaultMaxQueueSize),
		batch:   ms("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", sdktrace.DefaultMaxExportBatchSize),
	}
	if o.delay <= 0 {
		o.delay = sdktrace.DefaultScheduleDelay * time.Millisecond
	}
	if o.queue <= 0 {
		o.queue = sdktrace.DefaultMaxQueueSize
	}
	if o.batch <= 0 || o.batch > o.queue {
		o.batch = min(sdktrace.DefaultMaxExportBatchSize, o.queue)
	}
	return o
}

// batcher is svc's batch span processor, the SDK's with one difference: a
// span that ends is appended to the queue under a lock, and the exporting
// goroutine is woken once a batch is full (or when the delay has passed),
// where the SDK's hands every span to that goroutine through a channel,
// waking it, and the scheduler, once a span. Sampled spans only; a full
// queue drops spans rather than slowing calls.
type batcher struct {
	exporter sdktrace.SpanExporter
	o        batchOptions
	handle   func(error) // told of failed exports and of spans dropped

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan // spans that ended, not yet taken to export
	dropped atomic.Int64

	exporting sync.Mutex              // one export at a time
	spare     []sdktrace.ReadOnlySpan // the queue's other slice, under exporting

	full     chan struct{} // a batch is waiting
	stop     chan struct{}
	stopped  atomic.Bool
	done     chan struct{} // the loop has returned
	stopOnce sync.Once
}

// newBatcher starts a processor that exports to exporter; handle (nil:
// otel.Handle) is told of what could not be exported.
func newBatcher(exporter sdktrace.SpanExporter, o batchOptions, handle func(error)) *batcher {
	if handle == nil {
		handle = otel.Handle
	}
	b := &batcher{exporter: exporter, o: o, handle: handle,
		queue: make([]sdktrace.ReadOnlySpan, 0, o.queue), spare: make([]sdktrace.ReadOnlySpan, 0, o.queue),
		full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// OnStart does nothing: spans are exported once they end.
func (*batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span, and wakes the exporter once a batch is
// full.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if b.stopped.Load() || !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.queue) >= b.o.queue {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	b.queue = append(b.queue, s)
	n := len(b.queue)
	b.mu.Unlock()
	if n == b.o.batch {
		select {
		case b.full <- struct{}{}:
		default: // already woken
		}
	}
}

// loop exports what is queued whenever a batch is full or the delay has
// passed since the last export.
func (b *batcher) loop() {
	defer close(b.done)
	t := time.NewTimer(b.o.delay)
	defer t.Stop()
	for {
		all := false
		select {
		case <-b.stop:
			return
		case <-t.C:
			all = true
		case <-b.full:
		}
		if err := b.export(context.Background(), all); err != nil {
			b.handle(fmt.Errorf("traces not exported: %w", err))
		}
		b.reportDrops()
		t.Reset(b.o.delay)
	}
}

// export sends the spans queued, a batch at a time, each with the export
// timeout: all of them, or only the full batches (the rest waits to fill
// one, so that a batch that filled while another was sent does not leave
// as two).
func (b *batcher) export(ctx context.Context, all bool) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	b.mu.Lock()
	taken := b.queue
	if !all {
		rest := len(taken) % b.o.batch
		b.queue = append(b.spare[:0], taken[len(taken)-rest:]...)
		taken = taken[:len(taken)-rest]
	} else {
		b.queue = b.spare[:0]
	}
	b.mu.Unlock()
	var errs []error
	for i := 0; i < len(taken) && ctx.Err() == nil; i += b.o.batch {
		if err := b.exportBatch(ctx, taken[i:min(i+b.o.batch, len(taken))]); err != nil {
			errs = append(errs, err)
		}
	}
	clear(taken) // the spans are garbage once sent (or given up)
	b.spare = taken[:0]
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

func (b *batcher) exportBatch(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if b.o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, b.o.timeout, errors.New("processor export timeout"))
		defer cancel()
	}
	return b.exporter.ExportSpans(ctx, spans)
}

// reportDrops tells handle how many spans a full queue dropped since it
// last did, so that an operator learns the queue is too small (or the
// collector too slow) rather than finding traces with holes.
func (b *batcher) reportDrops() {
	if n := b.dropped.Swap(0); n > 0 {
		b.handle(fmt.Errorf("traces not exported: %d spans dropped: the queue of %d spans waiting for export was full (OTEL_BSP_MAX_QUEUE_SIZE)", n, b.o.queue))
	}
}

// ForceFlush exports every span queued.
func (b *batcher) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.stopped.Load() {
		return nil
	}
	return b.export(ctx, true)
}

// Shutdown exports what is queued and stops the exporter; spans that end
// afterwards are dropped. When ctx ends first, while a batch is being
// exported, the exporter is stopped all the same, which cancels that
// export rather than leave it running after Shutdown returned.
func (b *batcher) Shutdown(ctx context.Context) error {
	var err error
	b.stopOnce.Do(func() {
		b.stopped.Store(true)
		close(b.stop)
		select {
		case <-b.done:
			err = errors.Join(b.export(ctx, true), b.exporter.Shutdown(ctx))
			b.reportDrops()
		case <-ctx.Done():
			err = ctx.Err()
			_ = b.exporter.Shutdown(ctx)
		}
	})
	return err
}
