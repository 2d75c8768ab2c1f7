package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/functions"
	"go.yaml.in/yaml/v3"

	"github.com/svc-gateway/svc/internal/conffile"
)

// Rule is one loaded rule.
type Rule struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Target      Target `json:"target"`
	When        string `json:"when"`
	Effect      Effect `json:"effect"`
	Reason      string `json:"reason"`
	Source      string `json:"source"` // the file it came from

	program    cel.Program // planned once, metered (see meter.go)
	readsSpend bool        // the condition reads the spend variable
}

// Set is the rules loaded from a folder, grouped by target, in file-name
// and then file order. A Set never changes; a reload builds a new one.
type Set struct {
	rules      []*Rule
	byTarget   map[Target][]*Rule
	readsSpend bool // a rule reads spend (only chat rules may)
}

// ReadsSpend reports whether a chat rule of the set reads spend, so that
// a caller gathers the counters only for a set that will read them.
func (s *Set) ReadsSpend() bool { return s.readsSpend }

// NewSet compiles rules written in code rather than read from a file (a
// tenant's budgets, say): each is checked and planned as a file's rule
// is, Source naming where it came from. Ids must be distinct.
func NewSet(rules []Rule) (*Set, error) {
	env, impls, err := compiler()
	if err != nil {
		return nil, err
	}
	set := &Set{byTarget: map[Target][]*Rule{}}
	seen := map[string]bool{}
	for _, in := range rules {
		r, err := compile(env, impls, in.Source, fileRule{ID: in.ID, Description: in.Description,
			Target: string(in.Target), When: in.When, Effect: string(in.Effect), Reason: in.Reason})
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", in.ID, err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("rule %q: id already used", r.ID)
		}
		seen[r.ID] = true
		set.add(r)
	}
	return set, nil
}

// add appends r to the set.
func (s *Set) add(r *Rule) {
	s.rules = append(s.rules, r)
	s.byTarget[r.Target] = append(s.byTarget[r.Target], r)
	s.readsSpend = s.readsSpend || r.readsSpend
}

// compiler is the environment every condition is checked in and the
// metered bindings of its functions, made once: an environment never
// changes, and a tenant's budgets are compiled at each change of them.
func compiler() (*cel.Env, map[string]*functions.Overload, error) {
	c, err := compilerOnce()
	return c.env, c.impls, err
}

type compilerParts struct {
	env   *cel.Env
	impls map[string]*functions.Overload
}

var compilerOnce = sync.OnceValues(func() (compilerParts, error) {
	env, err := newEnv()
	if err != nil {
		return compilerParts{}, err
	}
	impls, err := bindings(env)
	return compilerParts{env, impls}, err
})

// Rules returns every rule of the set.
func (s *Set) Rules() []Rule {
	out := make([]Rule, len(s.rules))
	for i, r := range s.rules {
		out[i] = *r
		out[i].program, out[i].readsSpend = nil, false
	}
	return out
}

// Has reports whether any rule has target t, so that a caller can skip
// building an input no rule would read.
func (s *Set) Has(t Target) bool { return len(s.byTarget[t]) > 0 }

// file is a policy file as written.
type file struct {
	Policies []fileRule `yaml:"policies"`
}

type fileRule struct {
	ID          string `yaml:"id"`
	Description string `yaml:"description"`
	Target      string `yaml:"target"`
	When        string `yaml:"when"`
	Effect      string `yaml:"effect"`
	Reason      string `yaml:"reason"`
}

// Load reads every *.yaml, *.yml and *.json file in dir, in name order,
// and compiles their rules. An empty dir is no rules. Any problem refuses
// the whole folder, with a message naming the file and the rule.
func Load(dir string) (*Set, error) {
	set := &Set{byTarget: map[Target][]*Rule{}}
	if dir == "" {
		return set, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("policy folder: %w", err)
	}
	env, impls, err := compiler()
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := conffile.Read(path, maxFile)
		if err != nil {
			return nil, err
		}
		rules, err := parse(env, impls, e.Name(), b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, r := range rules {
			if first, dup := seen[r.ID]; dup {
				return nil, fmt.Errorf("%s: rule %q: id already used in %s", path, r.ID, first)
			}
			seen[r.ID] = e.Name()
			set.add(r)
		}
	}
	return set, nil
}

// unknownField is the YAML decoder's words for a key no rule has.
var unknownField = regexp.MustCompile(`^(line \d+): field (.+) not found in type \S+$`)

// typeProblems words the decoder's problems for a person, without the Go
// types behind them: "line 5: unknown field "efect"".
func typeProblems(te *yaml.TypeError) string {
	out := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		out[i] = unknownField.ReplaceAllString(e, `$1: unknown field "$2"`)
	}
	return strings.Join(out, "; ")
}

// maxFile bounds a policy file.
const maxFile = 1 << 20

// parse decodes one file (JSON is YAML) strictly and compiles its rules.
func parse(env *cel.Env, impls map[string]*functions.Overload, source string, b []byte) ([]*Rule, error) {
	if len(b) > maxFile {
		return nil, fmt.Errorf("file is larger than %d bytes", maxFile)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("not a policy file: %s", typeProblems(te))
		}
		return nil, fmt.Errorf("not a policy file: %w", err)
	}
	// A second document (after "---") would be silently ignored: refuse it.
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, errors.New("a policy file holds one document; put the rules of another in another file")
	}
	rules := make([]*Rule, 0, len(f.Policies))
	for i, fr := range f.Policies {
		r, err := compile(env, impls, source, fr)
		if err != nil {
			name := fr.ID
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			return nil, fmt.Errorf("rule %q: %w", name, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// compile checks a rule's condition and plans its program, metered: its
// calls and comprehensions charge the evaluation's meter (meter.go).
func compile(env *cel.Env, impls map[string]*functions.Overload, source string, fr fileRule) (*Rule, error) {
	r := &Rule{ID: strings.TrimSpace(fr.ID), Description: fr.Description, Target: Target(fr.Target),
		When: fr.When, Effect: Effect(fr.Effect), Reason: fr.Reason, Source: source}
	switch {
	case r.ID == "":
		return nil, errors.New("id is required")
	case !slices.Contains([]Target{Chat, Tool, Web, Provider}, r.Target):
		return nil, fmt.Errorf("target must be chat, tool, web or provider, not %q", fr.Target)
	case !slices.Contains([]Effect{Allow, RequireApproval, Deny}, r.Effect):
		return nil, fmt.Errorf("effect must be allow, deny or require_approval, not %q", fr.Effect)
	case r.Target == Provider && r.Effect == RequireApproval:
		// A candidate provider is judged while the call is routed: there is
		// nothing a person could approve, only a provider to use or skip.
		return nil, errors.New("effect require_approval is not allowed on target provider: a provider rule " +
			"only allows or denies a candidate provider, and a call is never held for one (use deny)")
	case strings.TrimSpace(r.When) == "":
		return nil, errors.New("when is required (a CEL expression)")
	}
	ast, iss := env.Compile(r.When)
	if iss.Err() != nil {
		return nil, fmt.Errorf("when: %w", iss.Err())
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("when must be a condition (bool), not %s", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), newMetering(impls, ast))
	if err != nil {
		return nil, fmt.Errorf("when: %w", err)
	}
	r.program = prg
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "spend" {
			r.readsSpend = true
		}
	}
	if r.readsSpend && r.Target != Chat {
		// Only a chat request is decided with its spend in hand: elsewhere
		// spend would always read zero, and the rule never match.
		return nil, fmt.Errorf("when: spend is read by chat rules only, not by a %s rule", r.Target)
	}
	return r, nil
}
