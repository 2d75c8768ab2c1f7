package policy

import (
	"context"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the policy file parser: it must return
// rules or an error, never panic, and every rule it returns must evaluate.
func FuzzParse(f *testing.F) {
	f.Add([]byte(typicalRules))
	f.Add([]byte(`{"policies": [{"id": "j", "target": "tool", "when": "tool.args.x > 1", "effect": "deny"}]}`))
	f.Add([]byte("policies:\n  - id: a\n    target: web\n    when: web.fields['k'] == 'v'\n    effect: require_approval\n"))
	f.Add([]byte("policies: [\n"))
	f.Add([]byte("policies:\n  - id: &a x\n    target: *a\n"))
	env, err := newEnv()
	if err != nil {
		f.Fatal(err)
	}
	impls, err := bindings(env)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rules, err := parse(env, impls, "fuzz.yaml", b)
		if err != nil {
			return
		}
		set := &Set{byTarget: map[Target][]*Rule{}}
		for _, r := range rules {
			set.byTarget[r.Target] = append(set.byTarget[r.Target], r)
		}
		for _, target := range []Target{Chat, Tool, Web} {
			v := set.Evaluate(context.Background(), target, chatInput())
			if v.Decision != Allow && v.Decision != Deny && v.Decision != RequireApproval {
				t.Fatalf("decision %q", v.Decision)
			}
		}
	})
}
