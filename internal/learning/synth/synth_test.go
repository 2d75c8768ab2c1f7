package synth

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/learning/shape"
)

func shapeFor(tb testing.TB, user string) shape.Shape {
	sh, err := shape.Of("app", "m", []shape.Message{{Role: "system", Content: "s"}, {Role: "user", Content: user}}, "", nil)
	require.NoError(tb, err)
	return sh
}

func TestSynthesizeTemplate(t *testing.T) {
	var ex []Example
	for i := range 200 {
		name := fmt.Sprintf("Customer%03d", i)
		ex = append(ex, Example{RunID: fmt.Sprintf("run_t%d", i), Shape: shapeFor(t, "Name: "+name+"\n\nplease greet"),
			Output: "Hello " + name + ", thanks for writing."})
	}
	cand, rep := Fit(ex, Defaults)
	require.NotNil(t, cand, rep.Reason)
	assert.Equal(t, TypeTemplate, cand.Type)
	a, err := Compile(cand.Type, cand.Representation)
	require.NoError(t, err)
	got, ok := a.Answer(shapeFor(t, "Name: Ada\n\nplease greet"))
	assert.True(t, ok)
	assert.Equal(t, "Hello Ada, thanks for writing.", got)
}

func TestSynthesizeExtractor(t *testing.T) {
	var ex []Example
	for i := range 200 {
		order := fmt.Sprintf("A-%04d", i)
		out, _ := json.Marshal(map[string]string{"order": order, "intent": "refund"})
		ex = append(ex, Example{RunID: fmt.Sprintf("run_x%d", i), Shape: shapeFor(t, "Order: "+order+"\n\nI want my money back"),
			Output: string(out)})
	}
	cand, rep := Fit(ex, Defaults)
	require.NotNil(t, cand, rep.Reason)
	assert.Equal(t, TypeExtractor, cand.Type, rep.Reason)
	a, err := Compile(cand.Type, cand.Representation)
	require.NoError(t, err)
	got, ok := a.Answer(shapeFor(t, "Order: Z-9\n\nrefund please"))
	assert.True(t, ok)
	assert.JSONEq(t, `{"order":"Z-9","intent":"refund"}`, got)
}

func TestSynthesizeLookup(t *testing.T) {
	capitals := map[string]string{"France": "Paris", "Italy": "Rome", "Spain": "Madrid", "Peru": "Lima", "Japan": "Tokyo"}
	var ex []Example
	i := 0
	for round := range 30 {
		for country, city := range capitals {
			q := "What is the capital of " + country + "?"
			if round%2 == 1 {
				q = "what is the capital of  " + country + "?"
			}
			ex = append(ex, Example{RunID: fmt.Sprintf("run_l%d", i), Shape: shapeFor(t, q), Output: city})
			i++
		}
	}
	cand, rep := Fit(ex, Defaults)
	require.NotNil(t, cand, rep.Reason)
	assert.Equal(t, TypeLookup, cand.Type, rep.Reason)
	a, err := Compile(cand.Type, cand.Representation)
	require.NoError(t, err)
	got, ok := a.Answer(shapeFor(t, "What is the capital of Peru?"))
	assert.True(t, ok)
	assert.Equal(t, "Lima", got)
	_, ok = a.Answer(shapeFor(t, "What is the capital of Chile?"))
	assert.False(t, ok, "an input never seen is not guessed")
}

func TestSynthesizeTooFewRuns(t *testing.T) {
	cand, rep := Fit([]Example{{RunID: "run_1", Shape: shapeFor(t, "x"), Output: "y"}}, Defaults)
	assert.Nil(t, cand)
	assert.Contains(t, rep.Reason, "too few runs")
}

func TestGateAndQuarantine(t *testing.T) {
	a := &Artifact{State: ArtifactShadow}
	err := Defaults.Gate(a)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "replay evidence")
	assert.Contains(t, err.Error(), "shadow evidence")
	for range 30 {
		a.Count(EvalReplay, OutcomePass)
	}
	a.Count(EvalReplay, OutcomeAbstain)
	for range 20 {
		a.Count(EvalShadow, OutcomePass)
	}
	require.NoError(t, Defaults.Gate(a))
	assert.Equal(t, 1, a.Abstentions)
	assert.InDelta(t, 51.0, a.Alpha, 0)
	assert.InDelta(t, 1.0, a.Beta, 0)
	a.State = ArtifactPromoted
	assert.False(t, Defaults.ShouldQuarantine(a))
	n := 0
	for !Defaults.ShouldQuarantine(a) {
		a.Count(EvalLive, OutcomeFail)
		n++
	}
	assert.Equal(t, n, a.LiveFail)
	assert.Less(t, n, 6, "a handful of failures turns 50 passes")
	a.State = ArtifactRetired
	assert.Error(t, Defaults.Gate(a))
}

