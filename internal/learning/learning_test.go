package learning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/svc-gateway/svc/internal/errs"
)

func TestBetaQuantile(t *testing.T) {
	// Beta(1, 1) is uniform; Beta(a, 1) has CDF x^a.
	assert.InDelta(t, 0.05, BetaQuantile(0.05, 1, 1), 1e-8)
	assert.InDelta(t, math.Pow(0.05, 1.0/20), BetaQuantile(0.05, 20, 1), 1e-8)
	// Symmetry: I_x(a, b) = 1 − I_{1−x}(b, a).
	assert.InDelta(t, 1-RegIncBeta(0.3, 7, 4), RegIncBeta(0.7, 4, 7), 1e-12)
	// A known value: I_0.5(2, 3) = 11/16.
	assert.InDelta(t, 11.0/16, RegIncBeta(0.5, 2, 3), 1e-12)

	c := Posterior(0, 0)
	assert.InDelta(t, 1.0, c.Alpha, 0)
	assert.InDelta(t, 1.0, c.Beta, 0)
	assert.InDelta(t, 0.5, c.Mean, 1e-12)
	// 40 of 40 agree: the lower bound is 0.05^(1/41) ≈ 0.930.
	assert.InDelta(t, math.Pow(0.05, 1.0/41), Posterior(40, 0).Lower, 1e-8)
	assert.Less(t, Posterior(36, 4).Lower, 0.9)
}

func TestShapeSlots(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"Triage."},` +
		`{"role":"user","content":"Subject: Card declined\n\nMy card: it fails.\nOrder: 12"}]}`)
	sh, err := ParseShape("app", body)
	require.NoError(t, err)
	assert.Equal(t, []Slot{{"subject", "Card declined"}, {"text", "My card: it fails.\nOrder: 12"}}, sh.Slots)
	other, err := ParseShape("app", []byte(`{"model":"m","messages":[{"role":"system","content":"Triage."},`+
		`{"role":"user","content":"Subject: Other\n\nSomething else entirely"}]}`))
	require.NoError(t, err)
	assert.Equal(t, sh.Key, other.Key, "the varying parts do not change the pattern")
	for _, b := range []string{
		`{"model":"m2","messages":[{"role":"system","content":"Triage."},{"role":"user","content":"Subject: x\n\ny"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"Other."},{"role":"user","content":"Subject: x\n\ny"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"Triage."},{"role":"user","content":"Title: x\n\ny"}]}`,
		`{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"system","content":"Triage."},{"role":"user","content":"Subject: x\n\ny"}]}`,
		`{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"system","content":"Triage."},{"role":"user","content":"Subject: x\n\ny"}]}`,
	} {
		o, err := ParseShape("app", []byte(b))
		require.NoError(t, err)
		assert.NotEqual(t, sh.Key, o.Key, b)
	}
	o, _ := ParseShape("other-app", body)
	assert.NotEqual(t, sh.Key, o.Key, "the app is part of the shape")
	_, err = ParseShape("app", []byte(`{"model":"m","messages":[{"role":"system","content":"x"}]}`))
	assert.ErrorIs(t, err, ErrNoShape)
}

func shapeFor(tb testing.TB, user string) Shape {
	sh, err := ShapeOf("app", "m", []Message{{Role: "system", Content: "s"}, {Role: "user", Content: user}}, "", nil)
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
	cand, rep := Synthesize(ex, Defaults)
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
	cand, rep := Synthesize(ex, Defaults)
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
	cand, rep := Synthesize(ex, Defaults)
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
	cand, rep := Synthesize([]Example{{RunID: "run_1", Shape: shapeFor(t, "x"), Output: "y"}}, Defaults)
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

func TestRequestsAnArtifactMayNotAnswerHaveNoShape(t *testing.T) {
	const user = `{"role":"user","content":"Is this safe? Answer yes or no."}`
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Is this safe?"},{"type":"image_url","image_url":{"url":"https://x/1.png"}}]}]}`,
		`{"model":"m","messages":[` + user + `],"functions":[{"name":"refund"}]}`,
		`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"refund"}}],"tool_choice":"required"}`,
		`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"refund"}}],"tool_choice":{"type":"function","function":{"name":"refund"}}}`,
		`{"model":"m","messages":[` + user + `],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{}}}}`,
		`{"model":"m","messages":[` + user + `],"n":3}`,
		`{"model":"m","messages":[` + user + `],"logprobs":true}`,
	} {
		_, err := ParseShape("app", []byte(body))
		if err != ErrNoShape {
			t.Errorf("%s: got %v, want ErrNoShape", body, err)
		}
	}
	if _, err := ParseShape("app", []byte(`{"model":"m","messages":[`+user+`],"tool_choice":"auto","n":1}`)); err != nil {
		t.Errorf("a plain request has a shape: %v", err)
	}
}

