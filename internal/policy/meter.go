package policy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// A rule's evaluation is metered by svc, not by CEL's cost tracker: that
// tracker keeps a value per comprehension iteration and searches them at
// every step, so its own work grows with the square of the iterations
// (40,000 messages took seconds), and it charges a call only after the
// call returned, when a replacement or a join of two long texts has
// allocated its result already.
//
// The meter charges the two things that can make an evaluation's work
// grow faster than its text: comprehension iterations, counted by the list
// the comprehension walks, each one unit per step of the comprehension's
// body (as CEL charges a step); and function calls, whose
// cost is known from their arguments before they run (cost.go), and
// charged then, so that a call that alone would pass the limit never
// runs. The rest (reading a field, comparing two values, a && b) is
// bounded by the condition's own size times the calls and iterations.
//
// Each program is planned once, at load, with a decorator that puts the
// meter into its calls and comprehensions; the meter itself is per
// evaluation, found through the activation.

// meter is one evaluation's account: the units used against the rule's
// limit, and the deadline, looked at every checkEvery units.
type meter struct {
	used, limit uint64
	nextCheck   uint64
	due         time.Time
	ctx         context.Context // the caller's
}

// checkEvery is how many units pass between looks at the clock: about a
// few microseconds of work, so a look (tens of nanoseconds) is noise.
const checkEvery = 4096

// start readies m for a rule with the given limit.
func (m *meter) start(limit uint64) {
	m.used, m.limit, m.nextCheck = 0, limit, checkEvery
}

// charge adds the units of a call of function (or, with "", of an
// iteration), stopping the evaluation when they pass the limit, or when the
// deadline has passed or the caller has gone.
func (m *meter) charge(units uint64, function string) {
	m.used += units
	if m.used > m.limit || m.used < units {
		what := "an iteration"
		if function != "" {
			what = function + "()"
		}
		panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded,
			Message: fmt.Sprintf("%s would bring the cost to %d units", what, m.used)})
	}
	if m.used >= m.nextCheck {
		m.nextCheck = m.used + checkEvery
		m.check()
	}
}

// The messages of an evaluation the meter stopped for its time.
const (
	msgEnded    = "the request ended"
	msgDeadline = "deadline exceeded"
)

// check stops the evaluation when its time is up.
func (m *meter) check() {
	if err := m.ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		panic(interpreter.EvalCancelledError{Cause: interpreter.ContextCancelled, Message: msgEnded})
	}
	if m.ctx.Err() != nil || !time.Now().Before(m.due) {
		panic(interpreter.EvalCancelledError{Cause: interpreter.ContextCancelled, Message: msgDeadline})
	}
}

// meterOf finds the evaluation's meter: the activation Evaluate passed,
// beneath any comprehension's scope.
func meterOf(frame *interpreter.ExecutionFrame) *meter {
	for a := frame.Activation; a != nil; a = a.Parent() {
		if act, ok := a.(*activation); ok {
			return &act.meter
		}
	}
	return nil
}

// metering is the decorator that plans a condition's calls and
// comprehensions metered.
type metering struct {
	impls  map[string]*functions.Overload // the env's function bindings, as the planner finds them
	ranges map[int64]uint64               // the lists comprehensions walk, by id: the cost of an iteration
}

// newMetering returns the decorator for the checked condition a.
func newMetering(impls map[string]*functions.Overload, a *cel.Ast) cel.ProgramOption {
	m := &metering{impls: impls, ranges: map[int64]uint64{}}
	celast.PreOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.ComprehensionKind {
			c := e.AsComprehension()
			m.ranges[c.IterRange().ID()] = 1 + steps(c.LoopCondition()) + steps(c.LoopStep())
		}
	}))
	return cel.CustomDecoratorV2(m.decorate)
}

// steps counts the nodes of e that one evaluation of e visits at most,
// without the bodies of the comprehensions within (charged by their own
// iterations).
func steps(e celast.Expr) uint64 {
	n := uint64(1)
	switch e.Kind() {
	case celast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			n += steps(call.Target())
		}
		for _, a := range call.Args() {
			n += steps(a)
		}
	case celast.SelectKind:
		n += steps(e.AsSelect().Operand())
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			n += steps(el)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			n += steps(en.AsMapEntry().Key()) + steps(en.AsMapEntry().Value())
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			n += steps(f.AsStructField().Value())
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		n += steps(c.IterRange()) + steps(c.AccuInit()) + steps(c.Result())
	}
	return n
}

