package ledger

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svc-gateway/svc/internal/ids"
)

// The states of a side-effect record.
const (
	EffectPlanned    = "planned"    // announced, allowed, not yet done
	EffectExecuted   = "executed"   // done: the tool completed
	EffectSuppressed = "suppressed" // not to be done: the run is a replay or shadow run
	EffectBlocked    = "blocked"    // not to be done: a policy denied it or holds it for approval
)

// The modes of runs the learning loop makes to gather evidence. Their
// planned side effects are suppressed, never executed.
const (
	ModeReplay = "replay"
	ModeShadow = "shadow"
)

// SuppressesSideEffects reports whether a run of mode must not cause side
// effects: the switch replay and shadow runs turn on.
func SuppressesSideEffects(mode string) bool { return mode == ModeReplay || mode == ModeShadow }

// SideEffect is something a tool of a run changes outside svc, from the
// moment it is planned.
type SideEffect struct {
	ID         string          `json:"id"`
	TenantID   string          `json:"-"`
	RunID      string          `json:"runId"`
	ToolName   string          `json:"toolName"`
	Level      int             `json:"level"`
	Payload    json.RawMessage `json:"payload"`
	State      string          `json:"state"`
	RuleID     string          `json:"ruleId,omitempty"` // the rule that blocked it
	Reason     string          `json:"reason,omitempty"`
	ApprovalID string          `json:"approvalId,omitempty"`
	PlannedSeq int             `json:"plannedSeq"` // the trace event that planned it
	// EvaluationID names the replay or shadow evaluation of the run that
	// would have caused the side effect again: suppressed, never done.
	EvaluationID string    `json:"evaluationId,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// SideEffectStore persists side-effect records.
type SideEffectStore interface {
	// AddSideEffect stores e.
	AddSideEffect(ctx context.Context, e *SideEffect) error
	// SideEffects returns a run's records, oldest first.
	SideEffects(ctx context.Context, tenantID, runID string) ([]SideEffect, error)
	// ExecuteSideEffect moves the oldest planned record of the run's tool
	// to executed, reporting whether there was one.
	ExecuteSideEffect(ctx context.Context, tenantID, runID, toolName string, at time.Time) (bool, error)
}

// NewSideEffect returns a planned record of a traced side_effect.planned
// event, moved to suppressed when the run's mode says so.
func NewSideEffect(tenantID, runID, mode string, e Event, toolName string, level int, payload json.RawMessage) *SideEffect {
	se := &SideEffect{ID: ids.New("se"), TenantID: tenantID, RunID: runID, ToolName: toolName, Level: level,
		Payload: payload, State: EffectPlanned, PlannedSeq: e.Seq, CreatedAt: e.At, UpdatedAt: e.At}
	if SuppressesSideEffects(mode) {
		se.State, se.Reason = EffectSuppressed, "side effects of "+mode+" runs are suppressed"
	}
	return se
}

// NewSuppressed returns the record of a side effect that an evaluation of
// mode (replay or shadow) of the run, evaluationID, would have caused
// again had it acted the run out: recorded as suppressed, never done.
// plannedSeq is the trace event that planned the original, or 0 for a tool
// call of the run's answer.
func NewSuppressed(tenantID, runID, evaluationID, mode, toolName string, level int, payload json.RawMessage, plannedSeq int, at time.Time) SideEffect {
	return SideEffect{ID: ids.New("se"), TenantID: tenantID, RunID: runID, ToolName: toolName, Level: level, Payload: payload,
		State: EffectSuppressed, Reason: "side effects of " + mode + " runs are suppressed", PlannedSeq: plannedSeq,
		EvaluationID: evaluationID, CreatedAt: at, UpdatedAt: at}
}
