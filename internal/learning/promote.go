package learning

import (
	"context"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/learning/synth"
)

// Promote promotes an artifact that passes the gate. A side-effect-bearing
// artifact needs confirm. Returns errs.Conflict with the gate's reasons.
func (s *Service) Promote(ctx context.Context, tenantID, id string, confirm bool, actor string) (synth.Artifact, error) {
	if err := s.flushShadowFor(ctx, tenantID); err != nil {
		return synth.Artifact{}, err
	}
	a, err := s.o.Store.Artifact(ctx, tenantID, id)
	if err != nil {
		return synth.Artifact{}, err
	}
	if a.State == synth.ArtifactPromoted {
		return a, nil
	}
	if err := s.o.Thresholds.Gate(&a); err != nil {
		return synth.Artifact{}, errs.E(errs.Conflict, "gate_failed", "%s", err.Error())
	}
	if a.SideEffects && !confirm {
		return synth.Artifact{}, errs.E(errs.Conflict, "confirmation_required",
			"the artifact's pattern offers tools (side effects): promote it with {\"confirm\": true}")
	}
	return s.promote(ctx, a, actor, "promoted by "+actor)
}

func (s *Service) promote(ctx context.Context, a synth.Artifact, actor, reason string) (synth.Artifact, error) {
	out, _, err := s.o.Store.SetArtifactState(ctx, a.TenantID, a.ID, synth.ArtifactPromoted, reason, s.now())
	if err != nil {
		return synth.Artifact{}, err
	}
	// Another promoted artifact of the pattern steps back: one serves.
	arts, err := s.o.Store.ListArtifacts(ctx, a.TenantID, a.PatternID)
	if err != nil {
		return synth.Artifact{}, err
	}
	for _, o := range arts {
		if o.ID != a.ID && o.State == synth.ArtifactPromoted {
			if _, _, err := s.o.Store.SetArtifactState(ctx, a.TenantID, o.ID, synth.ArtifactRetired, "replaced by "+a.ID, s.now()); err != nil {
				return synth.Artifact{}, err
			}
		}
	}
	if err := s.advancePattern(ctx, a.TenantID, a.PatternID); err != nil {
		return synth.Artifact{}, err
	}
	s.changed(ctx, a.TenantID)
	s.audit(ctx, a.TenantID, actor, "artifact.promoted", a.ID, map[string]any{"pattern": a.PatternID,
		"confidence": out.Confidence, "lowerBound": out.LowerBound, "alpha": out.Alpha, "beta": out.Beta})
	s.notify(ctx, a.TenantID, EventArtifactPromoted, out)
	return out, nil
}

// advancePattern applies the pattern's lifecycle after its artifacts
// changed.
func (s *Service) advancePattern(ctx context.Context, tenantID, patternID string) error {
	p, err := s.o.Store.Pattern(ctx, tenantID, patternID)
	if err != nil {
		return err
	}
	states, err := s.artifactStates(ctx, tenantID, patternID)
	if err != nil {
		return err
	}
	if p.Advance(s.o.Thresholds, states) {
		p.UpdatedAt = s.now()
		return s.o.Store.SavePatterns(ctx, tenantID, []synth.Pattern{p})
	}
	return nil
}
