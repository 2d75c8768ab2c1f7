package learning

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/metrics/metricstest"
)

// retireStore keeps artifacts' states in memory.
type retireStore struct {
	Store
	arts map[string]synth.Artifact
}

func (s *retireStore) SetArtifactState(_ context.Context, _, id, state, reason string, _ time.Time) (synth.Artifact, string, error) {
	a := s.arts[id]
	previous := a.State
	a.State, a.StateReason = state, reason
	s.arts[id] = a
	return a, previous, nil
}

func (s *retireStore) Pattern(context.Context, string, string) (synth.Pattern, error) {
	return synth.Pattern{}, nil
}

func (s *retireStore) ListArtifacts(context.Context, string, string) ([]synth.Artifact, error) {
	return nil, nil
}

func TestShadowEvaluationsAndQuarantinesAreCounted(t *testing.T) {
	m := metrics.New(metrics.Options{})
	st := &retireStore{arts: map[string]synth.Artifact{
		"art_a": {ID: "art_a", TenantID: "t", State: synth.ArtifactPromoted},
		"art_b": {ID: "art_b", TenantID: "t", State: synth.ArtifactPromoted},
	}}
	s := New(Options{Store: st, Metrics: m})
	s.RecordShadow("t", "art_a", "run_1", synth.OutcomePass, "", "billing", "billing")
	s.RecordShadow("t", "art_a", "run_2", synth.OutcomeFail, "the live answer differs", "billing", "bug")
	s.RecordShadow("t", "art_a", "run_3", synth.OutcomeFail, "the live answer differs", "billing", "bug")
	s.RecordShadow("t", "art_a", "run_4", synth.OutcomeAbstain, "", "", "bug")
	assert.Equal(t, map[string]float64{"match": 1, "mismatch": 2, "abstain": 1},
		metricstest.Samples(t, m, "svc_artifact_shadow_evaluations_total"))

	ctx := context.Background()
	_, err := s.Rollback(ctx, "t", "art_b", "user:u")
	require.NoError(t, err)
	assert.Equal(t, 0.0, metricstest.Value(t, m.Quarantines), "a rollback is no quarantine")
	_, err = s.Quarantine(ctx, "t", "art_a", "user:u", "")
	require.NoError(t, err)
	assert.Equal(t, 1.0, metricstest.Value(t, m.Quarantines))
	_, err = s.Quarantine(ctx, "t", "art_a", "user:u", "again")
	require.NoError(t, err)
	assert.Equal(t, 1.0, metricstest.Value(t, m.Quarantines), "quarantining a quarantined artifact again is no new quarantine")
}

func (s *retireStore) SavePatterns(context.Context, string, []synth.Pattern) error { return nil }
