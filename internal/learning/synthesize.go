package learning

import (
	"context"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/learning/synth"
)

// SynthesisResult is what an operator's synthesis made.
type SynthesisResult struct {
	Artifact *synth.Artifact `json:"artifact"`
	Pattern  synth.Pattern   `json:"pattern"`
	Report   synth.Report    `json:"synthesisReport"`
}

// Synthesize tries to make an artifact of one pattern now, whatever its
// state but negative. Returns errs.Conflict for a negative pattern.
func (s *Service) Synthesize(ctx context.Context, tenantID, id, actor string) (SynthesisResult, error) {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	if err := s.sync(ctx, tenantID); err != nil {
		return SynthesisResult{}, err
	}
	p, err := s.o.Store.Pattern(ctx, tenantID, id)
	if err != nil {
		return SynthesisResult{}, err
	}
	if p.State == synth.PatternNegative {
		return SynthesisResult{}, errs.E(errs.Conflict, "pattern_negative", "the pattern is ignored; nothing is learned from it")
	}
	fb, err := s.o.Store.Feedback(ctx, tenantID)
	if err != nil {
		return SynthesisResult{}, err
	}
	examples, err := s.examples(ctx, tenantID, map[string]bool{p.Key: true}, fb)
	if err != nil {
		return SynthesisResult{}, err
	}
	a, rep, err := s.synthesize(ctx, &p, examples[p.Key])
	if err != nil {
		return SynthesisResult{}, err
	}
	if a != nil {
		from := p.State
		arts, err := s.artifactStates(ctx, tenantID, p.ID)
		if err != nil {
			return SynthesisResult{}, err
		}
		if p.State == synth.PatternRetired {
			p.State = synth.PatternCandidate // an operator's synthesis brings a retired pattern back
		}
		p.Advance(s.o.Thresholds, arts)
		s.audit(ctx, tenantID, actor, "artifact.synthesized", a.ID, map[string]any{"pattern": p.ID, "type": a.Type, "from": from, "to": p.State})
	}
	p.UpdatedAt = s.now()
	if err := s.o.Store.SavePatterns(ctx, tenantID, []synth.Pattern{p}); err != nil {
		return SynthesisResult{}, err
	}
	s.changed(ctx, tenantID)
	return SynthesisResult{Artifact: a, Pattern: p, Report: rep}, nil
}

// synthesize runs synthesis on examples and stores the artifact made, in
// shadow, with its replay evaluations.
func (s *Service) synthesize(ctx context.Context, p *synth.Pattern, examples []synth.Example) (*synth.Artifact, synth.Report, error) {
	p.SynthesizedAt = max(1, p.RunCount)
	cand, rep := synth.Fit(examples, s.o.Thresholds)
	rep.PatternID = p.ID
	if cand == nil {
		return nil, rep, nil
	}
	now := s.now()
	a := &synth.Artifact{ID: ids.New("art"), TenantID: p.TenantID, PatternID: p.ID, State: synth.ArtifactShadow,
		StateReason: "synthesized; the replay gate passed on holdout runs, shadow evidence is gathered on live traffic",
		Type:        cand.Type, Representation: cand.Representation, Provenance: cand.Provenance,
		SideEffects: len(p.Fingerprints.Tools) > 0, CreatedAt: now, UpdatedAt: now}
	evals := cand.Replay
	for i := range evals {
		evals[i].ID, evals[i].TenantID, evals[i].ArtifactID, evals[i].CreatedAt = ids.New("ev"), p.TenantID, a.ID, now
		a.Count(evals[i].Kind, evals[i].Outcome)
	}
	a.Refresh()
	if a.SideEffects {
		s.suppressEffects(ctx, p.TenantID, evals)
	}
	if err := s.o.Store.InsertArtifact(ctx, a, evals); err != nil {
		return nil, rep, err
	}
	rep.Created = a.ID
	s.notify(ctx, p.TenantID, EventArtifactSynthesized, a)
	return a, rep, nil
}

func (s *Service) artifactStates(ctx context.Context, tenantID, patternID string) ([]string, error) {
	arts, err := s.o.Store.ListArtifacts(ctx, tenantID, patternID)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(arts))
	for i, a := range arts {
		out[i] = a.State
	}
	return out, nil
}
