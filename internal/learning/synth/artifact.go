package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/learning/beta"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/ledger"
)

// The types of artifact. Each is data svc interprets; none is code.
const (
	// TypeClassifier answers with one of a small set of labels, chosen by
	// token weights over the slot text; it abstains when unsure.
	TypeClassifier = "classifier"
	// TypeTemplate answers with a fixed text into which slot values are
	// put.
	TypeTemplate = "template"
	// TypeExtractor answers with a JSON object whose fields are slot values
	// or constants.
	TypeExtractor = "extractor"
	// TypeLookup answers a finite set of inputs seen before, and abstains on
	// any other.
	TypeLookup = "lookup"
)

// The states of an artifact.
//
//	(synthesized) → shadow      synthesis passed the replay gate on holdout runs
//	shadow → promoted           an operator (or SVC_AUTO_PROMOTE) promoted it past the gates
//	shadow|promoted → quarantined  an operator, or its lower bound fell below the threshold
//	any → retired               rollback
//
// Only a promoted artifact serves; a shadow artifact answers beside the
// live call and is scored; quarantined and retired artifacts do nothing.
const (
	ArtifactShadow      = "shadow"
	ArtifactPromoted    = "promoted"
	ArtifactQuarantined = "quarantined"
	ArtifactRetired     = "retired"
)

// The kinds of evaluation.
const (
	EvalReplay = "replay" // against a recorded run's answer, side effects suppressed
	EvalShadow = "shadow" // beside a live call of the pattern
	EvalLive   = "live"   // feedback on an artifact-served run
)

// The outcomes of an evaluation.
const (
	OutcomePass    = "pass"
	OutcomeFail    = "fail"
	OutcomeAbstain = "abstain" // the artifact declined; the call went live
)

// Provenance is where an artifact came from.
type Provenance struct {
	Source        string   `json:"source"` // "synthesis"
	PatternKey    string   `json:"patternKey"`
	SourceRunIDs  []string `json:"sourceRunIds"`
	HoldoutRunIDs []string `json:"holdoutRunIds"`
	HoldoutShare  float64  `json:"holdoutShare"`
	Split         string   `json:"split"` // how runs were assigned
	// Holdout replay at synthesis: answered, agreed, abstained.
	HoldoutAnswered  int `json:"holdoutAnswered"`
	HoldoutAgreed    int `json:"holdoutAgreed"`
	HoldoutAbstained int `json:"holdoutAbstained"`
}

// Artifact is a declarative answer learned from a pattern.
type Artifact struct {
	ID             string          `json:"id"`
	TenantID       string          `json:"-"`
	PatternID      string          `json:"patternId"`
	State          string          `json:"state"`
	StateReason    string          `json:"stateReason"`
	Type           string          `json:"type"`
	Representation json.RawMessage `json:"representation"`
	Provenance     Provenance      `json:"provenance"`
	// SideEffects marks an artifact whose pattern offers tools: it is never
	// promoted without an operator's confirmation.
	SideEffects bool    `json:"sideEffects"`
	Alpha       float64 `json:"alpha"`
	Beta        float64 `json:"beta"`
	Confidence  float64 `json:"confidence"`
	LowerBound  float64 `json:"lowerBound"`
	ReplayPass  int     `json:"replayPass"`
	ReplayFail  int     `json:"replayFail"`
	ShadowPass  int     `json:"shadowPass"`
	ShadowFail  int     `json:"shadowFail"`
	LivePass    int     `json:"livePass"`
	LiveFail    int     `json:"liveFail"`
	// Abstentions counts evaluations the artifact declined.
	Abstentions int        `json:"abstentions"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	PromotedAt  *time.Time `json:"promotedAt"`
}

// Passes and Fails count every evaluation, replay, shadow and live.
func (a *Artifact) Passes() int { return a.ReplayPass + a.ShadowPass + a.LivePass }

// Fails counts the failed evaluations of every kind.
func (a *Artifact) Fails() int { return a.ReplayFail + a.ShadowFail + a.LiveFail }

// Count adds an evaluation's outcome to the counters and the posterior.
func (a *Artifact) Count(kind, outcome string) {
	if outcome == OutcomeAbstain {
		a.Abstentions++
		return
	}
	pass := outcome == OutcomePass
	switch {
	case kind == EvalReplay && pass:
		a.ReplayPass++
	case kind == EvalReplay:
		a.ReplayFail++
	case kind == EvalShadow && pass:
		a.ShadowPass++
	case kind == EvalShadow:
		a.ShadowFail++
	case pass:
		a.LivePass++
	default:
		a.LiveFail++
	}
	a.Refresh()
}

// Refresh recomputes the posterior from the counters.
func (a *Artifact) Refresh() {
	c := beta.Posterior(a.Passes(), a.Fails())
	a.Alpha, a.Beta, a.Confidence, a.LowerBound = c.Alpha, c.Beta, c.Mean, c.Lower
}

// Evaluation is one piece of evidence about an artifact.
type Evaluation struct {
	ID         string    `json:"id"`
	TenantID   string    `json:"-"`
	ArtifactID string    `json:"artifactId"`
	Kind       string    `json:"kind"`
	RunID      string    `json:"runId"`
	Outcome    string    `json:"outcome"`
	Expected   string    `json:"expected"`
	Got        string    `json:"got"`
	Reason     string    `json:"reason,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	// Suppressed are the side effects the evaluation would have caused
	// again, stored with it on its run (a replay or shadow evaluation of a
	// side-effect-bearing artifact; see the learning service's
	// suppressEffects). Read them in the run's detail.
	Suppressed []ledger.SideEffect `json:"-"`
}

