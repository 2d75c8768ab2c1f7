package learning

import (
	"context"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
)

// ReplayResult is what a replay found.
type ReplayResult struct {
	Artifact    synth.Artifact     `json:"artifact"`
	Evaluations []synth.Evaluation `json:"evaluations"`
	Passed      int                `json:"passed"`
	Failed      int                `json:"failed"`
	Abstained   int                `json:"abstained"`
}

// Replay re-runs the artifact against recorded runs (its holdout runs when
// runIDs is empty) and records the evaluations. Replays call no provider
// and no tool: their side effects are suppressed by construction.
func (s *Service) Replay(ctx context.Context, tenantID, id string, runIDs []string) (ReplayResult, error) {
	a, err := s.o.Store.Artifact(ctx, tenantID, id)
	if err != nil {
		return ReplayResult{}, err
	}
	if len(runIDs) == 0 {
		runIDs = a.Provenance.HoldoutRunIDs
	}
	if len(runIDs) > 10000 {
		return ReplayResult{}, errs.Invalidf("runIds", "at most 10000 runs are replayed at once")
	}
	ans, err := synth.Compile(a.Type, a.Representation)
	if err != nil {
		return ReplayResult{}, errs.Wrap(err, errs.Internal, "internal", "the artifact cannot be read")
	}
	if err := s.sync(ctx, tenantID); err != nil {
		return ReplayResult{}, err
	}
	runs, err := s.o.Store.LearningRuns(ctx, tenantID, runIDs)
	if err != nil {
		return ReplayResult{}, err
	}
	fb, err := s.o.Store.Feedback(ctx, tenantID)
	if err != nil {
		return ReplayResult{}, err
	}
	p, err := s.o.Store.Pattern(ctx, tenantID, a.PatternID)
	if err != nil {
		return ReplayResult{}, err
	}
	res := ReplayResult{Evaluations: []synth.Evaluation{}}
	now := s.now()
	for i := range runs {
		e, ok := exampleOf(&runs[i], fb)
		if !ok || e.Shape.Key != p.Key {
			continue
		}
		ev := synth.Evaluate(ans, synth.EvalReplay, e)
		ev.ID, ev.TenantID, ev.ArtifactID, ev.CreatedAt = ids.New("ev"), tenantID, a.ID, now
		switch ev.Outcome {
		case synth.OutcomePass:
			res.Passed++
		case synth.OutcomeFail:
			res.Failed++
		default:
			res.Abstained++
		}
		res.Evaluations = append(res.Evaluations, ev)
	}
	if a.SideEffects {
		s.suppressEffects(ctx, tenantID, res.Evaluations)
	}
	res.Artifact, err = s.o.Store.AddEvaluations(ctx, tenantID, a.ID, res.Evaluations, now)
	if err != nil {
		return ReplayResult{}, err
	}
	if err := s.checkQuarantine(ctx, res.Artifact); err != nil {
		return ReplayResult{}, err
	}
	return res, nil
}

// exampleOf reads a live run as an example: its shape and the model's
// answer. ok is false for runs the loop cannot learn from, among them a run
// whose answer was corrected or rated down.
func exampleOf(r *RunRecord, fb map[string]RunFeedback) (synth.Example, bool) {
	if r.Route != ledger.RouteLive {
		return synth.Example{}, false
	}
	sh, err := shape.Parse(r.App, r.Request)
	if err != nil {
		return synth.Example{}, false
	}
	out, ok := shape.ResponseText(r.Response)
	if !ok {
		return synth.Example{}, false
	}
	if f, rated := fb[r.ID]; rated && (f.Correction != "" || f.Rating < 0) {
		// A corrected or rejected answer teaches nothing, and a correction
		// is not taken as a label: any key of the tenant may send one, and
		// it would decide what an artifact answers other people. It counts
		// against the pattern's stability instead.
		return synth.Example{}, false
	}
	return synth.Example{RunID: r.ID, Shape: sh, Output: out}, true
}
