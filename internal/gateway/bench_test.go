package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/gateway"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/internal/spend/spendtest"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// discard records nothing.
type discard struct{}

func (discard) Record(context.Context, *ledger.Record) error { return nil }

// instant answers at once.
type instant struct{}

var instantBody = []byte(answer)

func (instant) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	return pluginapi.ChatResponse{Body: instantBody, Usage: pluginapi.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}, nil
}

func (instant) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}

func (instant) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

// BenchmarkCompleteFromAFile is a call through the gateway to one provider
// as a providers file declares it (a timeout, a breaker, three attempts).
func BenchmarkCompleteFromAFile(b *testing.B) {
	set := &providers.Set{Providers: []*providers.Provider{{Name: "a", Plugin: "openai", Impl: instant{}, Timeout: providers.DefaultTimeout,
		Breaker: providers.BreakerConfig{Failures: 5, Cooldown: time.Second}, Fingerprint: "a"}}, Retries: providers.Retries{MaxAttempts: 3}}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: discard{},
		Prices: pricing.New(map[string]pricing.Price{model: {Input: 1, Output: 2}})})
	req, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	id := &auth.Identity{TenantID: "t", Mode: auth.Observe, KeyID: "k"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gw.Complete(ctx, id, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompleteTraced is BenchmarkCompleteFromAFile under a sampled
// span, as svc runs with traces exported: the call's span and its
// children, through a batch processor to an exporter that drops them.
func BenchmarkCompleteTraced(b *testing.B) {
	set := &providers.Set{Providers: []*providers.Provider{{Name: "a", Plugin: "openai", Impl: instant{}, Timeout: providers.DefaultTimeout,
		Breaker: providers.BreakerConfig{Failures: 5, Cooldown: time.Second}, Fingerprint: "a"}}, Retries: providers.Retries{MaxAttempts: 3}}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: discard{},
		Prices: pricing.New(map[string]pricing.Price{model: {Input: 1, Output: 2}})})
	req, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(dropSpans{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	id := &auth.Identity{TenantID: "t", Mode: auth.Observe, KeyID: "k"}
	tracer := tp.Tracer("bench")
	b.ReportAllocs()
	for b.Loop() {
		ctx, span := tracer.Start(context.Background(), "request")
		if _, err := gw.Complete(ctx, id, req); err != nil {
			b.Fatal(err)
		}
		span.End()
	}
}

// dropSpans is an exporter that keeps nothing.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkCompleteGoverned is BenchmarkCompleteFromAFile with a chat
// rule in force that matches nothing and reads no spend, and no budgets:
// what policies cost a call that spend control does not concern.
func BenchmarkCompleteGoverned(b *testing.B) { benchmarkGoverned(b, nil, nil) }

// BenchmarkCompleteGovernedWithSpend is BenchmarkCompleteGoverned with a
// spend tracker that costs nothing: the gateway's own part of the
// estimate (a chat rule may read it) and of counting the run.
func BenchmarkCompleteGovernedWithSpend(b *testing.B) { benchmarkGoverned(b, freeSpend{}, nil) }

// BenchmarkCompleteUnderABudget is BenchmarkCompleteGoverned for a tenant
// with a hard budget it never reaches: the real tracker admits each call
// on its counters (on SQLite's terms: no store read once they are known)
// and counts its run, and the budget's rule joins the evaluation.
func BenchmarkCompleteUnderABudget(b *testing.B) {
	st := spendtest.NewStore()
	limit := 1e9
	if err := st.ReplaceBudgets(context.Background(), "t", []spend.Budget{{ID: "day", Scope: spend.Tenant, Window: spend.Day,
		Kind: spend.Hard, LimitUSD: &limit}}); err != nil {
		b.Fatal(err)
	}
	budgets := spend.NewBudgets(spend.BudgetsOptions{Store: st})
	benchmarkGoverned(b, spend.NewTracker(spend.TrackerOptions{Store: st, Budgets: budgets, Replica: "r"}), budgets)
}

// freeSpend admits every call and counts nothing.
type freeSpend struct{}

func (freeSpend) Admit(_ context.Context, _ spend.Who, _ spend.Amount, decide func(policy.Spend) (bool, error)) (*spend.Reservation, error) {
	_, err := decide(policy.Spend{})
	return nil, err
}
func (freeSpend) Recorded(*ledger.Run, *spend.Reservation) {}
func (freeSpend) Estimate(_ string, _ int, _ int64, cost func(int64, int64) (float64, bool)) spend.Amount {
	usd, _ := cost(100, 100)
	return spend.Amount{USD: usd, Tokens: 200, Requests: 1}
}

func benchmarkGoverned(b *testing.B, tracker gateway.Spend, budgets governance.Budgets) {
	dir := b.TempDir()
	rules := "policies:\n  - id: no-secrets\n    target: chat\n    when: request.messages.exists(m, m.content.contains(\"sk-\"))\n    effect: deny\n    reason: no keys\n"
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(rules), 0o600); err != nil {
		b.Fatal(err)
	}
	engine, err := policy.NewEngine(dir)
	if err != nil {
		b.Fatal(err)
	}
	set := &providers.Set{Providers: []*providers.Provider{{Name: "a", Plugin: "openai", Impl: instant{}, Timeout: providers.DefaultTimeout,
		Breaker: providers.BreakerConfig{Failures: 5, Cooldown: time.Second}, Fingerprint: "a"}}, Retries: providers.Retries{MaxAttempts: 3}}
	gw := gateway.New(gateway.Options{Router: providers.NewRouter(set, nil), Recorder: discard{},
		Prices:   pricing.New(map[string]pricing.Price{model: {Input: 1, Output: 2}}),
		Governor: governance.New(governance.Options{Policies: engine, Budgets: budgets}), Spend: tracker})
	req, err := gateway.ParseRequest([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	id := &auth.Identity{TenantID: "t", Mode: auth.Optimize, KeyID: "k"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gw.Complete(ctx, id, req); err != nil {
			b.Fatal(err)
		}
	}
}
