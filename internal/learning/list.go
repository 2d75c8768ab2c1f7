package learning

import (
	"context"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
)

// Patterns lists the tenant's patterns, most optimizable first.
func (s *Service) Patterns(ctx context.Context, tenantID string) ([]synth.Pattern, error) {
	return s.o.Store.ListPatterns(ctx, tenantID)
}

// PatternDetail is a pattern with its artifacts and example runs.
type PatternDetail struct {
	synth.Pattern
	Artifacts   []synth.Artifact `json:"artifacts"`
	ExampleRuns []ledger.Run     `json:"exampleRuns"`
}

// PatternDetail returns one pattern with its artifacts and up to ten of
// its newest runs.
func (s *Service) PatternDetail(ctx context.Context, tenantID, id string) (PatternDetail, error) {
	p, err := s.o.Store.Pattern(ctx, tenantID, id)
	if err != nil {
		return PatternDetail{}, err
	}
	arts, err := s.o.Store.ListArtifacts(ctx, tenantID, id)
	if err != nil {
		return PatternDetail{}, err
	}
	d := PatternDetail{Pattern: p, Artifacts: arts, ExampleRuns: []ledger.Run{}}
	for _, rid := range p.ExampleRunIDs {
		run, err := s.o.Runs.Run(ctx, tenantID, rid)
		if errs.Is(err, errs.NotFound) {
			continue // swept by retention
		}
		if err != nil {
			return PatternDetail{}, err
		}
		run.Request, run.Response = nil, nil
		d.ExampleRuns = append(d.ExampleRuns, run)
	}
	return d, nil
}

// Artifacts lists the tenant's artifacts, newest first.
func (s *Service) Artifacts(ctx context.Context, tenantID string) ([]synth.Artifact, error) {
	if err := s.flushShadowFor(ctx, tenantID); err != nil {
		return nil, err
	}
	return s.o.Store.ListArtifacts(ctx, tenantID, "")
}

// ArtifactDetail is an artifact with its evidence and its pattern.
type ArtifactDetail struct {
	Artifact    synth.Artifact     `json:"artifact"`
	Evaluations []synth.Evaluation `json:"evaluations"`
	Pattern     *synth.Pattern     `json:"pattern"`
}

// ArtifactDetail returns one artifact with its newest 200 evaluations and
// its pattern (nil when the pattern is gone).
func (s *Service) ArtifactDetail(ctx context.Context, tenantID, id string) (ArtifactDetail, error) {
	if err := s.flushShadowFor(ctx, tenantID); err != nil {
		return ArtifactDetail{}, err
	}
	a, err := s.o.Store.Artifact(ctx, tenantID, id)
	if err != nil {
		return ArtifactDetail{}, err
	}
	evals, err := s.o.Store.Evaluations(ctx, tenantID, id, 200)
	if err != nil {
		return ArtifactDetail{}, err
	}
	d := ArtifactDetail{Artifact: a, Evaluations: evals}
	if p, err := s.o.Store.Pattern(ctx, tenantID, a.PatternID); err == nil {
		d.Pattern = &p
	} else if !errs.Is(err, errs.NotFound) {
		return ArtifactDetail{}, err
	}
	return d, nil
}
