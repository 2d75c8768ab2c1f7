package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

var benchKinds = []struct {
	label string
	words []string
}{
	{"billing", []string{"invoice", "charged", "refund", "payment", "card", "receipt", "price", "subscription"}},
	{"bug", []string{"crash", "error", "broken", "fails", "blank", "stack", "exception", "timeout"}},
	{"account", []string{"password", "locked", "login", "signin", "twofactor", "username", "access", "reset"}},
}

// triageRecord is a live run of the triage prompt whose answer follows the
// ticket's words, or (one in four) a one-off question with a free answer.
func triageRecord(tenantID string, rng *rand.Rand, at time.Time) *ledger.Record {
	var req, content string
	if rng.IntN(4) == 0 {
		req = fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Write a haiku about the number %d"}]}`, rng.IntN(1e9))
		content = fmt.Sprintf("A haiku %d about numbers and leaves and the sea", rng.IntN(1e9))
	} else {
		k := benchKinds[rng.IntN(len(benchKinds))]
		var words []string
		for range 6 {
			words = append(words, k.words[rng.IntN(len(k.words))])
		}
		words = append(words, fmt.Sprintf("ticket%d", rng.IntN(1e6)))
		user, _ := json.Marshal("Subject: " + words[0] + "\n\n" + strings.Join(words, " "))
		req = `{"model":"gpt-4o-mini","temperature":0,"messages":[{"role":"system","content":"Classify the ticket into one of: billing, bug, account."},{"role":"user","content":` + string(user) + `}]}`
		content = k.label
	}
	res, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion", "choices": []any{
		map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}}})
	run := &ledger.Run{
		ID: ids.Ordered("run", at), TenantID: tenantID, CreatedAt: at, Route: ledger.RouteLive, Status: ledger.StatusOK,
		HTTPStatus: 200, Model: "gpt-4o-mini", App: "triage", Mode: "optimize", Provider: "mock",
		PromptTokens: 60, CompletionTokens: 1, TotalTokens: 61, CostUSD: 0.00001, LatencyMS: 350,
		Explanation: ledger.RouteExplanation{Route: ledger.RouteLive, Reason: "r", Rejected: []ledger.Alternative{}, Policy: ledger.Verdict{Decision: "allow"}},
		Request:     json.RawMessage(req), Response: res,
	}
	return ledger.NewRecord(run, []ledger.Event{{Type: "request.received", Payload: json.RawMessage(`{}`)}}, at)
}

func seedTriage(tb testing.TB, s *store.Store, tenantID string, n int) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Unix(1_800_000_000, 0).UTC()
	for done := 0; done < n; {
		batch := make([]*ledger.Record, 0, 2000)
		for ; len(batch) < 2000 && done < n; done++ {
			batch = append(batch, triageRecord(tenantID, rng, at.Add(time.Duration(done)*time.Millisecond)))
		}
		require.NoError(tb, s.InsertRuns(context.Background(), batch))
	}
}

