package policy

import (
	"sync/atomic"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// Evaluate decides on in against the set's rules of target t. It compiles
// nothing: every program was built at load.
func (s *Set) Evaluate(t Target, in *Input) Verdict {
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
	act := &activation{in: in}
	for _, r := range rules {
		out, _, err := r.program.Eval(act)
		res := RuleResult{ID: r.ID, Effect: r.Effect, Reason: r.Reason}
		switch {
		case err != nil:
			if r.Effect == Allow {
				continue // an allow rule that cannot decide allows nothing
			}
			res.Error = err.Error()
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

// noArgs stands in for arguments never set.
var noArgs = NewArgs(nil)

// activation hands the input to CEL by name, with no map built per call.
type activation struct{ in *Input }

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
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// Engine holds the current set and replaces it on reload. Readers take the
// set once per request and keep it for that request.
type Engine struct {
	dir string
	set atomic.Pointer[Set]
}

// NewEngine loads dir.
func NewEngine(dir string) (*Engine, error) {
	e := &Engine{dir: dir}
	set, err := Load(dir)
	if err != nil {
		return nil, err
	}
	e.set.Store(set)
	return e, nil
}

// Set returns the rules in force.
func (e *Engine) Set() *Set { return e.set.Load() }

// Reload loads the folder again. On any error the rules in force stay and
// the error says why.
func (e *Engine) Reload() error {
	set, err := Load(e.dir)
	if err != nil {
		return err
	}
	e.set.Store(set)
	return nil
}
