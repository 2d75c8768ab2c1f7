// Package synth is the learning loop's rules as pure functions of their
// data: a pattern's stats, scores and lifecycle; artifacts (declarative
// answers svc interprets: classifier, template, extractor, lookup), their
// Answerers and the evidence that scores them; synthesis from a pattern's
// runs with a training / holdout split; and the gates that decide creation,
// promotion and quarantine. No store, no clock, no jobs.
package synth

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/svc-gateway/svc/internal/learning/beta"
	"github.com/svc-gateway/svc/internal/learning/shape"
)

// Example is one recorded run of a pattern, as synthesis and replay read
// it.
type Example struct {
	RunID string
	Shape shape.Shape
	// Output is the answer the run's model gave.
	Output string
}

// Thresholds are the numbers the learning loop decides by. Defaults holds
// the documented values.
type Thresholds struct {
	// MinRuns and MinStability move a pattern from observed to candidate.
	MinRuns      int     `json:"minRuns"`
	MinStability float64 `json:"minStability"`
	// HoldoutShare of a pattern's runs is kept out of training and replayed.
	HoldoutShare float64 `json:"holdoutShare"`
	// MinReplay answered holdout replays and MinShadow answered shadow
	// evaluations are needed before promotion.
	MinReplay int `json:"minReplay"`
	MinShadow int `json:"minShadow"`
	// LowerBound is the least 5% posterior quantile of agreement an
	// artifact needs to be created, promoted, and to keep serving.
	LowerBound float64 `json:"lowerBound"`
	// MinServedShare is the least share of holdout runs an artifact must
	// answer (not abstain on) to be worth creating.
	MinServedShare float64 `json:"minServedShare"`
	// ClassifierPrecision is the agreement the classifier's margin is
	// calibrated to on cross-fitted training runs.
	ClassifierPrecision float64 `json:"classifierPrecision"`
	// MaxTrainingRuns bounds the runs a synthesis reads (the newest).
	MaxTrainingRuns int `json:"maxTrainingRuns"`
}

// Defaults are the documented thresholds.
var Defaults = Thresholds{
	MinRuns: 30, MinStability: 0.6, HoldoutShare: 0.25, MinReplay: 20, MinShadow: 20,
	LowerBound: 0.9, MinServedShare: 0.2, ClassifierPrecision: 0.98, MaxTrainingRuns: 5000,
}

// Candidate is an artifact synthesis produced, not yet stored.
type Candidate struct {
	Type           string
	Representation json.RawMessage
	Provenance     Provenance
	// Replay holds the holdout evaluations (pass, fail or abstain).
	Replay []Evaluation
}

// Report says what synthesis tried on a pattern and why each
// type of artifact was or was not made.
type Report struct {
	PatternID string        `json:"patternId"`
	Created   string        `json:"artifactId,omitempty"`
	Type      string        `json:"type,omitempty"`
	Reason    string        `json:"reason"`
	Attempts  []TypeAttempt `json:"attempts"`
}

// TypeAttempt is one artifact type tried.
type TypeAttempt struct {
	Type      string  `json:"type"`
	Passed    bool    `json:"passed"`
	Reason    string  `json:"reason"`
	Answered  int     `json:"answered,omitempty"`
	Agreed    int     `json:"agreed,omitempty"`
	Abstained int     `json:"abstained,omitempty"`
	Lower     float64 `json:"lowerBound,omitempty"`
}

// Holdout says whether a run belongs to the holdout split: a hash of its id
// below share, so the split is stable as runs are added.
func Holdout(runID string, share float64) bool {
	h := sha256.Sum256([]byte("svc-holdout\x00" + runID))
	return float64(binary.BigEndian.Uint64(h[:8])>>11)/float64(1<<53) < share
}

