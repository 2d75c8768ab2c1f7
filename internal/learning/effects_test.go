package learning

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
)

// fakeEffects and fakeRuns answer from maps.
type fakeEffects map[string][]ledger.SideEffect

func (f fakeEffects) SideEffects(_ context.Context, _, runID string) ([]ledger.SideEffect, error) {
	return f[runID], nil
}

type fakeRuns map[string]ledger.Run

func (f fakeRuns) Run(_ context.Context, _, id string) (ledger.Run, error) { return f[id], nil }

// An evaluation suppresses what its run planned: the run's own records
// (not those an earlier evaluation made), else its answer's tool calls; a
// live evaluation suppresses nothing.
func TestSuppressEffects(t *testing.T) {
	at := time.Unix(1_800_000_000, 0).UTC()
	s := New(Options{
		Effects: fakeEffects{"run_traced": {
			{ID: "se_own", ToolName: "send_reply", Level: 2, Payload: json.RawMessage(`{"to":"a"}`), State: ledger.EffectExecuted, PlannedSeq: 4},
			{ID: "se_old", ToolName: "send_reply", Level: 2, State: ledger.EffectSuppressed, EvaluationID: "ev_old"},
		}},
		Runs: fakeRuns{
			"run_called": {Response: json.RawMessage(`{"choices":[{"message":{"tool_calls":[{"function":{"name":"refund","arguments":"{}"}}]}}]}`)},
			"run_text":   {Response: json.RawMessage(`{"choices":[{"message":{"content":"fine"}}]}`)},
		},
	})
	evals := []synth.Evaluation{
		{ID: "ev_1", Kind: synth.EvalReplay, RunID: "run_traced", CreatedAt: at},
		{ID: "ev_2", Kind: synth.EvalShadow, RunID: "run_called", CreatedAt: at},
		{ID: "ev_3", Kind: synth.EvalShadow, RunID: "run_text", CreatedAt: at},
		{ID: "ev_4", Kind: synth.EvalLive, RunID: "run_called", CreatedAt: at},
	}
	s.suppressEffects(context.Background(), "t_1", evals)

	require.Len(t, evals[0].Suppressed, 1, "the run's own record, not the earlier evaluation's")
	got := evals[0].Suppressed[0]
	assert.Equal(t, ledger.EffectSuppressed, got.State)
	assert.Equal(t, "ev_1", got.EvaluationID)
	assert.Equal(t, "run_traced", got.RunID)
	assert.Equal(t, "t_1", got.TenantID)
	assert.Equal(t, "send_reply", got.ToolName)
	assert.Equal(t, 2, got.Level)
	assert.JSONEq(t, `{"to":"a"}`, string(got.Payload))
	assert.Equal(t, 4, got.PlannedSeq)
	assert.Equal(t, at, got.CreatedAt)
	assert.NotEqual(t, "se_own", got.ID)

	require.Len(t, evals[1].Suppressed, 1, "the tool call of the answer")
	assert.Equal(t, "refund", evals[1].Suppressed[0].ToolName)
	assert.Equal(t, 3, evals[1].Suppressed[0].Level, "at the level the gateway governs an answer's tool calls")
	assert.Contains(t, evals[1].Suppressed[0].Reason, "shadow")

	assert.Empty(t, evals[2].Suppressed, "a text answer plans nothing")
	assert.Empty(t, evals[3].Suppressed, "live feedback re-enacts nothing")

	replayed := []synth.Evaluation{{ID: "ev_5", Kind: synth.EvalReplay, RunID: "run_called", CreatedAt: at}}
	s.suppressEffects(context.Background(), "t_1", replayed)
	assert.Empty(t, replayed[0].Suppressed, "a replay reads no answer: only text answers are replayed")

	s.suppressEffects(context.Background(), "t_1", evals)
	assert.Len(t, evals[0].Suppressed, 1, "made anew, not added to, when a failed flush tries again")
}