func TestPatternLifecycle(t *testing.T) {
	var s Stats
	p := &Pattern{}
	at := time.Unix(1e9, 0)
	for i := range 40 {
		label := []string{"billing", "bug"}[i%2]
		s.Add(shapeFor(t, fmt.Sprintf("ticket %d", i)), label, true, 0.002, 900, at)
	}
	p.Apply(&s)
	assert.Equal(t, 40, p.RunCount)
	assert.InDelta(t, 0.002, p.AvgCostUSD, 1e-12)
	assert.InDelta(t, 900, p.AvgLatencyMS, 1e-9)
	assert.InDelta(t, 1.0, p.StabilityScore, 1e-12, "every answer is a short label")
	assert.True(t, p.Advance(Defaults, nil))
	assert.Equal(t, PatternCandidate, p.State)
	assert.True(t, p.WantsSynthesis())
	p.SynthesizedAt = 40
	assert.False(t, p.WantsSynthesis())
	assert.True(t, p.Advance(Defaults, []string{ArtifactShadow}))
	assert.Equal(t, PatternShadow, p.State)
	assert.True(t, p.Advance(Defaults, []string{ArtifactPromoted, ArtifactRetired}))
	assert.Equal(t, PatternPromoted, p.State)
	assert.True(t, p.Advance(Defaults, []string{ArtifactQuarantined}))
	assert.Equal(t, PatternRetired, p.State)
	assert.False(t, p.Advance(Defaults, nil), "a retired pattern waits for an operator")

	// Corrections count against stability.
	s.Corrections = 20
	q := &Pattern{State: PatternCandidate}
	q.Apply(&s)
	assert.InDelta(t, 0.5, q.StabilityScore, 1e-12)
	assert.True(t, q.Advance(Defaults, nil))
	assert.Equal(t, PatternObserved, q.State)
	q.Ignore()
	assert.False(t, q.Advance(Defaults, []string{ArtifactPromoted}), "negative is final")

	// Repeated inputs with changing answers are unstable.
	var r Stats
	for i := range 40 {
		r.Add(shapeFor(t, "same question"), fmt.Sprintf("answer %d", i%4), true, 0, 0, at)
	}
	assert.InDelta(t, 0.25, r.Consistency(), 1e-12)
	assert.Greater(t, Optimizable(1, 300, 0.002), Optimizable(1, 30, 0.002))
	assert.Greater(t, Optimizable(1, 300, 0.002), Optimizable(1, 300, 0))
}

func TestFailsShadow(t *testing.T) {
	a := &Artifact{State: ArtifactShadow, ReplayPass: 30}
	for range 30 {
		a.Count(EvalShadow, OutcomePass)
		a.Count(EvalShadow, OutcomeFail)
	}
	assert.True(t, Defaults.FailsShadow(a))
	b := &Artifact{State: ArtifactShadow, ReplayPass: 30}
	for range 10 {
		b.Count(EvalShadow, OutcomeFail)
	}
	assert.False(t, Defaults.FailsShadow(b), "not enough shadow evidence yet")
}

func TestClassifierAbstainsOnPaddedText(t *testing.T) {
	docs := [][]string{}
	y := []int{}
	for range 20 {
		docs = append(docs, []string{"invoice", "refund", "charge", "card"}, []string{"crash", "error", "bug", "stack"})
		y = append(y, 0, 1)
	}
	c := fitNB(docs, y, []string{"billing", "bug"})
	c.Margin = 0
	if got, ok := c.Answer(shape.Shape{Slots: []shape.Slot{{Name: "text", Value: "refund my card charge"}}}); !ok || got != "billing" {
		t.Fatalf("a plain request: %q %v", got, ok)
	}
	padding := strings.Repeat("lorem ipsum dolor sit amet consectetur adipiscing elit sed do ", 5)
	if _, ok := c.Answer(shape.Shape{Slots: []shape.Slot{{Name: "text", Value: "refund my card charge " + padding}}}); ok {
		t.Fatal("text mostly unknown to the model must make it abstain")
	}
}

func TestQuarantineSeesEvidenceTurn(t *testing.T) {
	evs := func(outcomes ...string) []Evaluation {
		out := make([]Evaluation, len(outcomes))
		for i, o := range outcomes {
			out[i] = Evaluation{Kind: EvalLive, Outcome: o}
		}
		return out
	}
	repeat := func(o string, n int) []string { return slices.Repeat([]string{o}, n) }
	turned := append(repeat(OutcomeFail, 12), repeat(OutcomePass, 100)...) // newest first
	assert.True(t, Defaults.TurnedRecently(evs(turned...)), "a run of failures after long success")
	assert.False(t, Defaults.TurnedRecently(evs(append(repeat(OutcomeFail, 2), repeat(OutcomePass, 60)...)...)), "two failures are noise")
	assert.False(t, Defaults.TurnedRecently(evs(repeat(OutcomeFail, 5)...)), "too little evidence")
	replays := make([]Evaluation, 40)
	for i := range replays {
		replays[i] = Evaluation{Kind: EvalReplay, Outcome: OutcomeFail}
	}
	assert.False(t, Defaults.TurnedRecently(replays), "only live and shadow verdicts count")
}

func TestJudgeShadow(t *testing.T) {
	for _, c := range []struct {
		answer   string
		answered bool
		live     shape.Reply
		want     string
	}{
		{"billing", true, shape.Reply{Text: "billing", HasText: true}, OutcomePass},
		{"billing", true, shape.Reply{Text: "bug", HasText: true}, OutcomeFail},
		{"", false, shape.Reply{Text: "bug", HasText: true}, OutcomeAbstain},
		{"ok", true, shape.Reply{ToolCall: true}, OutcomeFail},
	} {
		got, _ := JudgeShadow(c.answer, c.answered, c.live)
		assert.Equal(t, c.want, got, "%+v", c)
	}
}
