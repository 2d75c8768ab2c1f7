package policy

import "time"

// What a condition may cost, in cost units (see meter.go and cost.go): one
// per step of a comprehension's body at each iteration, one per function
// call, a tenth of one per byte a call reads and one per byte it makes. A condition's limit grows with the
// size of its input, so that work in proportion to the input passes on any
// request the body limit admits, and only work that grows faster than the
// input (a replacement, a join or a pattern the request itself supplies)
// is stopped. See docs/policies/README.md.
const (
	// BaseCost is what any condition may cost, whatever its input: enough
	// for nested comprehensions over short lists.
	BaseCost = 100_000
	// CostPerByte is what a condition may cost per byte of its input:
	// enough to read every message dozens of times over, or to walk a
	// message character by character with a few comparisons at each.
	CostPerByte = 64
	// WhenBytesPerUnit: a condition may cost one more unit per byte of
	// input for each this many bytes of its own text, so that a longer
	// condition, which asks more of the input, may do more; up to
	// MaxWhenUnits more (a condition of 4 KiB).
	WhenBytesPerUnit = 16
	MaxWhenUnits     = 256
)

// The deadline of an evaluation: every rule of one evaluation must be done
// within DeadlineBase plus DeadlinePerMiB for each MiB of input. It stops
// what the cost limit measures only roughly (the time an iteration or a
// pattern takes), far above what a rule that reads its input a few times
// over takes, even on a busy machine: a benign request must not fail
// closed because the host was slow.
const (
	DeadlineBase   = time.Second
	DeadlinePerMiB = time.Second
)

// deadlineScale stretches every deadline; tests built with the race
// detector, which slows CEL down about tenfold, raise it.
var deadlineScale time.Duration = 1

// costLimit is the limit of condition when on an input of size bytes.
func costLimit(when string, size int) uint64 {
	return BaseCost + uint64(CostPerByte+min(len(when)/WhenBytesPerUnit, MaxWhenUnits))*uint64(size)
}

// deadline is how long an evaluation on an input of n bytes may take.
func deadline(n int) time.Duration {
	return deadlineScale * (DeadlineBase + time.Duration(float64(DeadlinePerMiB)*float64(n)/(1<<20)))
}

// size is how many bytes of in the rules of target t can read: its strings,
// a few bytes for each number or flag of a tool call's arguments, and one
// for each element of a list or map, so that a list of empty texts still
// counts for its length.
func (in *Input) size(t Target) int {
	n := len(in.Tenant) + len(in.Mode) + len(in.Agent.Name) + len(in.Agent.Trust)
	switch t {
	case Chat:
		n += in.Request.size()
	case Provider:
		c := &in.Candidate
		n += in.Request.size() + len(c.Name) + len(c.Plugin) + len(c.Model)
	case Tool:
		n += len(in.Tool.Name) + in.Tool.Args.size
	case Web:
		w := &in.Web
		n += len(w.Action) + len(w.URL) + len(w.Host)
		for k, v := range w.Fields {
			n += 1 + len(k) + len(v)
		}
	}
	return n
}

// size is how many bytes of the request a condition can read.
func (r *Request) size() int {
	n := len(r.Model) + len(r.App) + len(r.Agent) + len(r.Subject)
	for i := range r.Messages {
		n += 1 + len(r.Messages[i].Role) + len(r.Messages[i].Content)
	}
	for _, name := range r.Tools {
		n += 1 + len(name)
	}
	for _, name := range r.Providers {
		n += 1 + len(name)
	}
	return n
}

// jsonSize is the size of decoded JSON as a condition reads it.
func jsonSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case map[string]any:
		n := 0
		for k, e := range v {
			n += 1 + len(k) + jsonSize(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range v {
			n += 1 + jsonSize(e)
		}
		return n
	}
	return 8 // a number, a flag or null
}
