package policy

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// Evaluate decides on in against the set's rules of target t. It compiles
// nothing: every program was built at load. Each rule runs under a cost
// limit that grows with the size of the input, and all of them before one
// deadline (see limit.go), or ctx's when it is sooner; ctx ending stops
// them too. A rule that cannot
// finish, or fails otherwise, never lets the request through: a deny or
// require_approval rule counts with its error (Verdict.Failed), an allow
// rule allows nothing.
func (s *Set) Evaluate(ctx context.Context, t Target, in *Input) Verdict {
	v := Verdict{Decision: Allow, Rules: []RuleResult{}}
	rules := s.byTarget[t]
	if len(rules) == 0 {
		return v
	}
	if in.Tool.Args.Mapper == nil {
		cp := *in
		cp.Tool.Args = noArgs
		in = &cp
	}
	size := in.size(t)
	act := &activation{in: in}
	act.meter.due, act.meter.ctx = time.Now().Add(deadline(size)), ctx
	if d, ok := ctx.Deadline(); ok && d.Before(act.meter.due) {
		act.meter.due = d
	}
	for _, r := range rules {
		limit := costLimit(r.When, size)
		act.meter.start(limit)
		var (
			out ref.Val
			err error
		)
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case !time.Now().Before(act.meter.due):
			err = errDeadline
		default:
			out, _, err = r.program.Eval(act)
		}
		res := RuleResult{ID: r.ID, Effect: r.Effect, Reason: r.Reason}
		switch {
		case err != nil:
			if r.Effect == Allow {
				v.AllowErrors++ // an allow rule that cannot decide allows nothing
				continue
			}
			res.Error = describe(err, limit, size)
			res.Reason += " (the condition failed: " + res.Error + ")"
		case out != types.True:
			continue
		}
		v.Rules = append(v.Rules, res)
		if r.Effect.Strength() > v.Decision.Strength() {
			v.Decision = r.Effect
		}
	}
	return v
}

// errDeadline stands for the evaluation's deadline having passed before a
// rule started.
var errDeadline = errors.New("deadline exceeded")

// describe is the error of a rule that failed, as its verdict says it.
func describe(err error, limit uint64, size int) string {
	var stopped interpreter.EvalCancelledError
	switch {
	case errors.As(err, &stopped) && stopped.Cause == interpreter.CostLimitExceeded:
		return fmt.Sprintf("stopped by its cost limit of %d units for an input of %d bytes: %s", limit, size, stopped.Message)
	case errors.Is(err, context.Canceled), errors.As(err, &stopped) && stopped.Message == msgEnded:
		return "stopped: the request ended"
	case errors.Is(err, errDeadline), errors.Is(err, context.DeadlineExceeded), errors.As(err, &stopped):
		return fmt.Sprintf("stopped by the evaluation's deadline of %s for an input of %d bytes", deadline(size).Round(time.Millisecond), size)
	}
	return err.Error()
}

// noArgs stands in for arguments never set.
var noArgs = NewArgs(nil)

// activation hands the input to CEL by name, with no map built per call,
// and carries the evaluation's meter.
type activation struct {
	in    *Input
	meter meter
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "tenant":
		return a.in.Tenant, true
	case "mode":
		return a.in.Mode, true
	case "request":
		return &a.in.Request, true
	case "tool":
		return &a.in.Tool, true
	case "web":
		return &a.in.Web, true
	case "agent":
		return &a.in.Agent, true
	case "provider":
		return &a.in.Candidate, true
	case "spend":
		return &a.in.Spend, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// Engine holds the current set and replaces it on reload. Readers take the
// set once per request and keep it for that request.
type Engine struct {
	dir    string
	now    func() time.Time
	set    atomic.Pointer[Set]
	status atomic.Pointer[Status]
	mu     sync.Mutex // one reload at a time, so each reports its own outcome
}

// Status is the outcome of the last load or reload of the folder. Rules
// counts the rules in force after it: the last good set's when it failed.
type Status struct {
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
	Rules int       `json:"rules"`
}

// NewEngine loads dir.
func NewEngine(dir string) (*Engine, error) {
	return newEngine(dir, time.Now)
}

// newEngine is NewEngine with the clock that stamps each load's Status.
func newEngine(dir string, now func() time.Time) (*Engine, error) {
	e := &Engine{dir: dir, now: now}
	set, err := Load(dir)
	if err != nil {
		return nil, err
	}
	e.set.Store(set)
	e.status.Store(&Status{At: now().UTC(), OK: true, Rules: len(set.rules)})
	return e, nil
}

// Set returns the rules in force.
func (e *Engine) Set() *Set { return e.set.Load() }

// Status returns the outcome of the last load or reload.
func (e *Engine) Status() Status { return *e.status.Load() }

// Reload loads the folder again. On any error the rules in force stay and
// the error says why; either way the Status it returns is the Engine's
// from then on. The error names files relative to the folder, since it is
// shown to API callers, who need not know where the folder is.
func (e *Engine) Reload() (Status, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	set, err := Load(e.dir)
	st := &Status{At: e.now().UTC(), OK: err == nil}
	if err != nil {
		err = errors.New(e.relative(err.Error()))
		st.Error, st.Rules = err.Error(), len(e.Set().rules)
	} else {
		e.set.Store(set)
		st.Rules = len(set.rules)
	}
	e.status.Store(st)
	return *st, err
}

// relative is msg with the folder's path taken out of the file names in it.
func (e *Engine) relative(msg string) string {
	if e.dir == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, e.dir+string(filepath.Separator), "")
	return strings.ReplaceAll(msg, e.dir, "the policy folder")
}
