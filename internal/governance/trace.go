package governance

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/strictjson"
)

// The trace event types governance acts on.
const (
	EventToolCalled        = "tool.called"
	EventToolCompleted     = "tool.completed"
	EventSideEffectPlanned = "side_effect.planned"
)

// DefaultToolLevel is the side-effect level of a tool call that does not
// say: the client library's default.
const DefaultToolLevel = 3

// Runs is what the tracer needs of the runs service.
type Runs interface {
	Run(ctx context.Context, tenantID, id string) (ledger.Run, error)
	Trace(ctx context.Context, tenantID, runID, typ string, payload json.RawMessage) (ledger.Event, error)
}

// Tracer appends traced events to runs and governs the tool calls and
// side effects they announce.
type Tracer struct {
	runs    Runs
	effects ledger.SideEffectStore
	gov     *Governor
}

// NewTracer returns a tracer.
func NewTracer(runs Runs, effects ledger.SideEffectStore, gov *Governor) *Tracer {
	return &Tracer{runs: runs, effects: effects, gov: gov}
}

// Traced is what a traced event caused.
type Traced struct {
	Event      ledger.Event       `json:"event"`
	Verdict    *ledger.Verdict    `json:"verdict,omitempty"`
	SideEffect *ledger.SideEffect `json:"sideEffect,omitempty"`
}

// tracedTool is what svc reads of a tool event's payload: tool.called
// carries {name, args, sideEffectLevel}, side_effect.planned {toolName,
// level, payload}, tool.completed {name, result}.
type tracedTool struct {
	Name            string          `json:"name"`
	ToolName        string          `json:"toolName"`
	Args            json.RawMessage `json:"args"`
	Payload         json.RawMessage `json:"payload"`
	SideEffectLevel *float64        `json:"sideEffectLevel"` // 3.0 is 3, as float-writing encoders send it
	Level           *float64        `json:"level"`
}

func (t tracedTool) name() string {
	if t.ToolName != "" {
		return t.ToolName
	}
	return t.Name
}

func (t tracedTool) level() int64 {
	switch {
	case t.Level != nil:
		return int64(*t.Level)
	case t.SideEffectLevel != nil:
		return int64(*t.SideEffectLevel)
	}
	return DefaultToolLevel
}

// validate checks the side-effect levels, each a whole number 0 to 4 when
// given.
func (t tracedTool) validate() error {
	if err := checkLevel("level", t.Level); err != nil {
		return err
	}
	return checkLevel("sideEffectLevel", t.SideEffectLevel)
}

func checkLevel(field string, v *float64) error {
	if v != nil && (*v < 0 || *v > 4 || *v != math.Trunc(*v)) {
		return errs.Invalidf("payload."+field, "%s must be a whole number from 0 to 4", field)
	}
	return nil
}

func (t tracedTool) args() map[string]any {
	raw := t.Args
	if raw == nil {
		raw = t.Payload
	}
	if raw == nil {
		return map[string]any{}
	}
	return ParseArgs(string(raw))
}

// ParseArgs reads a tool call's arguments. Arguments that are not a JSON
// object are seen by policies as {"_raw": "<text>"}, never as nothing.
func ParseArgs(raw string) map[string]any {
	var args map[string]any
	if err := json.Unmarshal([]byte(raw), &args); err != nil || args == nil {
		return map[string]any{"_raw": raw}
	}
	return args
}