// Answerer is an artifact ready to answer: built once from its
// representation, then used on every matching request without further
// work.
type Answerer interface {
	// Answer returns the artifact's answer to a request of the shape, or
	// false when it abstains.
	Answer(sh shape.Shape) (string, bool)
}

// Compile builds the Answerer of a representation.
func Compile(typ string, rep json.RawMessage) (Answerer, error) {
	switch typ {
	case TypeClassifier:
		var c Classifier
		if err := json.Unmarshal(rep, &c); err != nil {
			return nil, err
		}
		return c.compile()
	case TypeTemplate:
		var t Template
		if err := json.Unmarshal(rep, &t); err != nil {
			return nil, err
		}
		return &t, nil
	case TypeExtractor:
		var e Extractor
		if err := json.Unmarshal(rep, &e); err != nil {
			return nil, err
		}
		return &e, nil
	case TypeLookup:
		var l Lookup
		if err := json.Unmarshal(rep, &l); err != nil {
			return nil, err
		}
		return &l, nil
	}
	return nil, fmt.Errorf("learning: unknown artifact type %q", typ)
}

// Agrees says whether an artifact's answer matches the reference answer:
// equal once trimmed of white space and a final period, ignoring case for
// short answers (labels) and comparing JSON answers as JSON values.
func Agrees(got, want string) bool {
	g, w := normAnswer(got), normAnswer(want)
	if g == w {
		return true
	}
	if strings.HasPrefix(g, "{") && strings.HasPrefix(w, "{") {
		var a, b any
		if json.Unmarshal([]byte(got), &a) == nil && json.Unmarshal([]byte(want), &b) == nil {
			x, _ := json.Marshal(a)
			y, _ := json.Marshal(b)
			return bytes.Equal(x, y)
		}
	}
	return false
}

func normAnswer(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, ".")
	if len(s) <= 64 {
		s = strings.ToLower(s)
	}
	return s
}

// Template is a fixed text with {{slot}} placeholders.
type Template struct {
	Text  string   `json:"text"`
	Slots []string `json:"slots"` // the placeholders it uses
}

// Answer fills the placeholders; it abstains when the request lacks one of
// the slots.
func (t *Template) Answer(sh shape.Shape) (string, bool) {
	out := t.Text
	for _, name := range t.Slots {
		v, ok := sh.Slot(name)
		if !ok {
			return "", false
		}
		out = strings.ReplaceAll(out, "{{"+name+"}}", v)
	}
	return out, true
}

// Extractor answers with a JSON object built field by field.
type Extractor struct {
	Fields []ExtractField `json:"fields"`
}

// ExtractField is one field of an extractor's answer: copied from a slot,
// or a constant.
type ExtractField struct {
	Name  string          `json:"name"`
	Slot  string          `json:"slot,omitempty"`
	Const json.RawMessage `json:"const,omitempty"`
}

// Answer builds the object; it abstains when a slot is missing.
func (e *Extractor) Answer(sh shape.Shape) (string, bool) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Name)
		b.Write(k)
		b.WriteByte(':')
		if f.Slot == "" {
			b.Write(f.Const)
			continue
		}
		v, ok := sh.Slot(f.Slot)
		if !ok {
			return "", false
		}
		s, _ := json.Marshal(v)
		b.Write(s)
	}
	b.WriteByte('}')
	return b.String(), true
}

// Lookup answers inputs seen before: normalised slot text → answer.
type Lookup struct {
	Entries map[string]string `json:"entries"`
}

// Answer looks the normalised input up.
func (l *Lookup) Answer(sh shape.Shape) (string, bool) {
	a, ok := l.Entries[normInput(sh)]
	return a, ok
}

// normInput is the slot values, lowercased, with white space folded.
func normInput(sh shape.Shape) string {
	var b strings.Builder
	for i, s := range sh.Slots {
		if i > 0 {
			b.WriteString("\x1f")
		}
		b.WriteString(s.Name)
		b.WriteByte('=')
		b.WriteString(strings.ToLower(strings.Join(strings.Fields(s.Value), " ")))
	}
	return b.String()
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