func TestTextPartsShapeAsTheGatewayJoinsThem(t *testing.T) {
	parts, err := ParseShape("app", []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Subject: a"},{"type":"text","text":"b"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gateway, err := ShapeOf("app", "m", []Message{{Role: "user", Content: "Subject: a\nb"}}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if parts.Key != gateway.Key {
		t.Fatal("a stored request with text parts must have the key the gateway computes for it")
	}
}

func TestReadReplySeesToolCalls(t *testing.T) {
	for body, want := range map[string]bool{
		`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"refund","arguments":"{}"}}]}}]}`: true,
		`{"choices":[{"message":{"content":null,"function_call":{"name":"refund","arguments":"{}"}}}]}`:                                        true,
		`{"chunks":[{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"refund"}}]}}]}]}`:                             true,
		`{"choices":[{"message":{"content":"ok","tool_calls":null}}]}`:                                                                         false,
		`{"choices":[{"message":{"content":"ok","tool_calls":[]}}]}`:                                                                           false,
	} {
		if got := ReadReply([]byte(body)).ToolCall; got != want {
			t.Errorf("%s: got %v", body, got)
		}
	}
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
	if got, ok := c.Answer(Shape{Slots: []Slot{{Name: "text", Value: "refund my card charge"}}}); !ok || got != "billing" {
		t.Fatalf("a plain request: %q %v", got, ok)
	}
	padding := strings.Repeat("lorem ipsum dolor sit amet consectetur adipiscing elit sed do ", 5)
	if _, ok := c.Answer(Shape{Slots: []Slot{{Name: "text", Value: "refund my card charge " + padding}}}); ok {
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
		live     Reply
		want     string
	}{
		{"billing", true, Reply{Text: "billing", HasText: true}, OutcomePass},
		{"billing", true, Reply{Text: "bug", HasText: true}, OutcomeFail},
		{"", false, Reply{Text: "bug", HasText: true}, OutcomeAbstain},
		{"ok", true, Reply{ToolCall: true}, OutcomeFail},
	} {
		got, _ := JudgeShadow(c.answer, c.answered, c.live)
		assert.Equal(t, c.want, got, "%+v", c)
	}
}

// shadowStore stores shadow evidence in memory; reading an artifact's
// evaluations fails for badEvals, storing them for badStore.
type shadowStore struct {
	Store
	arts     map[string]Artifact
	stored   map[string][]Evaluation
	badEvals string
	badStore string
	checks   map[string]int // quarantine checks made, by artifact
}

func (s *shadowStore) AddEvaluations(_ context.Context, _, id string, evals []Evaluation, _ time.Time) (Artifact, error) {
	if id == s.badStore {
		return Artifact{}, errors.New("disk full")
	}
	a, ok := s.arts[id]
	if !ok {
		return Artifact{}, errs.NotFoundf("artifact not found")
	}
	for _, e := range evals {
		a.Count(e.Kind, e.Outcome)
	}
	s.arts[id] = a
	s.stored[id] = append(s.stored[id], evals...)
	return a, nil
}

