package learning

import (
	"context"
	"encoding/json"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
)

// Feedback turns a rating of a run into evidence: on an artifact-served run
// a live evaluation (a negative rating or a correction fails it, a positive
// one passes it), and an artifact whose lower bound falls below the
// threshold is quarantined. A correction of a live run counts against its
// pattern's stability at the next pass.
func (s *Service) Feedback(ctx context.Context, tenantID string, run ledger.Run, rating int, correction string) error {
	if run.Route != ledger.RouteArtifact {
		return nil
	}
	artifactID := servedArtifactID(run.Explanation.Artifact)
	if artifactID == "" {
		return nil
	}
	a, err := s.o.Store.Artifact(ctx, tenantID, artifactID)
	if errs.Is(err, errs.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	got, _ := shape.ResponseText(run.Response)
	ev := synth.Evaluation{ID: ids.New("ev"), TenantID: tenantID, ArtifactID: a.ID, Kind: synth.EvalLive, RunID: run.ID,
		Got: synth.Clip(got), CreatedAt: s.now()}
	switch {
	case rating < 0 || correction != "" && !synth.Agrees(got, correction):
		ev.Outcome, ev.Expected, ev.Reason = synth.OutcomeFail, synth.Clip(correction), "a person rated the answer down"
		if correction != "" {
			ev.Reason = "a person corrected the answer"
		}
	default:
		ev.Outcome, ev.Expected, ev.Reason = synth.OutcomePass, synth.Clip(got), "a person rated the answer up"
	}
	a, err = s.o.Store.AddEvaluations(ctx, tenantID, a.ID, []synth.Evaluation{ev}, ev.CreatedAt)
	if err != nil {
		return err
	}
	return s.checkQuarantine(ctx, a)
}

// servedArtifactID reads the artifact id of a run's routeExplanation.artifact.
func servedArtifactID(detail any) string {
	switch d := detail.(type) {
	case map[string]any:
		id, _ := d["id"].(string)
		return id
	case *ArtifactDetailOfRun:
		return d.ID
	case json.RawMessage:
		var x struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(d, &x)
		return x.ID
	}
	return ""
}

// ArtifactDetailOfRun is a run's routeExplanation.artifact.
type ArtifactDetailOfRun struct {
	ID        string  `json:"id"`
	PatternID string  `json:"patternId"`
	Type      string  `json:"type"`
	State     string  `json:"state"`
	Served    bool    `json:"served"`
	Abstained bool    `json:"abstained"`
	Canary    bool    `json:"canary,omitempty"`
	Shadow    string  `json:"shadow,omitempty"` // outcome of the shadow evaluation
	Reason    string  `json:"reason"`
	SavedUSD  float64 `json:"savedUsd"`
	SavedMS   float64 `json:"savedMs"`
}
