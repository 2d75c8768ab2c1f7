package ledger

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/coldbench"
)

// benchEvents are the events of a plain chat call, as the gateway builds
// them.
func benchEvents(at time.Time) []Event {
	return []Event{
		{Type: "request.received", At: at, Payload: json.RawMessage(`{"model":"gpt-4o-mini","stream":false,"messages":2,"tools":0,"mode":"optimize"}`)},
		{Type: "route.decided", At: at, Payload: json.RawMessage(`{"route":"live","reason":"no cached answer; called the provider","policy":"allow"}`)},
		{Type: "provider.completed", At: at, Payload: json.RawMessage(`{"provider":"openai","status":200,"promptTokens":24,"completionTokens":11,"costUsd":0.0000102,"latencyMs":10.9}`)},
	}
}

// benchRecorder is a recorder whose writer stores into a store that keeps
// nothing, closed when the benchmark ends, and the run the benchmarks
// record copies of.
func benchRecorder(b *testing.B) (*Recorder, *Run) {
	store := &flakyStore{writes: map[string]int{}}
	r, err := NewRecorder(context.Background(), store, b.TempDir(), hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	return r, sampleRecord("run_bench", json.RawMessage(`{"id":"chatcmpl-bench","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Benchmarks measure what matters, when they are honest."},"finish_reason":"stop"}]}`)).Run
}

// BenchmarkRecord is the recording step of the request path: chain a
// run's events (NewRecord) and append it to the journal (Record). The
// writer that stores the batch runs off the path, into a store that keeps
// nothing.
func BenchmarkRecord(b *testing.B) {
	r, base := benchRecorder(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		run := *base
		at := time.Now()
		if err := r.Record(context.Background(), NewRecord(&run, benchEvents(at), at)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewRecord is what building a run's record costs on the request
// path, without the journal's write.
func BenchmarkNewRecord(b *testing.B) {
	base := sampleRecord("run_bench", json.RawMessage(`{"id":"chatcmpl-bench","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Benchmarks measure what matters, when they are honest."},"finish_reason":"stop"}]}`)).Run
	b.ReportAllocs()
	for b.Loop() {
		run := *base
		at := time.Now()
		rec := NewRecord(&run, benchEvents(at), at)
		if _, err := rec.ExplanationJSON(); err != nil { // encoded once for the journal and the store
			b.Fatal(err)
		}
	}
}

// BenchmarkDigest is the run's digest alone: what binding every field into
// the chain adds to NewRecord.
func BenchmarkDigest(b *testing.B) {
	rec := sampleRecord("run_bench", json.RawMessage(`{"id":"chatcmpl-bench","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Benchmarks measure what matters, when they are honest."},"finish_reason":"stop"}]}`))
	explanation, err := rec.ExplanationJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Digest(rec.Run, explanation)
	}
}

// BenchmarkRecordParallel is Record under concurrent requests, as at a
// high request rate: each goroutine records runs as fast as it can, so the
// journal's writes meet. Runs that wait for a write under way are written
// together, in one write(2): writes/op says how many a run took.
func BenchmarkRecordParallel(b *testing.B) {
	r, base := benchRecorder(b)
	b.ReportAllocs()
	b.SetParallelism(8) // requests in flight per CPU
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			run := *base
			at := time.Now()
			if err := r.Record(context.Background(), NewRecord(&run, benchEvents(at), at)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	r.mu.Lock()
	r.acquire()
	writes := r.journal.writes
	r.release()
	r.mu.Unlock()
	b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
}

// appendingList stands for the gateway's attempts and candidates: a list
// of details that writes its own JSON.
type appendingList []appendingDetail

func (l appendingList) AppendJSON(b []byte) ([]byte, bool) {
	b = append(b, '[')
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = l[i].AppendJSON(b); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// BenchmarkNewRecordLive is NewRecord for a run whose explanation is as
// the gateway builds a live call's: its open fields hold details that
// write their own JSON (sampleRecord's cache detail is a map, which only
// json.Marshal encodes).
func BenchmarkNewRecordLive(b *testing.B) {
	base := *sampleRecord("run_bench", json.RawMessage(`{"id":"chatcmpl-bench","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Benchmarks measure what matters, when they are honest."},"finish_reason":"stop"}]}`)).Run
	base.Explanation = benchExplanation()
	b.ReportAllocs()
	for b.Loop() {
		run := base
		at := time.Now()
		rec := NewRecord(&run, benchEvents(at), at)
		if _, err := rec.ExplanationJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExplanationJSON is the encoding of a live call's explanation
// alone.
func BenchmarkExplanationJSON(b *testing.B) {
	run := &Run{Explanation: benchExplanation()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (&Record{Run: run}).ExplanationJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchExplanation is a live call's explanation as the gateway builds it.
func benchExplanation() RouteExplanation {
	return RouteExplanation{Route: RouteLive, Reason: "no cached answer or promoted artifact can serve this request",
		Rejected: []Alternative{{Route: RouteExactCache, Reason: "no cached answer for this request"},
			{Route: RouteArtifact, Reason: "no promoted artifact for this request's pattern"}},
		Policy: Verdict{Decision: "allow", Rules: []RuleResult{}}, Cache: &appendingDetail{Name: "exact_response", Value: 0},
		Provider: "openai", Attempts: appendingList{{Name: "openai", Value: 10.9}}, Candidates: appendingList{{Name: "openai"}}}
}

// BenchmarkRecordAfterIdle is Record alone, each call after the CPU idled
// for 10 ms, as a call at 100 requests a second finds it: the journal's
// write is the part of it an idle CPU makes dearer.
func BenchmarkRecordAfterIdle(b *testing.B) {
	r, base := benchRecorder(b)
	coldbench.Run(b, 10*time.Millisecond, func() {
		run := *base
		at := time.Now()
		if err := r.Record(context.Background(), NewRecord(&run, benchEvents(at), at)); err != nil {
			b.Fatal(err)
		}
	})
}
