package learning

import (
	"context"

	"github.com/svc-gateway/svc/internal/learning/synth"
)

// Ignore marks a pattern negative and records that decision in the
// negative cache tier; its artifacts are retired.
func (s *Service) Ignore(ctx context.Context, tenantID, id, actor string) (synth.Pattern, error) {
	// Not while a pass runs: it saves the patterns it read, and would turn
	// this one back.
	s.passMu.Lock()
	defer s.passMu.Unlock()
	p, err := s.o.Store.Pattern(ctx, tenantID, id)
	if err != nil {
		return synth.Pattern{}, err
	}
	from := p.State
	p.Ignore()
	p.UpdatedAt = s.now()
	if err := s.o.Store.SavePatterns(ctx, tenantID, []synth.Pattern{p}); err != nil {
		return synth.Pattern{}, err
	}
	if s.o.Negative != nil {
		if err := s.o.Negative.Ignore(ctx, tenantID, NegativeKey(p.Key), "pattern ignored by an operator"); err != nil {
			return synth.Pattern{}, err
		}
	}
	arts, err := s.o.Store.ListArtifacts(ctx, tenantID, id)
	if err != nil {
		return synth.Pattern{}, err
	}
	for _, a := range arts {
		if a.State == synth.ArtifactShadow || a.State == synth.ArtifactPromoted {
			if _, _, err := s.o.Store.SetArtifactState(ctx, tenantID, a.ID, synth.ArtifactRetired, "its pattern was ignored", s.now()); err != nil {
				return synth.Pattern{}, err
			}
		}
	}
	s.changed(ctx, tenantID)
	s.audit(ctx, tenantID, actor, "pattern.ignored", p.ID, map[string]any{"from": from, "to": p.State})
	return p, nil
}

// NegativeKey is a pattern's key in the negative cache tier.
func NegativeKey(patternKey string) string { return "pattern:" + patternKey }
