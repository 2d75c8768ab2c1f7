package learning

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/learning/synth"
)

// shadowStore stores shadow evidence in memory; reading an artifact's
// evaluations fails for badEvals, storing them for badStore.
type shadowStore struct {
	Store
	arts     map[string]synth.Artifact
	stored   map[string][]synth.Evaluation
	badEvals string
	badStore string
	checks   map[string]int // quarantine checks made, by artifact
}

func (s *shadowStore) AddEvaluations(_ context.Context, _, id string, evals []synth.Evaluation, _ time.Time) (synth.Artifact, error) {
	if id == s.badStore {
		return synth.Artifact{}, errors.New("disk full")
	}
	a, ok := s.arts[id]
	if !ok {
		return synth.Artifact{}, errs.NotFoundf("artifact not found")
	}
	for _, e := range evals {
		a.Count(e.Kind, e.Outcome)
	}
	s.arts[id] = a
	s.stored[id] = append(s.stored[id], evals...)
	return a, nil
}

func (s *shadowStore) Artifact(_ context.Context, _, id string) (synth.Artifact, error) {
	a, ok := s.arts[id]
	if !ok {
		return synth.Artifact{}, errs.NotFoundf("artifact not found")
	}
	return a, nil
}

func (s *shadowStore) Evaluations(_ context.Context, _, id string, _ int) ([]synth.Evaluation, error) {
	s.checks[id]++
	if id == s.badEvals {
		return nil, errors.New("database is locked")
	}
	return s.stored[id], nil
}

// One artifact's failure does not keep the others' evidence from being
// stored; what failed is tried again at the next flush; a tenant is told
// of its own failures only; evidence of an artifact that is gone goes.
func TestFlushShadowStoresTheOthersAndRetriesAFailure(t *testing.T) {
	st := &shadowStore{
		arts: map[string]synth.Artifact{
			"art_promoted": {ID: "art_promoted", TenantID: "t", State: synth.ArtifactPromoted, ReplayPass: 100},
			"art_lost":     {ID: "art_lost", TenantID: "t", State: synth.ArtifactShadow},
			"art_shadow":   {ID: "art_shadow", TenantID: "t", State: synth.ArtifactShadow},
			"art_other":    {ID: "art_other", TenantID: "u", State: synth.ArtifactShadow},
		},
		stored:   map[string][]synth.Evaluation{},
		checks:   map[string]int{},
		badEvals: "art_promoted",
		badStore: "art_lost",
	}
	s := New(Options{Store: st})
	// The failing artifacts come first: the ones after them are stored all
	// the same.
	s.RecordShadow("t", "art_promoted", "run_1", synth.OutcomePass, "", "billing", "billing")
	s.RecordShadow("t", "art_lost", "run_2", synth.OutcomePass, "", "billing", "billing")
	s.RecordShadow("t", "art_shadow", "run_3", synth.OutcomeFail, "the live answer differs", "billing", "bug")
	s.RecordShadow("t", "art_shadow", "run_4", synth.OutcomePass, "", "bug", "bug")
	s.RecordShadow("u", "art_other", "run_5", synth.OutcomePass, "", "bug", "bug")
	s.RecordShadow("t", "art_deleted", "run_6", synth.OutcomePass, "", "bug", "bug")

	ctx := context.Background()
	require.NoError(t, s.flushShadowFor(ctx, "u"), "another tenant's failures are not this tenant's")
	assert.Len(t, st.stored["art_promoted"], 1)
	assert.Len(t, st.stored["art_shadow"], 2, "one artifact's failure does not drop the others' evidence")
	assert.Len(t, st.stored["art_other"], 1)
	assert.Equal(t, 1, st.arts["art_shadow"].ShadowPass)
	assert.Equal(t, 1, st.arts["art_shadow"].ShadowFail)

	err := s.flushShadowFor(ctx, "t")
	require.Error(t, err, "what failed is tried again, and reported to its tenant")
	assert.ErrorContains(t, err, "checking artifact art_promoted for quarantine: database is locked")
	assert.ErrorContains(t, err, "storing the shadow evaluations of artifact art_lost: disk full")
	assert.Equal(t, 2, st.checks["art_promoted"], "the failed quarantine check is made again")
	assert.Len(t, st.stored["art_promoted"], 1, "its stored evidence is not stored twice")

	st.badEvals, st.badStore = "", ""
	require.NoError(t, s.FlushShadow(ctx))
	assert.Len(t, st.stored["art_lost"], 1, "evidence a failed store kept is stored once the store is back")
	assert.Equal(t, 3, st.checks["art_promoted"])
	assert.Empty(t, st.stored["art_deleted"], "evidence of an artifact that is gone is dropped")
	require.NoError(t, s.FlushShadow(ctx))
	assert.Equal(t, 3, st.checks["art_promoted"], "nothing is left pending once it succeeded")
	assert.Empty(t, s.shadow.pending, "nothing is kept, the evidence of the artifact that is gone included")
	assert.Empty(t, s.shadow.recheck)
}
