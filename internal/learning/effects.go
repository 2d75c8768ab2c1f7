package learning

import (
	"context"
	"encoding/json"

	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
)

// Effects reads the side-effect records of runs.
type Effects interface {
	// SideEffects returns a run's records, oldest first.
	SideEffects(ctx context.Context, tenantID, runID string) ([]ledger.SideEffect, error)
}

// suppressEffects sets, on each replay or shadow evaluation, the side
// effects it would have caused again had it acted its run out: a replay
// re-enacts a recorded run, a shadow evaluation doubles a live one, and
// neither may do what the run did. Those are the side effects the run
// planned: each recorded on it (traced by its agent), or, for a run with
// none, each tool call of its answer, at the level the gateway governs an
// answer's tool calls. They are stored, suppressed, with the evaluation.
// A run that cannot be read is logged and skipped: the evidence is stored
// without its records.
func (s *Service) suppressEffects(ctx context.Context, tenantID string, evals []synth.Evaluation) {
	if s.o.Effects == nil {
		return
	}
	for i := range evals {
		ev := &evals[i]
		ev.Suppressed = nil // made anew when a flush that failed tries again
		if ev.Kind != synth.EvalReplay && ev.Kind != synth.EvalShadow {
			continue
		}
		planned, err := s.plannedBy(ctx, tenantID, ev.RunID, ev.Kind == synth.EvalShadow)
		if err != nil {
			s.o.Logger.Warn("the side effects an evaluation suppresses could not be read", "run", ev.RunID, "error", err)
			continue
		}
		for _, p := range planned {
			ev.Suppressed = append(ev.Suppressed, ledger.NewSuppressed(tenantID, ev.RunID, ev.ID, ev.Kind, p.ToolName,
				p.Level, p.Payload, p.PlannedSeq, ev.CreatedAt))
		}
	}
}

// plannedBy returns the side effects the run planned itself: its records
// that no evaluation made, else, when readAnswer, the tool calls of its
// answer. A replayed run's answer is text (a run whose answer called a
// tool is no example), so only a shadow evaluation's run is read.
func (s *Service) plannedBy(ctx context.Context, tenantID, runID string, readAnswer bool) ([]ledger.SideEffect, error) {
	recorded, err := s.o.Effects.SideEffects(ctx, tenantID, runID)
	if err != nil {
		return nil, err
	}
	var out []ledger.SideEffect
	for _, e := range recorded {
		if e.EvaluationID == "" {
			out = append(out, e)
		}
	}
	if len(out) > 0 || !readAnswer {
		return out, nil
	}
	run, err := s.o.Runs.Run(ctx, tenantID, runID)
	if err != nil {
		return nil, err
	}
	for _, c := range shape.ToolCalls(run.Response) {
		payload, _ := json.Marshal(map[string]string{"arguments": c.Arguments})
		out = append(out, ledger.SideEffect{ToolName: c.Name, Level: governance.DefaultToolLevel, Payload: payload})
	}
	return out, nil
}