// bindings collects the implementation of every function env knows, keyed
// the way the planner looks them up: by overload id, then by name, with
// svc's own in place of the few that cost far more than their work.
func bindings(env *cel.Env) (map[string]*functions.Overload, error) {
	out := map[string]*functions.Overload{}
	for name, fn := range env.Functions() {
		overloads, err := fn.Bindings()
		if err != nil {
			return nil, err
		}
		for _, o := range overloads {
			id := o.Operator
			if id == name && len(overloads) == 2 {
				id = overloads[0].Operator // the name stands for the one overload
			}
			if faster, ok := faster[id]; ok && o.Unary != nil {
				own := *o
				own.Unary, own.Function = faster(o.Unary), nil
				o = &own
			}
			out[o.Operator] = o
		}
	}
	return out, nil
}

// faster are implementations that do what CEL's do without turning the
// text into a list of characters first (four bytes for each of its bytes,
// a hundred times slower on a long prompt). Each is given CEL's own, for
// the texts it does not handle.
var faster = map[string]func(functions.UnaryOp) functions.UnaryOp{
	"string_lower_ascii": func(cel functions.UnaryOp) functions.UnaryOp {
		return func(v ref.Val) ref.Val { return mapASCII(v, 'A', 'Z', 'a'-'A', cel) }
	},
	"string_upper_ascii": func(cel functions.UnaryOp) functions.UnaryOp {
		return func(v ref.Val) ref.Val { return mapASCII(v, 'a', 'z', 'A'-'a', cel) }
	},
}

// mapASCII shifts the ASCII letters from lo to hi of a text by delta and
// leaves every other character as it is. A text that is not UTF-8 (CEL's
// own turns each bad byte into U+FFFD) or not a text is left to cel.
func mapASCII(v ref.Val, lo, hi byte, delta int, cel functions.UnaryOp) ref.Val {
	s, ok := v.(types.String)
	if !ok || !utf8.ValidString(string(s)) {
		return cel(v)
	}
	i := 0
	for i < len(s) && (s[i] < lo || s[i] > hi) {
		i++
	}
	if i == len(s) {
		return s // nothing to change: no copy
	}
	var b strings.Builder
	b.Grow(len(s))
	start := 0
	for ; i < len(s); i++ {
		if c := s[i]; lo <= c && c <= hi {
			b.WriteString(string(s[start:i]))
			b.WriteByte(byte(int(c) + delta))
			start = i + 1
		}
	}
	b.WriteString(string(s[start:]))
	return types.String(b.String())
}

// planned are the calls the planner builds itself rather than from a
// function's binding: choices and selections, left as they are, and the
// comparisons, metered with the planner's own implementation.
var planned = map[string]*functions.Overload{
	operators.LogicalAnd: nil, operators.LogicalOr: nil, operators.Conditional: nil,
	operators.Index: nil, operators.OptSelect: nil, operators.OptIndex: nil,
	operators.Equals: {Operator: operators.Equals, Binary: types.Equal},
	operators.NotEquals: {Operator: operators.NotEquals, Binary: func(l, r ref.Val) ref.Val {
		return types.Bool(types.Equal(l, r) != types.True)
	}},
}

func (m *metering) decorate(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	if step := m.ranges[i.ID()]; step > 0 {
		return &meteredRange{InterpretableV2: i, step: step}, nil
	}
	call, ok := i.(interpreter.InterpretableCall)
	if !ok {
		return i, nil
	}
	own, isPlanned := planned[call.Function()]
	if isPlanned && own == nil {
		return i, nil
	}
	args := call.Args()
	if call.Function() == operators.In && len(args) == 2 {
		if _, ok := args[1].(interpreter.InterpretableConst); ok {
			return i, nil // membership in a written list: CEL makes it a set lookup
		}
	}
	impl := own
	if impl == nil {
		impl = m.impls[call.OverloadID()]
	}
	if impl == nil {
		impl = m.impls[call.Function()]
	}
	if impl == nil {
		return i, nil // dispatched on its receiver's type at run time; none in svc's environment
	}
	c := &meteredCall{id: call.ID(), function: call.Function(), overload: call.OverloadID(), args: args,
		impl: *impl, cost: costOf(call.Function(), call.OverloadID())}
	if c.function == overloads.Matches && len(args) == 2 {
		if pattern, ok := constString(args[1]); ok {
			// A written pattern is compiled once, here, as CEL would; its
			// matching costs less than a pattern the request supplies.
			re, err := regexp.Compile(pattern)
			if err != nil {
				return nil, err
			}
			c.impl = functions.Overload{Operator: c.overload, Binary: func(s, _ ref.Val) ref.Val {
				str, ok := s.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(s)
				}
				return types.Bool(re.MatchString(string(str)))
			}}
			c.cost = costMatchesWritten
		}
	}
	return c, nil
}