// Trace appends an event to a run and acts on it: a tool call or planned
// side effect is put before the tool policies (the verdict is appended to
// the run's trace too), a planned side effect is recorded, and a completed
// tool executes its planned side effect.
func (t *Tracer) Trace(ctx context.Context, id *auth.Identity, runID, typ string, payload json.RawMessage) (Traced, error) {
	kind := strings.TrimSpace(typ)
	isTool := kind == EventToolCalled || kind == EventSideEffectPlanned || kind == EventToolCompleted
	var tool tracedTool
	if isTool {
		// A key that is a field only in another letter case is refused
		// rather than read as that field: the ledger keeps the payload as
		// written, and policies must judge what it records.
		var keyErr *strictjson.KeyError
		if errors.As(strictjson.Check(payload, &tool, strictjson.AllowUnknown), &keyErr) {
			return Traced{}, errs.Invalidf("payload."+keyErr.Param(), "payload: %s", keyErr.Error())
		}
		// Missing fields stay empty; one of the wrong type is refused rather
		// than read as its zero value (a level of "4" is not level 0).
		var wrongType *json.UnmarshalTypeError
		if err := json.Unmarshal(payload, &tool); errors.As(err, &wrongType) {
			if wrongType.Field == "" { // the payload itself: the ledger's own rule, said first
				return Traced{}, errs.Invalidf("payload", "payload must be a JSON object")
			}
			return Traced{}, errs.Invalidf("payload."+wrongType.Field, "%s has the wrong type", wrongType.Field)
		}
		if err := tool.validate(); err != nil {
			return Traced{}, err
		}
	}
	e, err := t.runs.Trace(ctx, id.TenantID, runID, typ, payload)
	if err != nil {
		return Traced{}, err
	}
	out := Traced{Event: e}
	if !isTool {
		return out, nil
	}
	if kind == EventToolCompleted {
		_, err := t.effects.ExecuteSideEffect(ctx, id.TenantID, runID, tool.name(), e.At)
		return out, err
	}
	run, err := t.runs.Run(ctx, id.TenantID, runID)
	if err != nil {
		return Traced{}, err
	}
	args, level := tool.args(), tool.level()
	in := &policy.Input{Tool: policy.ToolCall{Name: tool.name(), Args: policy.NewArgs(args), Level: level}}
	d, err := t.gov.Decide(ctx, Call{ID: id, RunID: runID, Target: policy.Tool, Describe: func() (json.RawMessage, string) {
		return DescribeTool(id, tool.name(), args, level)
	}}, in)
	if err != nil {
		return Traced{}, err
	}
	v := LedgerVerdict(d)
	out.Verdict = &v
	if d.Standing != nil {
		t.gov.SaveStanding(ctx, id.TenantID, id.Agent, *d.Standing, e.At)
	}
	if d.Evaluated {
		verdict, _ := json.Marshal(map[string]any{"target": "tool", "tool": tool.name(), "decision": v.Decision, "rules": v.Rules,
			"enforced": v.Enforced, "approvalId": v.ApprovalID, "seq": e.Seq})
		if _, err := t.runs.Trace(ctx, id.TenantID, runID, "policy.evaluated", verdict); err != nil {
			return Traced{}, err
		}
	}
	if kind == EventSideEffectPlanned {
		effect := tool.Payload
		if effect == nil {
			effect = json.RawMessage(`{}`)
		}
		se := ledger.NewSideEffect(id.TenantID, runID, run.Mode, e, tool.name(), int(level), effect)
		if se.State == ledger.EffectPlanned && d.Enforced {
			se.State, se.ApprovalID = ledger.EffectBlocked, v.ApprovalID
			for _, r := range v.Rules {
				if r.Effect == v.Decision {
					se.RuleID, se.Reason = r.ID, r.Reason
					break
				}
			}
		}
		if err := t.effects.AddSideEffect(ctx, se); err != nil {
			return Traced{}, err
		}
		out.SideEffect = se
	}
	return out, nil
}

// LedgerVerdict is a decision as runs record it.
func LedgerVerdict(d Decision) ledger.Verdict {
	v := ledger.Verdict{Decision: string(d.Verdict.Decision), Rules: make([]ledger.RuleResult, len(d.Verdict.Rules)),
		ApprovalID: d.Verdict.ApprovalID, Enforced: d.Enforced}
	for i, r := range d.Verdict.Rules {
		v.Rules[i] = ledger.RuleResult{ID: r.ID, Effect: string(r.Effect), Reason: r.Reason, Error: r.Error}
	}
	return v
}
