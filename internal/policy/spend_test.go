package policy

import (
	"context"
	"testing"
)

func TestSpendIsReadByChatRules(t *testing.T) {
	set, err := NewSet([]Rule{
		{ID: "app-cap", Target: Chat, Effect: Deny, Reason: "cap", When: `spend.app.day.usd >= 5.0`},
		{ID: "dear", Target: Chat, Effect: RequireApproval, Reason: "dear", When: `request.estimatedCostUsd > 0.5`},
		{ID: "key-tokens", Target: Chat, Effect: Deny, Reason: "tokens", When: `request.key == "key_1" && spend.key.month.tokens > 100`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !set.ReadsSpend() {
		t.Fatal("a set with a rule on spend does not say it reads spend")
	}
	cases := []struct {
		name string
		in   Input
		want Effect
		ids  []string
	}{
		{"under every limit", Input{Spend: Spend{App: SpendScope{Day: SpendWindow{USD: 4.99}}}}, Allow, nil},
		{"app at its cap", Input{Spend: Spend{App: SpendScope{Day: SpendWindow{USD: 5}}}}, Deny, []string{"app-cap"}},
		{"dear call", Input{Request: Request{EstimatedCostUSD: 0.51}}, RequireApproval, []string{"dear"}},
		{"another key's tokens", Input{Request: Request{Key: "key_2"}, Spend: Spend{Key: SpendScope{Month: SpendWindow{Tokens: 101}}}}, Allow, nil},
		{"the key's tokens", Input{Request: Request{Key: "key_1"}, Spend: Spend{Key: SpendScope{Month: SpendWindow{Tokens: 101}}}}, Deny, []string{"key-tokens"}},
	}
	for _, c := range cases {
		v := set.Evaluate(context.Background(), Chat, &c.in)
		if v.Decision != c.want || len(v.Rules) != len(c.ids) {
			t.Fatalf("%s: verdict %+v, want %s by %v", c.name, v, c.want, c.ids)
		}
		for i, id := range c.ids {
			if v.Rules[i].ID != id {
				t.Fatalf("%s: rules %+v, want %v", c.name, v.Rules, c.ids)
			}
		}
	}
}

func TestSetsWithoutSpendRulesDoNotReadIt(t *testing.T) {
	set, err := NewSet([]Rule{{ID: "a", Target: Chat, Effect: Deny, Reason: "r", When: `request.app == "spend"`},
		{ID: "b", Target: Tool, Effect: Deny, Reason: "r", When: `tool.name == "x"`}})
	if err != nil {
		t.Fatal(err)
	}
	if set.ReadsSpend() {
		t.Fatal("a set whose rules never read spend says it does")
	}
	for _, target := range []Target{Tool, Web, Provider} {
		if _, err := NewSet([]Rule{{ID: "a", Target: target, Effect: Deny, Reason: "r", When: `spend.app.day.usd > 1.0`}}); err == nil {
			t.Fatalf("a %s rule reading spend, always zero there, was compiled", target)
		}
	}
	if _, err := NewSet([]Rule{{ID: "a", Target: Chat, Effect: Deny, Reason: "r", When: `spend.app.day.dollars > 1.0`}}); err == nil {
		t.Fatal("a misspelt spend field was compiled")
	}
	if _, err := NewSet([]Rule{{ID: "a", Target: Chat, Effect: Deny, When: `true`}, {ID: "a", Target: Chat, Effect: Deny, When: `true`}}); err == nil {
		t.Fatal("two rules of one id were compiled")
	}
}

// The example rules of the policy docs load, and those on spend read it.
func TestDocsExamplesLoad(t *testing.T) {
	set, err := Load("../../docs/policies")
	if err != nil {
		t.Fatal(err)
	}
	if !set.ReadsSpend() {
		t.Fatal("the docs' spend examples do not read spend")
	}
	in := Input{Request: Request{App: "support", Model: "gpt-4o", EstimatedCostUSD: 0.01},
		Spend: Spend{App: SpendScope{Day: SpendWindow{USD: 51}, Month: SpendWindow{USD: 120}}}}
	v := set.Evaluate(context.Background(), Chat, &in)
	if v.Decision != Deny || len(v.Rules) != 1 || v.Rules[0].ID != "support-small-model-after-50-usd" {
		t.Fatalf("a big model past the daily threshold: %+v", v)
	}
	in.Request.Model = "gpt-4o-mini"
	if v := set.Evaluate(context.Background(), Chat, &in); v.Decision != Allow {
		t.Fatalf("the small model past the daily threshold: %+v", v)
	}
	in.Request.EstimatedCostUSD = 0.75
	if v := set.Evaluate(context.Background(), Chat, &in); v.Decision != RequireApproval {
		t.Fatalf("a costly call: %+v", v)
	}
}
