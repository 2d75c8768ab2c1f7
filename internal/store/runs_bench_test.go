package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/svc-gateway/svc/internal/cputime"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// benchRun is a run the way a plain chat call records it: the request and
// answer of a short exchange and its three events.
func benchRun(at time.Time) *ledger.Record {
	run := &ledger.Run{
		ID: ids.Ordered("run", at), TenantID: tenant.DefaultID, CreatedAt: at, Route: "live", Status: "ok", HTTPStatus: 200,
		Model: "gpt-4o-mini", Mode: "optimize", Provider: "openai",
		PromptTokens: 24, CompletionTokens: 11, TotalTokens: 35, CostUSD: 0.0000102, LatencyMS: 10.9,
		Explanation: ledger.RouteExplanation{Route: "live", Reason: "no cached answer; called the provider",
			Rejected: []ledger.Alternative{{Route: "cache", Reason: "no entry"}}, Policy: ledger.Verdict{Decision: "allow"}},
		Request: json.RawMessage(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},` +
			`{"role":"user","content":"Write one sentence about benchmarks (123456)."}]}`),
		Response: json.RawMessage(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Benchmarks measure what matters, when they are honest."},` +
			`"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":11,"total_tokens":35}}`),
	}
	events := []ledger.Event{
		{Type: "request.received", At: at, Payload: json.RawMessage(`{"model":"gpt-4o-mini","stream":false,"messages":2,"tools":0,"mode":"optimize"}`)},
		{Type: "route.decided", At: at, Payload: json.RawMessage(`{"route":"live","reason":"no cached answer; called the provider","policy":"allow"}`)},
		{Type: "provider.completed", At: at, Payload: json.RawMessage(`{"provider":"openai","status":200,"promptTokens":24,"completionTokens":11,"costUsd":0.0000102,"latencyMs":10.9}`)},
	}
	return ledger.NewRecord(run, events, at)
}

// BenchmarkInsertRuns stores runs in batches of each size, from one (what a
// writer that stored at once would see at low rates) to 256; the figure is
// per run. The records are built before the timer starts: the request path
// builds them, not the store.
func BenchmarkInsertRuns(b *testing.B) {
	for _, batch := range []int{1, 4, 8, 16, 32, 64, 128, 256} {
		b.Run(fmt.Sprint(batch), func(b *testing.B) { benchInsertRuns(b, batch) })
	}
}

func benchInsertRuns(b *testing.B, batch int) {
	ctx := context.Background()
	s := storetest.Open(b)
	recs := make([]*ledger.Record, b.N)
	for i := range recs {
		recs[i] = benchRun(time.Now())
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Start()
	for i := 0; i < b.N; i += batch {
		if err := s.InsertRuns(ctx, recs[i:min(i+batch, b.N)]); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b)
}

// BenchmarkSearchRuns is a run search that matches nothing, its worst case:
// it reads the text of every run in its window. Past ledger.SearchWindow
// runs the cost stays flat however many the tenant has.
func BenchmarkSearchRuns(b *testing.B) {
	for _, n := range []int{ledger.SearchWindow / 2, ledger.SearchWindow + ledger.SearchWindow/5, 2 * ledger.SearchWindow} {
		b.Run(fmt.Sprintf("%d runs", n), func(b *testing.B) {
			ctx := context.Background()
			s := storetest.Open(b)
			at := time.UnixMilli(1_700_000_000_000)
			for i := 0; i < n; i += 256 {
				batch := make([]*ledger.Record, 0, 256)
				for j := i; j < min(n, i+256); j++ {
					batch = append(batch, benchRun(at.Add(time.Duration(j)*time.Millisecond)))
				}
				if err := s.InsertRuns(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if _, total, err := s.ListRuns(ctx, tenant.DefaultID, ledger.Filter{Q: "no such text", Limit: 50}); err != nil || total != 0 {
					b.Fatal(total, err)
				}
			}
		})
	}
}

// BenchmarkInsertRunsSpend is BenchmarkInsertRuns with runs that move
// every scope's counters (an app of 4, a key of 8, an agent for half of
// them, a subject of 64: 15 counters a run, fewer rows a batch), beside the
// same runs blocked, which move none: the cost of the counters is the gap.
func BenchmarkInsertRunsSpend(b *testing.B) {
	for _, counted := range []bool{false, true} {
		name := "uncounted"
		if counted {
			name = "counted"
		}
		for _, batch := range []int{1, 32, 256} {
			b.Run(fmt.Sprintf("%s/%d", name, batch), func(b *testing.B) {
				ctx := context.Background()
				s := storetest.Open(b)
				recs := make([]*ledger.Record, b.N)
				for i := range recs {
					rec := benchRun(time.Now())
					r := rec.Run
					r.App, r.KeyID, r.Subject = fmt.Sprint("app-", i%4), fmt.Sprint("key_", i%8), fmt.Sprint("user-", i%64)
					if i%2 == 0 {
						r.Agent = "bot"
					}
					if !counted {
						r.Route = ledger.RouteBlocked
					}
					recs[i] = ledger.NewRecord(r, rec.Events, r.CreatedAt)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cputime.Start()
				for i := 0; i < b.N; i += batch {
					if err := s.InsertRuns(ctx, recs[i:min(i+batch, b.N)]); err != nil {
						b.Fatal(err)
					}
				}
				cpu.Report(b)
			})
		}
	}
}