func (s *shadowStore) Artifact(_ context.Context, _, id string) (Artifact, error) {
	a, ok := s.arts[id]
	if !ok {
		return Artifact{}, errs.NotFoundf("artifact not found")
	}
	return a, nil
}

func (s *shadowStore) Evaluations(_ context.Context, _, id string, _ int) ([]Evaluation, error) {
	s.checks[id]++
	if id == s.badEvals {
		return nil, errors.New("database is locked")
	}
	return s.stored[id], nil
}

// One artifact's failure does not keep the others' evidence from being
// stored; what failed is tried again at the next flush; a tenant is told
// of its own failures only; evidence of an artifact that is gone goes.
func TestFlushShadowStoresTheOthersAndRetriesAFailure(t *testing.T) {
	st := &shadowStore{
		arts: map[string]Artifact{
			"art_promoted": {ID: "art_promoted", TenantID: "t", State: ArtifactPromoted, ReplayPass: 100},
			"art_lost":     {ID: "art_lost", TenantID: "t", State: ArtifactShadow},
			"art_shadow":   {ID: "art_shadow", TenantID: "t", State: ArtifactShadow},
			"art_other":    {ID: "art_other", TenantID: "u", State: ArtifactShadow},
		},
		stored:   map[string][]Evaluation{},
		checks:   map[string]int{},
		badEvals: "art_promoted",
		badStore: "art_lost",
	}
	s := New(Options{Store: st})
	// The failing artifacts come first: the ones after them are stored all
	// the same.
	s.RecordShadow("t", "art_promoted", "run_1", OutcomePass, "", "billing", "billing")
	s.RecordShadow("t", "art_lost", "run_2", OutcomePass, "", "billing", "billing")
	s.RecordShadow("t", "art_shadow", "run_3", OutcomeFail, "the live answer differs", "billing", "bug")
	s.RecordShadow("t", "art_shadow", "run_4", OutcomePass, "", "bug", "bug")
	s.RecordShadow("u", "art_other", "run_5", OutcomePass, "", "bug", "bug")
	s.RecordShadow("t", "art_deleted", "run_6", OutcomePass, "", "bug", "bug")

	ctx := context.Background()
	require.NoError(t, s.flushShadowFor(ctx, "u"), "another tenant's failures are not this tenant's")
	assert.Len(t, st.stored["art_promoted"], 1)
	assert.Len(t, st.stored["art_shadow"], 2, "one artifact's failure does not drop the others' evidence")
	assert.Len(t, st.stored["art_other"], 1)
	assert.Equal(t, 1, st.arts["art_shadow"].ShadowPass)
	assert.Equal(t, 1, st.arts["art_shadow"].ShadowFail)

	err := s.flushShadowFor(ctx, "t")
	require.Error(t, err, "what failed is tried again, and reported to its tenant")
	assert.ErrorContains(t, err, "checking artifact art_promoted for quarantine: database is locked")
	assert.ErrorContains(t, err, "storing the shadow evaluations of artifact art_lost: disk full")
	assert.Equal(t, 2, st.checks["art_promoted"], "the failed quarantine check is made again")
	assert.Len(t, st.stored["art_promoted"], 1, "its stored evidence is not stored twice")

	st.badEvals, st.badStore = "", ""
	require.NoError(t, s.FlushShadow(ctx))
	assert.Len(t, st.stored["art_lost"], 1, "evidence a failed store kept is stored once the store is back")
	assert.Equal(t, 3, st.checks["art_promoted"])
	assert.Empty(t, st.stored["art_deleted"], "evidence of an artifact that is gone is dropped")
	require.NoError(t, s.FlushShadow(ctx))
	assert.Equal(t, 3, st.checks["art_promoted"], "nothing is left pending once it succeeded")
	assert.Empty(t, s.shadow.pending, "nothing is kept, the evidence of the artifact that is gone included")
	assert.Empty(t, s.shadow.recheck)
}