// Fit tries each type of artifact on the examples of one pattern
// (newest last), training on the training split and replaying the holdout
// split. Of those that pass the creation gate (at least MinReplay answered
// holdout runs, a share served of MinServedShare or more, and a posterior
// lower bound of LowerBound or more) it returns the one that agrees with
// the most holdout runs; on a tie the first in the order extractor,
// template, lookup, classifier. When none passes, the candidate is nil and
// the report says why each failed.
func Fit(examples []Example, th Thresholds) (*Candidate, Report) {
	rep := Report{}
	if th.MaxTrainingRuns > 0 && len(examples) > th.MaxTrainingRuns {
		examples = examples[len(examples)-th.MaxTrainingRuns:]
	}
	var train, hold []Example
	for _, e := range examples {
		if Holdout(e.RunID, th.HoldoutShare) {
			hold = append(hold, e)
		} else {
			train = append(train, e)
		}
	}
	if len(hold) < th.MinReplay {
		rep.Reason = fmt.Sprintf("too few runs: %d holdout runs, the replay gate needs %d answered", len(hold), th.MinReplay)
		return nil, rep
	}
	type builder struct {
		typ string
		fit func([]Example, Thresholds) (Answerer, any, string)
	}
	var best *Candidate
	for _, b := range []builder{
		{TypeExtractor, fitExtractor}, {TypeTemplate, fitTemplate}, {TypeLookup, fitLookup}, {TypeClassifier, fitClassifier},
	} {
		ans, repr, why := b.fit(train, th)
		att := TypeAttempt{Type: b.typ}
		if ans == nil {
			att.Reason = why
			rep.Attempts = append(rep.Attempts, att)
			continue
		}
		evals := make([]Evaluation, 0, len(hold))
		for _, e := range hold {
			ev := Evaluate(ans, EvalReplay, e)
			evals = append(evals, ev)
			switch ev.Outcome {
			case OutcomePass:
				att.Answered++
				att.Agreed++
			case OutcomeFail:
				att.Answered++
			default:
				att.Abstained++
			}
		}
		conf := beta.Posterior(att.Agreed, att.Answered-att.Agreed)
		att.Lower = conf.Lower
		served := float64(att.Answered) / float64(len(hold))
		switch {
		case att.Answered < th.MinReplay:
			att.Reason = fmt.Sprintf("answered %d of %d holdout runs; the replay gate needs %d", att.Answered, len(hold), th.MinReplay)
		case served < th.MinServedShare:
			att.Reason = fmt.Sprintf("would serve %.0f%% of holdout runs; worth making from %.0f%%", 100*served, 100*th.MinServedShare)
		case conf.Lower < th.LowerBound:
			att.Reason = fmt.Sprintf("agreed with %d of %d answered holdout runs (%.1f%%); the 5%% lower bound %.3f is below %.2f",
				att.Agreed, att.Answered, 100*float64(att.Agreed)/float64(att.Answered), conf.Lower, th.LowerBound)
		default:
			att.Passed = true
			att.Reason = fmt.Sprintf("agreed with %d of %d answered holdout runs, abstained on %d; lower bound %.3f",
				att.Agreed, att.Answered, att.Abstained, conf.Lower)
		}
		rep.Attempts = append(rep.Attempts, att)
		if !att.Passed || best != nil && att.Agreed <= best.Provenance.HoldoutAgreed {
			continue
		}
		raw, err := json.Marshal(repr)
		if err != nil {
			continue
		}
		prov := Provenance{Source: "synthesis", PatternKey: examples[0].Shape.Key, HoldoutShare: th.HoldoutShare,
			Split: "sha256(run id) below holdoutShare", HoldoutAnswered: att.Answered, HoldoutAgreed: att.Agreed,
			HoldoutAbstained: att.Abstained}
		for _, e := range train {
			prov.SourceRunIDs = append(prov.SourceRunIDs, e.RunID)
		}
		for _, e := range hold {
			prov.HoldoutRunIDs = append(prov.HoldoutRunIDs, e.RunID)
		}
		rep.Type, rep.Reason = b.typ, b.typ+": "+att.Reason
		best = &Candidate{Type: b.typ, Representation: raw, Provenance: prov, Replay: evals}
	}
	if best != nil {
		return best, rep
	}
	reasons := make([]string, 0, len(rep.Attempts))
	for _, a := range rep.Attempts {
		reasons = append(reasons, a.Type+": "+a.Reason)
	}
	rep.Reason = "no artifact reaches the gates (" + strings.Join(reasons, "; ") + ")"
	return nil, rep
}