func TestLearningStore(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	seedTriage(t, s, tenant.DefaultID, 600)
	l := learning.New(learning.Options{Store: s})
	rep, err := l.Pass(ctx, tenant.DefaultID, learning.TriggerTick)
	require.NoError(t, err)
	assert.Equal(t, 600, rep.RunsScanned)
	assert.Equal(t, 1, rep.ArtifactsSynthesized, "%+v", rep.SynthesisReports)
	assert.Equal(t, 2, rep.Patterns, "the triage prompt and the free questions")

	ps, err := s.ListPatterns(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, synth.PatternShadow, ps[0].State, "the most optimizable first")
	assert.Equal(t, synth.PatternObserved, ps[1].State, "free text that never repeats is not stable")
	assert.InDelta(t, 0.5, ps[1].StabilityScore, 1e-9)
	arts, err := s.ListArtifacts(ctx, tenant.DefaultID, "")
	require.NoError(t, err)
	require.Len(t, arts, 1)
	a := arts[0]
	assert.Equal(t, synth.TypeClassifier, a.Type)
	evals, err := s.Evaluations(ctx, tenant.DefaultID, a.ID, 10000)
	require.NoError(t, err)
	assert.Len(t, evals, len(a.Provenance.HoldoutRunIDs))

	// Counters move with evaluations, in one transaction.
	after, err := s.AddEvaluations(ctx, tenant.DefaultID, a.ID, []synth.Evaluation{
		{ID: ids.New("ev"), ArtifactID: a.ID, Kind: synth.EvalShadow, RunID: "run_x", Outcome: synth.OutcomePass, CreatedAt: time.Now()},
	}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, a.ShadowPass+1, after.ShadowPass)
	assert.InDelta(t, a.Alpha+1, after.Alpha, 0)

	// A run's live verdict replaces its earlier one: rating one run many
	// times counts once, and changing the rating moves the counters.
	live := func(outcome string) synth.Artifact {
		got, err := s.AddEvaluations(ctx, tenant.DefaultID, a.ID, []synth.Evaluation{
			{ID: ids.New("ev"), ArtifactID: a.ID, Kind: synth.EvalLive, RunID: "run_rated", Outcome: outcome, CreatedAt: time.Now()},
		}, time.Now())
		require.NoError(t, err)
		return got
	}
	for range 5 {
		after = live(synth.OutcomePass)
	}
	assert.Equal(t, 1, after.LivePass, "five ratings of one run are one verdict")
	after = live(synth.OutcomeFail)
	assert.Equal(t, 0, after.LivePass)
	assert.Equal(t, 1, after.LiveFail)
	// Replaying the holdout again replaces its verdicts rather than adding.
	replayAgain := make([]synth.Evaluation, 0, len(evals))
	for _, e := range evals {
		e.ID = ids.New("ev")
		replayAgain = append(replayAgain, e)
	}
	again, err := s.AddEvaluations(ctx, tenant.DefaultID, a.ID, replayAgain, time.Now())
	require.NoError(t, err)
	assert.Equal(t, after.ReplayPass, again.ReplayPass)
	assert.Equal(t, after.ReplayFail, again.ReplayFail)

	// Another tenant sees nothing and changes nothing.
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	_, err = s.Pattern(ctx, other.ID, ps[0].ID)
	assert.True(t, errs.Is(err, errs.NotFound))
	_, err = s.Artifact(ctx, other.ID, a.ID)
	assert.True(t, errs.Is(err, errs.NotFound))
	_, _, err = s.SetArtifactState(ctx, other.ID, a.ID, synth.ArtifactRetired, "x", time.Now())
	assert.True(t, errs.Is(err, errs.NotFound))
	_, err = s.AddEvaluations(ctx, other.ID, a.ID, nil, time.Now())
	assert.True(t, errs.Is(err, errs.NotFound))
	hijack := ps[0]
	hijack.State = synth.PatternNegative
	require.NoError(t, s.SavePatterns(ctx, other.ID, []synth.Pattern{hijack}))
	mine, err := s.Pattern(ctx, tenant.DefaultID, ps[0].ID)
	require.NoError(t, err)
	assert.Equal(t, synth.PatternShadow, mine.State, "a foreign tenant cannot overwrite a pattern")
	theirs, err := s.ListPatterns(ctx, other.ID)
	require.NoError(t, err)
	assert.Empty(t, theirs)
	theirs, err = s.ListPatterns(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Len(t, theirs, 2)
	serving, err := s.ServingArtifacts(ctx)
	require.NoError(t, err)
	require.Len(t, serving, 1)
	assert.Equal(t, tenant.DefaultID, serving[0].Artifact.TenantID)
}

// BenchmarkLearningPass100k runs a learning pass over 100,000 runs (three
// in four of one triage pattern, the rest one-off questions): the scan,
// the scores, the synthesis of a classifier from the newest 5,000 runs of
// the pattern. peak-heap-MB is the largest live heap seen during the pass.
func BenchmarkLearningPass100k(b *testing.B) {
	ctx := context.Background()
	s := storetest.Open(b)
	seedTriage(b, s, tenant.DefaultID, 100_000)
	b.ResetTimer()
	var peak atomic.Uint64
	for range b.N {
		b.StopTimer()
		_, err := s.DB().Exec(`DELETE FROM artifacts; DELETE FROM patterns; DELETE FROM learning_reports;`)
		require.NoError(b, err)
		runtime.GC()
		l := learning.New(learning.Options{Store: s})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc)
				}
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
		b.StartTimer()
		rep, err := l.Pass(ctx, tenant.DefaultID, learning.TriggerTick)
		b.StopTimer()
		close(stop)
		wg.Wait()
		require.NoError(b, err)
		require.Equal(b, 100_000, rep.RunsScanned)
		require.Equal(b, 1, rep.ArtifactsSynthesized)
		b.StartTimer()
	}
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
}
