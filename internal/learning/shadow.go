package learning

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/learning/synth"
)

// maxPendingShadow bounds the shadow evaluations waiting to be stored; more
// are dropped (and counted) rather than slowing requests down.
const maxPendingShadow = 10000

// shadowBuffer holds evaluations made beside live calls until they are
// stored: by the flusher every 100 ms, and before anything reads or judges
// the evidence (a pass, a promotion, a replay, an artifact's detail).
type shadowBuffer struct {
	mu      sync.Mutex
	pending []synth.Evaluation
	dropped int
	// recheck are artifacts whose evidence was stored but whose
	// quarantine check failed: the next flush makes it again.
	recheck map[shadowKey]bool
}

type shadowKey struct{ tenant, artifact string }

// RecordShadow records a shadow verdict made by synth.JudgeShadow, with the two
// answers it compared. It never blocks on storage.
func (s *Service) RecordShadow(tenantID, artifactID, runID, outcome, reason, artifactAnswer, liveAnswer string) {
	ev := synth.Evaluation{ID: ids.New("ev"), TenantID: tenantID, ArtifactID: artifactID, Kind: synth.EvalShadow, RunID: runID,
		Outcome: outcome, Reason: reason, Expected: synth.Clip(liveAnswer), CreatedAt: s.now()}
	if outcome != synth.OutcomeAbstain {
		ev.Got = synth.Clip(artifactAnswer)
	}
	s.o.Metrics.Shadow(outcome)
	b := &s.shadow
	b.mu.Lock()
	if len(b.pending) >= maxPendingShadow {
		b.dropped++
	} else {
		b.pending = append(b.pending, ev)
	}
	b.mu.Unlock()
}

// FlushShadow stores the pending shadow evaluations, artifact by artifact,
// and quarantines a promoted artifact whose evidence turned. One
// artifact's failure does not keep the others' evidence from being stored;
// what failed is kept for the next flush (its evidence back in the buffer,
// its quarantine check to be made again), and returned.
func (s *Service) FlushShadow(ctx context.Context) error {
	var all []error
	for _, errs := range s.flushShadow(ctx) {
		all = append(all, errs...)
	}
	return errors.Join(all...)
}

// flushShadowFor flushes like FlushShadow and returns only tenantID's
// failures: callers judge their own tenant's evidence, and another
// tenant's broken artifact is no reason to refuse them.
func (s *Service) flushShadowFor(ctx context.Context, tenantID string) error {
	failed := s.flushShadow(ctx)
	for tenant, errs := range failed {
		if tenant != tenantID {
			s.o.Logger.Warn("shadow evidence kept for the next flush", "tenant", tenant, "error", errors.Join(errs...))
		}
	}
	return errors.Join(failed[tenantID]...)
}

// flushShadow does FlushShadow's work and returns its failures by tenant.
func (s *Service) flushShadow(ctx context.Context) map[string][]error {
	b := &s.shadow
	b.mu.Lock()
	pending, recheck, dropped := b.pending, b.recheck, b.dropped
	b.pending, b.recheck, b.dropped = nil, nil, 0
	b.mu.Unlock()
	if dropped > 0 {
		s.o.Logger.Warn("shadow evaluations dropped: the buffer was full", "dropped", dropped)
	}
	groups := map[shadowKey][]synth.Evaluation{}
	var order []shadowKey
	for _, ev := range pending {
		k := shadowKey{ev.TenantID, ev.ArtifactID}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], ev)
	}
	for k := range recheck {
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
	}
	failed := map[string][]error{}
	for _, k := range order {
		var a synth.Artifact
		var err error
		evals := groups[k]
		if len(evals) > 0 {
			if s.index.sideEffects(k.tenant, k.artifact) {
				s.suppressEffects(ctx, k.tenant, evals)
			}
			a, err = s.o.Store.AddEvaluations(ctx, k.tenant, k.artifact, evals, s.now())
			err = wrapIf(err, "storing the shadow evaluations of artifact %s", k.artifact)
		} else {
			a, err = s.o.Store.Artifact(ctx, k.tenant, k.artifact)
			err = wrapIf(err, "reading artifact %s for its quarantine check", k.artifact)
		}
		if errs.Is(err, errs.NotFound) {
			continue // the artifact is gone, and its evidence with it
		}
		if err != nil {
			s.keepShadow(evals, k)
			failed[k.tenant] = append(failed[k.tenant], err)
			continue
		}
		if err := s.checkQuarantine(ctx, a); err != nil {
			s.keepShadow(nil, k)
			failed[k.tenant] = append(failed[k.tenant], fmt.Errorf("checking artifact %s for quarantine: %w", k.artifact, err))
		}
	}
	return failed
}

// keepShadow puts evaluations a flush could not store back in the buffer
// (within its bound); with none, it marks artifact k for a new quarantine
// check, which storing them would have made.
func (s *Service) keepShadow(evals []synth.Evaluation, k shadowKey) {
	b := &s.shadow
	b.mu.Lock()
	defer b.mu.Unlock()
	room := max(0, maxPendingShadow-len(b.pending))
	b.dropped += max(0, len(evals)-room)
	b.pending = append(b.pending, evals[:min(len(evals), room)]...)
	if len(evals) == 0 {
		if b.recheck == nil {
			b.recheck = map[shadowKey]bool{}
		}
		b.recheck[k] = true
	}
}

// wrapIf says what was being done when err happened, keeping err's kind.
func wrapIf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// Start runs the shadow flusher until Close.
func (s *Service) Start() {
	s.stop = make(chan struct{})
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				if err := s.FlushShadow(context.Background()); err != nil {
					s.o.Logger.Error("flushing shadow evaluations failed", "error", err)
				}
				return
			case <-t.C:
				if err := s.FlushShadow(context.Background()); err != nil {
					s.o.Logger.Error("flushing shadow evaluations failed", "error", err)
				}
			}
		}
	}()
}

// Close stops the reloads that other replicas' notices started, stores
// what is pending and stops the flusher.
func (s *Service) Close() {
	if s.follow != nil {
		s.follow.close()
	}
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
}
