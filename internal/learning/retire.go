package learning

import (
	"context"
	"fmt"

	"github.com/svc-gateway/svc/internal/learning/synth"
)

// Rollback retires an artifact: it stops serving and is not scored again.
func (s *Service) Rollback(ctx context.Context, tenantID, id, actor string) (synth.Artifact, error) {
	return s.retire(ctx, tenantID, id, synth.ArtifactRetired, "rolled back by "+actor, actor, EventArtifactRetired)
}

// Quarantine stops an artifact at once, keeping it for inspection.
func (s *Service) Quarantine(ctx context.Context, tenantID, id, actor, reason string) (synth.Artifact, error) {
	if reason == "" {
		reason = "quarantined by " + actor
	}
	return s.retire(ctx, tenantID, id, synth.ArtifactQuarantined, reason, actor, EventArtifactQuarantined)
}

func (s *Service) retire(ctx context.Context, tenantID, id, state, reason, actor, event string) (synth.Artifact, error) {
	a, previous, err := s.o.Store.SetArtifactState(ctx, tenantID, id, state, reason, s.now())
	if err != nil {
		return synth.Artifact{}, err
	}
	s.index.drop(tenantID, id)
	if state == synth.ArtifactQuarantined && previous != synth.ArtifactQuarantined {
		s.o.Metrics.Quarantined()
	}
	if err := s.advancePattern(ctx, tenantID, a.PatternID); err != nil {
		return synth.Artifact{}, err
	}
	s.changed(ctx, tenantID)
	s.audit(ctx, tenantID, actor, "artifact."+state, a.ID, map[string]any{"pattern": a.PatternID, "reason": reason,
		"confidence": a.Confidence, "lowerBound": a.LowerBound, "alpha": a.Alpha, "beta": a.Beta})
	s.notify(ctx, tenantID, event, a)
	return a, nil
}

// checkQuarantine quarantines a promoted artifact whose evidence turned.
func (s *Service) checkQuarantine(ctx context.Context, a synth.Artifact) error {
	if a.State != synth.ArtifactPromoted {
		return nil
	}
	reason := ""
	if s.o.Thresholds.ShouldQuarantine(&a) {
		reason = fmt.Sprintf("quarantined automatically: lower bound %.3f (alpha %.0f, beta %.0f) fell below %.2f",
			a.LowerBound, a.Alpha, a.Beta, s.o.Thresholds.LowerBound)
	} else {
		recent, err := s.o.Store.Evaluations(ctx, a.TenantID, a.ID, 4*synth.RecentWindow)
		if err != nil {
			return err
		}
		if !s.o.Thresholds.TurnedRecently(recent) {
			return nil
		}
		reason = fmt.Sprintf("quarantined automatically: its newest evidence turned (the upper bound of its last %d verdicts is below %.2f)",
			synth.RecentWindow, s.o.Thresholds.LowerBound)
	}
	_, err := s.retire(ctx, a.TenantID, a.ID, synth.ArtifactQuarantined, reason, "svc", EventArtifactQuarantined)
	return err
}