// Evaluate scores an artifact's answer to an example against the
// example's recorded answer.
func Evaluate(a Answerer, kind string, e Example) Evaluation {
	ev := Evaluation{Kind: kind, RunID: e.RunID, Expected: Clip(e.Output)}
	got, ok := a.Answer(e.Shape)
	switch {
	case !ok:
		ev.Outcome, ev.Reason = OutcomeAbstain, "the artifact abstained"
	case Agrees(got, e.Output):
		ev.Outcome, ev.Got = OutcomePass, Clip(got)
	default:
		ev.Outcome, ev.Got, ev.Reason = OutcomeFail, Clip(got), "the answers differ"
	}
	return ev
}

// JudgeShadow decides an artifact's answer, computed beside a live call of
// its pattern, against the live reply: it agreed, it did not (or the model
// called a tool, which the artifact would have dropped), or it abstained.
func JudgeShadow(artifactAnswer string, answered bool, live shape.Reply) (outcome, reason string) {
	switch {
	case live.ToolCall && answered:
		return OutcomeFail, "the model called a tool; the artifact would have answered with text"
	case !answered:
		return OutcomeAbstain, "the artifact abstained"
	case Agrees(artifactAnswer, live.Text):
		return OutcomePass, ""
	default:
		return OutcomeFail, "the live answer differs"
	}
}

// Clip cuts an answer to what an evaluation keeps of it: 200 bytes.
func Clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	return shape.Preview(s, 200)
}

// fitTemplate finds one text that, with slot values put back, gives every
// training answer.
func fitTemplate(train []Example, _ Thresholds) (Answerer, any, string) {
	var tmpl string
	var used map[string]bool
	for i, e := range train {
		t, u := templatize(e)
		if i == 0 {
			tmpl, used = t, u
			continue
		}
		if t != tmpl {
			return nil, nil, "the answers are not one text with request values in it"
		}
	}
	if len(train) == 0 {
		return nil, nil, "no training runs"
	}
	t := &Template{Text: tmpl, Slots: sortedKeys(used)}
	return t, t, ""
}

// templatize replaces each slot value (of 3 characters or more) found in
// the answer with its placeholder, longest values first.
func templatize(e Example) (string, map[string]bool) {
	slots := append([]shape.Slot(nil), e.Shape.Slots...)
	sort.SliceStable(slots, func(i, j int) bool { return len(slots[i].Value) > len(slots[j].Value) })
	out := e.Output
	used := map[string]bool{}
	for _, s := range slots {
		if len(s.Value) >= 3 && strings.Contains(out, s.Value) {
			out = strings.ReplaceAll(out, s.Value, "{{"+s.Name+"}}")
			used[s.Name] = true
		}
	}
	return out, used
}

// fitExtractor explains each field of JSON answers as a slot value or a
// constant.
func fitExtractor(train []Example, _ Thresholds) (Answerer, any, string) {
	if len(train) == 0 {
		return nil, nil, "no training runs"
	}
	var keys []string
	fields := map[string]*ExtractField{}
	for i, e := range train {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(strings.TrimSpace(e.Output)), &obj); err != nil {
			return nil, nil, "the answers are not JSON objects"
		}
		ks := sortedKeys(obj)
		if i == 0 {
			keys = ks
		} else if strings.Join(ks, "\x00") != strings.Join(keys, "\x00") {
			return nil, nil, "the JSON answers do not share one set of fields"
		}
		for _, k := range ks {
			v := obj[k]
			f := fields[k]
			if i == 0 {
				f = &ExtractField{Name: k}
				var s string
				if json.Unmarshal(v, &s) == nil {
					for _, sl := range e.Shape.Slots {
						if strings.TrimSpace(sl.Value) == strings.TrimSpace(s) && s != "" {
							f.Slot = sl.Name
							break
						}
					}
				}
				if f.Slot == "" {
					f.Const = append(json.RawMessage(nil), v...)
				}
				fields[k] = f
				continue
			}
			if f.Slot != "" {
				var s string
				got, _ := e.Shape.Slot(f.Slot)
				if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) != strings.TrimSpace(got) {
					return nil, nil, fmt.Sprintf("field %q is not copied from the request", k)
				}
			} else if !Agrees(string(v), string(f.Const)) {
				return nil, nil, fmt.Sprintf("field %q is neither a constant nor copied from the request", k)
			}
		}
	}
	x := &Extractor{}
	for _, k := range keys {
		x.Fields = append(x.Fields, *fields[k])
	}
	return x, x, ""
}