// constString is the value of a constant string argument.
func constString(i interpreter.InterpretableV2) (string, bool) {
	c, ok := i.(interpreter.InterpretableConst)
	if !ok {
		return "", false
	}
	s, ok := c.Value().(types.String)
	return string(s), ok
}

// meteredCall is a function call that charges its cost, computed from its
// arguments, before it runs, and the size of what it made after (when its
// cost did not include it). It evaluates as CEL's own calls do: strict
// calls return an error argument as their result, a binding is used when
// its first argument has the trait it needs, else the receiver is asked.
// It does not present itself as a call, so that no later planning step
// replaces it with an unmetered one.
type meteredCall struct {
	id                 int64
	function, overload string
	args               []interpreter.InterpretableV2
	impl               functions.Overload
	cost               costFunc
}

func (c *meteredCall) ID() int64 { return c.id }

func (c *meteredCall) Eval(a interpreter.Activation) ref.Val { return c.Exec(interpreter.AsFrame(a)) }

func (c *meteredCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	var buf [4]ref.Val
	vals := buf[:0]
	if len(c.args) > len(buf) {
		vals = make([]ref.Val, 0, len(c.args))
	}
	strict := !c.impl.NonStrict
	for _, a := range c.args {
		v := a.Exec(frame)
		if strict && types.IsUnknownOrError(v) {
			return v
		}
		vals = append(vals, v)
	}
	m := meterOf(frame)
	var (
		made  bool
		units uint64
	)
	if m != nil {
		var includesResult bool
		units, includesResult = c.cost(vals)
		m.charge(units, c.function)
		made = !includesResult
	}
	out := c.call(vals)
	if made {
		if n := textSize(out); n > 0 {
			m.charge(n, c.function)
		}
	}
	if m != nil && units >= checkEvery {
		m.check() // one call may have taken long: past the deadline, it stops here
	}
	return out
}

func (c *meteredCall) call(vals []ref.Val) ref.Val {
	o := &c.impl
	var arg0 ref.Val
	if len(vals) > 0 {
		arg0 = vals[0]
	}
	bound := arg0 == nil || o.OperandTrait == 0 || (o.NonStrict && types.IsUnknownOrError(arg0)) || arg0.Type().HasTrait(o.OperandTrait)
	if bound {
		switch {
		case len(vals) == 1 && o.Unary != nil:
			return types.LabelErrNode(c.id, o.Unary(arg0))
		case len(vals) == 2 && o.Binary != nil:
			return types.LabelErrNode(c.id, o.Binary(arg0, vals[1]))
		case o.Function != nil:
			return types.LabelErrNode(c.id, o.Function(vals...))
		}
	}
	if arg0 != nil && arg0.Type().HasTrait(traits.ReceiverType) {
		return types.LabelErrNode(c.id, arg0.(traits.Receiver).Receive(c.function, c.overload, vals[1:]))
	}
	return types.NewErrWithNodeID(c.id, "no such overload: %s", c.function)
}

// meteredRange is the list (or map) a comprehension walks: each step of
// the walk costs step units.
type meteredRange struct {
	interpreter.InterpretableV2
	step uint64
}

func (r *meteredRange) Eval(a interpreter.Activation) ref.Val { return r.Exec(interpreter.AsFrame(a)) }

func (r *meteredRange) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	v := r.InterpretableV2.Exec(frame)
	m := meterOf(frame)
	if m == nil {
		return v
	}
	switch v := v.(type) {
	case traits.Lister:
		return countedList{Lister: v, c: counter{m, r.step}}
	case traits.Mapper:
		return countedMap{Mapper: v, c: counter{m, r.step}}
	}
	return v
}

// counter charges each iteration of one comprehension.
type counter struct {
	m    *meter
	step uint64
}

type countedList struct {
	traits.Lister
	c counter
}

func (l countedList) Iterator() traits.Iterator {
	return counted{Iterator: l.Lister.Iterator(), c: l.c}
}

type countedMap struct {
	traits.Mapper
	c counter
}

func (l countedMap) Iterator() traits.Iterator { return counted{Iterator: l.Mapper.Iterator(), c: l.c} }

type counted struct {
	traits.Iterator
	c counter
}

func (it counted) Next() ref.Val {
	it.c.m.charge(it.c.step, "")
	return it.Iterator.Next()
}
