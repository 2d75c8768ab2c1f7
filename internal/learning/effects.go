package learning

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/svc-gateway/svc/internal/governance"
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
func (s *Service) suppressEffects(ctx context.Context, tenantID string, evals []Evaluation) {
	if s.o.Effects == nil {
		return
	}
	for i := range evals {
		ev := &evals[i]
		ev.Suppressed = nil // made anew when a flush that failed tries again
		if ev.Kind != EvalReplay && ev.Kind != EvalShadow {
			continue
		}
		planned, err := s.plannedBy(ctx, tenantID, ev.RunID, ev.Kind == EvalShadow)
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
	for _, c := range AnswerToolCalls(run.Response) {
		payload, _ := json.Marshal(map[string]string{"arguments": c.Arguments})
		out = append(out, ledger.SideEffect{ToolName: c.Name, Level: governance.DefaultToolLevel, Payload: payload})
	}
	return out, nil
}

// ToolCall is a tool call of a model's answer: the tool's name and its
// arguments as the model wrote them.
type ToolCall struct {
	Name      string
	Arguments string
}

// AnswerToolCalls reads the tool calls of an answer as svc records it: a
// chat.completion (tool_calls, or the older function_call), or a stream's
// chunks, whose calls arrive in pieces by index.
func AnswerToolCalls(body []byte) []ToolCall {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		Index    int      `json:"index"`
		Function function `json:"function"`
	}
	var a struct {
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				ToolCalls    []call    `json:"tool_calls"`
				FunctionCall *function `json:"function_call"`
			} `json:"message"`
		} `json:"choices"`
		Chunks []struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					ToolCalls    []call    `json:"tool_calls"`
					FunctionCall *function `json:"function_call"`
				} `json:"delta"`
			} `json:"choices"`
		} `json:"chunks"`
	}
	if json.Unmarshal(body, &a) != nil {
		return nil
	}
	var out []ToolCall
	for _, ch := range a.Choices {
		for _, c := range ch.Message.ToolCalls {
			out = append(out, ToolCall{Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		if f := ch.Message.FunctionCall; f != nil {
			out = append(out, ToolCall{Name: f.Name, Arguments: f.Arguments})
		}
	}
	// A stream: a call's name comes in its first piece, its arguments in
	// all of them; a function_call is index -1 of its choice.
	type key struct{ choice, call int }
	streamed := map[key]*ToolCall{}
	for _, chunk := range a.Chunks {
		for _, ch := range chunk.Choices {
			pieces := ch.Delta.ToolCalls
			if f := ch.Delta.FunctionCall; f != nil {
				pieces = append(pieces, call{Index: -1, Function: *f})
			}
			for _, p := range pieces {
				k := key{ch.Index, p.Index}
				c := streamed[k]
				if c == nil {
					c = &ToolCall{}
					streamed[k] = c
				}
				c.Name += p.Function.Name
				c.Arguments += p.Function.Arguments
			}
		}
	}
	keys := make([]key, 0, len(streamed))
	for k := range streamed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].choice < keys[j].choice || keys[i].choice == keys[j].choice && keys[i].call < keys[j].call
	})
	for _, k := range keys {
		out = append(out, *streamed[k])
	}
	return out
}