// fitLookup keeps the answer of every input seen at least twice with one
// answer, when inputs repeat.
func fitLookup(train []Example, _ Thresholds) (Answerer, any, string) {
	answers := map[string]map[string]int{}
	for _, e := range train {
		k := normInput(e.Shape)
		if answers[k] == nil {
			answers[k] = map[string]int{}
		}
		answers[k][e.Output]++
	}
	if len(train) == 0 || len(answers)*2 > len(train) {
		return nil, nil, fmt.Sprintf("the inputs do not repeat (%d distinct of %d runs)", len(answers), len(train))
	}
	l := &Lookup{Entries: make(map[string]string, len(answers))}
	for k, outs := range answers {
		best, n, total := "", 0, 0
		for o, c := range outs {
			total += c
			if c > n || c == n && o < best {
				best, n = o, c
			}
		}
		// An input seen once is one caller's request, whose answer is
		// not for others to be given.
		if total >= 2 && float64(n) >= 0.9*float64(total) {
			l.Entries[k] = best
		}
	}
	if len(l.Entries) == 0 {
		return nil, nil, "no input has one consistent answer"
	}
	return l, l, ""
}

// maxLabels is the most labels a classifier learns.
const maxLabels = 20

// fitClassifier learns labels when the answers fall into a small set.
func fitClassifier(train []Example, th Thresholds) (Answerer, any, string) {
	raw := map[string]map[string]int{} // normalised label → raw spellings
	count := map[string]int{}
	for _, e := range train {
		n := normAnswer(e.Output)
		if len(n) > 64 || strings.Count(n, " ") > 3 || n == "" {
			return nil, nil, "the answers are not short labels"
		}
		count[n]++
		if raw[n] == nil {
			raw[n] = map[string]int{}
		}
		raw[n][strings.TrimSpace(e.Output)]++
	}
	var keep []string
	covered := 0
	for l, n := range count {
		if n >= 3 {
			keep = append(keep, l)
			covered += n
		}
	}
	sort.Strings(keep)
	switch {
	case len(keep) < 2:
		return nil, nil, "fewer than two labels with three runs each"
	case len(keep) > maxLabels:
		return nil, nil, fmt.Sprintf("%d distinct labels; a classifier learns at most %d", len(keep), maxLabels)
	case float64(covered) < 0.95*float64(len(train)):
		return nil, nil, fmt.Sprintf("the labels seen three times or more cover only %d of %d runs", covered, len(train))
	}
	index := map[string]int{}
	labels := make([]string, len(keep))
	for i, l := range keep {
		index[l] = i
		best, n := "", 0
		for s, c := range raw[l] {
			if c > n || c == n && s < best {
				best, n = s, c
			}
		}
		labels[i] = best
	}
	var docs [][]string
	var y []int
	for _, e := range train {
		if i, ok := index[normAnswer(e.Output)]; ok {
			docs = append(docs, tokenize(e.Shape.SlotText()))
			y = append(y, i)
		}
	}
	margin, _, best, ok := calibrateMargin(docs, y, labels, th.ClassifierPrecision, th.MinReplay)
	if !ok {
		return nil, nil, fmt.Sprintf("no confidence margin reaches %.0f%% agreement on cross-fitted training runs (best %.1f%%)",
			100*th.ClassifierPrecision, 100*best)
	}
	c := fitNB(docs, y, labels)
	c.Margin = round6(margin)
	return c, c, ""
}
