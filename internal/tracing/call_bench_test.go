package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/svc-gateway/svc/internal/cputime"
)

// BenchmarkCallSpans is the eight spans a traced chat call makes, and
// nothing else: the OpenTelemetry SDK's spans through svc's batch
// processor and OTLP/HTTP exporter, to a collector that keeps nothing,
// the export's share and the garbage collector's counted (cpu-ns/op). It
// is the floor under what tracing adds to a call: the SDK's own work for
// the spans the call must have.
func BenchmarkCallSpans(b *testing.B) {
	collector := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	b.Cleanup(collector.Close)
	// A queue that holds the whole run: a span dropped would cost nothing.
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_BSP_MAX_QUEUE_SIZE": "1000000"}
	tr, err := New(context.Background(), Options{On: true, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		b.Fatal(err)
	}
	tracer := tr.Tracer()
	b.ReportAllocs()
	cpu := cputime.Start()
	for b.Loop() {
		CallSpans(tracer)
	}
	if err := tr.Shutdown(context.Background()); err != nil { // exports what is left
		b.Fatal(err)
	}
	cpu.Report(b)
}
