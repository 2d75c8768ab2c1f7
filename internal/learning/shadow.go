package learning

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/svc-gateway/svc/internal/ids"
)

// maxPendingShadow bounds the shadow evaluations waiting to be stored; more
// are dropped (and counted) rather than slowing requests down.
const maxPendingShadow = 10000

// shadowBuffer holds evaluations made beside live calls until they are
// stored: by the flusher every 100 ms, and before anything reads or judges
// the evidence (a pass, a promotion, a replay, an artifact's detail).
type shadowBuffer struct {
	mu      sync.Mutex
	pending []Evaluation
	dropped int
}

// JudgeShadow decides an artifact's answer, computed beside a live call of
// its pattern, against the live reply: it agreed, it did not (or the model
// called a tool, which the artifact would have dropped), or it abstained.
func JudgeShadow(artifactAnswer string, answered bool, live Reply) (outcome, reason string) {
	switch {
	case live.ToolCall && answered:
		return OutcomeFail, "the model called a tool; the artifact would have answered with text"
	case !answered:
		return OutcomeAbstain, "the artifact abstained"
	case Agrees(artifactAnswer, live.Text):
		return OutcomePass, ""
	default:
		return OutcomeFail, "the live answer differs"
	}
}

// RecordShadow records a shadow verdict made by JudgeShadow, with the two
// answers it compared. It never blocks on storage.
func (s *Service) RecordShadow(tenantID, artifactID, runID, outcome, reason, artifactAnswer, liveAnswer string) {
	ev := Evaluation{ID: ids.New("ev"), TenantID: tenantID, ArtifactID: artifactID, Kind: EvalShadow, RunID: runID,
		Outcome: outcome, Reason: reason, Expected: clip(liveAnswer), CreatedAt: s.now()}
	if outcome != OutcomeAbstain {
		ev.Got = clip(artifactAnswer)
	}
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
// and quarantines a promoted artifact whose evidence turned.
func (s *Service) FlushShadow(ctx context.Context) error {
	b := &s.shadow
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	dropped := b.dropped
	b.dropped = 0
	b.mu.Unlock()
	if dropped > 0 {
		s.o.Logger.Warn("shadow evaluations dropped: the buffer was full", "dropped", dropped)
	}
	if len(pending) == 0 {
		return nil
	}
	type key struct{ tenant, artifact string }
	groups := map[key][]Evaluation{}
	var order []key
	for _, ev := range pending {
		k := key{ev.TenantID, ev.ArtifactID}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], ev)
	}
	// One artifact's failure does not keep the others' evidence from being
	// stored, but it is returned: callers judge the evidence, and an
	// artifact that should be quarantined may still be serving.
	var failed []error
	for _, k := range order {
		a, err := s.o.Store.AddEvaluations(ctx, k.tenant, k.artifact, groups[k], s.now())
		if err != nil {
			failed = append(failed, fmt.Errorf("storing the shadow evaluations of artifact %s: %w", k.artifact, err))
			continue
		}
		if err := s.checkQuarantine(ctx, a); err != nil {
			failed = append(failed, fmt.Errorf("checking artifact %s for quarantine: %w", k.artifact, err))
		}
	}
	return errors.Join(failed...)
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

// Close stores what is pending and stops the flusher.
func (s *Service) Close() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
}
