package synth

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/learning/beta"
	"github.com/svc-gateway/svc/internal/learning/shape"
)

// The states of a pattern.
//
//	observed → candidate   runCount ≥ MinRuns and stabilityScore ≥ MinStability
//	candidate → observed   stabilityScore fell below MinStability (corrections, drift)
//	candidate → shadow     synthesis created an artifact (it is in shadow)
//	shadow → promoted      its artifact was promoted
//	shadow|promoted → retired   its artifact was rolled back or quarantined and none is left
//	retired → shadow       an operator synthesized again
//	any → negative         an operator ignored it (POST …/ignore); final
//
// The learning pass synthesizes for candidate patterns only, and only again
// after the pattern has grown by half since its last attempt; retired and
// negative patterns are left alone by the pass.
const (
	PatternObserved  = "observed"
	PatternCandidate = "candidate"
	PatternShadow    = "shadow"
	PatternPromoted  = "promoted"
	PatternNegative  = "negative"
	PatternRetired   = "retired"
)

// Pattern is a kind of request an application keeps making.
type Pattern struct {
	ID               string             `json:"id"`
	TenantID         string             `json:"-"`
	Key              string             `json:"key"`
	State            string             `json:"state"`
	StateReason      string             `json:"stateReason"`
	Fingerprints     shape.Fingerprints `json:"fingerprints"`
	RunCount         int                `json:"runCount"`
	AvgCostUSD       float64            `json:"avgCostUsd"`
	AvgLatencyMS     float64            `json:"avgLatencyMs"`
	Corrections      int                `json:"corrections"` // negative ratings and corrections of its runs
	Consistency      float64            `json:"consistency"` // output consistency, before corrections
	StabilityScore   float64            `json:"stabilityScore"`
	OptimizableScore float64            `json:"optimizableScore"`
	// ExampleRunIDs are the newest runs of the pattern, newest first.
	ExampleRunIDs []string `json:"exampleRunIds"`
	// SynthesizedAt is the runCount of the last synthesis attempt.
	SynthesizedAt int       `json:"synthesizedAtRunCount"`
	LastRunAt     time.Time `json:"lastRunAt"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// Stats accumulates a pattern's live runs for its scores, in bounded
// memory.
type Stats struct {
	Runs        int
	liveRuns    int
	costSum     float64
	latencySum  float64
	Corrections int
	kinds       map[string]int            // output kind → runs
	inputs      map[uint64]map[uint64]int // input hash → output hash → runs (bounded)
	LastRunAt   time.Time
}

// maxTrackedInputs bounds the inputs whose answers Stats remembers.
const maxTrackedInputs = 20000

// Add counts one run. Only live runs (those the model answered) count
// towards cost, latency and consistency: an artifact's own answers say
// nothing about the model.
func (s *Stats) Add(sh shape.Shape, output string, live bool, costUSD, latencyMS float64, at time.Time) {
	s.Runs++
	if at.After(s.LastRunAt) {
		s.LastRunAt = at
	}
	if !live {
		return
	}
	s.liveRuns++
	s.costSum += costUSD
	s.latencySum += latencyMS
	if s.kinds == nil {
		s.kinds = map[string]int{}
		s.inputs = map[uint64]map[uint64]int{}
	}
	s.kinds[outputKind(output)]++
	ih := hash64(normInput(sh))
	outs := s.inputs[ih]
	if outs == nil {
		if len(s.inputs) >= maxTrackedInputs {
			return
		}
		outs = map[uint64]int{}
		s.inputs[ih] = outs
	}
	outs[hash64(normAnswer(output))]++
}

// Averages are the live runs' mean cost and latency.
func (s *Stats) Averages() (costUSD, latencyMS float64) {
	if s.liveRuns == 0 {
		return 0, 0
	}
	return s.costSum / float64(s.liveRuns), s.latencySum / float64(s.liveRuns)
}

// Consistency is output consistency in [0, 1]. When inputs repeat (ten or
// more runs of inputs seen twice or more) it is the share of those runs
// that gave their input's most common answer. Otherwise it is the share of
// runs whose answer has the pattern's most common kind (a short label, a
// JSON object with one set of fields, or free text), halved for free text,
// which only a template can learn.
func (s *Stats) Consistency() float64 {
	if s.liveRuns == 0 {
		return 0
	}
	repeated, agreeing := 0, 0
	for _, outs := range s.inputs {
		n, top := 0, 0
		for _, c := range outs {
			n += c
			top = max(top, c)
		}
		if n >= 2 {
			repeated += n
			agreeing += top
		}
	}
	if repeated >= 10 {
		return float64(agreeing) / float64(repeated)
	}
	kind, top := "", 0
	for k, n := range s.kinds {
		if n > top || n == top && k < kind {
			kind, top = k, n
		}
	}
	c := float64(top) / float64(s.liveRuns)
	if kind == "text" {
		c /= 2
	}
	return c
}

// Stability is consistency less the share of runs people corrected or
// rated down: stabilityScore = consistency × (1 − corrections / runs).
func Stability(consistency float64, corrections, runs int) float64 {
	if runs == 0 {
		return 0
	}
	r := math.Min(1, float64(corrections)/float64(runs))
	return consistency * (1 - r)
}

// Optimizable scores how much an artifact for the pattern would be worth:
// optimizableScore = stability × volume × cost weight, where volume =
// 1 − e^(−runCount/100) (100 runs give 0.63, 300 give 0.95) and cost
// weight = 0.25 + 0.75 × min(1, avgCostUsd / 0.001): a pattern whose calls
// cost a tenth of a cent or more weighs fully, a free one a quarter.
func Optimizable(stability float64, runs int, avgCostUSD float64) float64 {
	volume := 1 - math.Exp(-float64(runs)/100)
	cost := 0.25 + 0.75*math.Min(1, avgCostUSD/0.001)
	return stability * volume * cost
}

// Apply sets the pattern's counts and scores from s and corrections.
func (p *Pattern) Apply(s *Stats) {
	p.RunCount = s.Runs
	p.AvgCostUSD, p.AvgLatencyMS = s.Averages()
	p.Corrections = s.Corrections
	p.Consistency = s.Consistency()
	p.StabilityScore = Stability(p.Consistency, p.Corrections, max(1, s.Runs)) // corrections of any run, over all runs
	p.OptimizableScore = Optimizable(p.StabilityScore, p.RunCount, p.AvgCostUSD)
	if s.LastRunAt.After(p.LastRunAt) {
		p.LastRunAt = s.LastRunAt
	}
}

// Advance applies the lifecycle's automatic transitions given the states
// of the pattern's artifacts; it returns whether the state changed. The
// transitions an operator makes (ignore, synthesize) are Ignore and the
// learning service's Synthesize.
func (p *Pattern) Advance(th Thresholds, artifactStates []string) bool {
	has := func(state string) bool {
		for _, s := range artifactStates {
			if s == state {
				return true
			}
		}
		return false
	}
	from := p.State
	switch {
	case p.State == PatternNegative:
	case has(ArtifactPromoted):
		p.set(PatternPromoted, "an artifact of the pattern is promoted")
	case has(ArtifactShadow):
		p.set(PatternShadow, "an artifact of the pattern is gathering shadow evidence")
	case p.State == PatternShadow || p.State == PatternPromoted:
		p.set(PatternRetired, "its artifacts were rolled back or quarantined")
	case p.State == PatternRetired:
	case p.RunCount >= th.MinRuns && p.StabilityScore >= th.MinStability:
		p.set(PatternCandidate, fmt.Sprintf("%d runs with stability %.2f", p.RunCount, p.StabilityScore))
	case p.State == PatternCandidate:
		p.set(PatternObserved, fmt.Sprintf("stability %.2f fell below %.2f", p.StabilityScore, th.MinStability))
	case p.State == "":
		p.set(PatternObserved, "first seen")
	}
	return p.State != from
}

// WantsSynthesis says whether the learning pass should try synthesis: a
// candidate never tried, or grown by half since the last attempt.
func (p *Pattern) WantsSynthesis() bool {
	return p.State == PatternCandidate && (p.SynthesizedAt == 0 || p.RunCount >= p.SynthesizedAt+max(20, p.SynthesizedAt/2))
}

// Ignore marks the pattern negative: the learning loop leaves it alone.
func (p *Pattern) Ignore() { p.set(PatternNegative, "ignored by an operator") }

func (p *Pattern) set(state, reason string) {
	if p.State != state {
		p.State, p.StateReason = state, reason
	}
}

// Gate says whether an artifact may be promoted: enough replay and shadow
// evidence and a posterior lower bound at or above the threshold. The
// error is the reason it may not.
func (th Thresholds) Gate(a *Artifact) error {
	var why []string
	if n := a.ReplayPass + a.ReplayFail; n < th.MinReplay {
		why = append(why, fmt.Sprintf("replay evidence: %d answered replays, %d needed", n, th.MinReplay))
	}
	if n := a.ShadowPass + a.ShadowFail; n < th.MinShadow {
		why = append(why, fmt.Sprintf("shadow evidence: %d answered shadow evaluations, %d needed", n, th.MinShadow))
	}
	c := beta.Posterior(a.Passes(), a.Fails())
	if c.Lower < th.LowerBound {
		why = append(why, fmt.Sprintf("confidence: lower bound %.3f (alpha %.0f, beta %.0f) is below %.2f", c.Lower, c.Alpha, c.Beta, th.LowerBound))
	}
	if a.State != ArtifactShadow && a.State != ArtifactPromoted {
		why = append(why, "the artifact is "+a.State)
	}
	if len(why) == 0 {
		return nil
	}
	return &GateError{Reasons: why}
}

// GateError is a failed promotion gate.
type GateError struct{ Reasons []string }

func (e *GateError) Error() string {
	return "the promotion gate is not passed: " + strings.Join(e.Reasons, "; ")
}

// ShouldQuarantine says whether a serving artifact's evidence turned: its
// lower bound fell below the threshold.
func (th Thresholds) ShouldQuarantine(a *Artifact) bool {
	return a.State == ArtifactPromoted && beta.Posterior(a.Passes(), a.Fails()).Lower < th.LowerBound
}

// RecentWindow is how many of an artifact's newest live and shadow
// verdicts the turn check reads, and RecentMin how many it needs.
const (
	RecentWindow = 40
	RecentMin    = 10
)

// TurnedRecently says the newest evidence alone shows an artifact worse
// than the threshold: even the upper credible bound (95%) of its recent
// agreement is below it. Pooled counters of thousands of passes would take
// hundreds of failures to move; this takes a run of them.
func (th Thresholds) TurnedRecently(recent []Evaluation) bool {
	passes, fails := 0, 0
	for _, e := range recent {
		if e.Kind != EvalLive && e.Kind != EvalShadow {
			continue
		}
		switch e.Outcome {
		case OutcomePass:
			passes++
		case OutcomeFail:
			fails++
		}
		if passes+fails == RecentWindow {
			break
		}
	}
	if passes+fails < RecentMin {
		return false
	}
	return beta.Quantile(1-beta.LowerQuantile, 1+float64(passes), 1+float64(fails)) < th.LowerBound
}

// FailsShadow says whether a shadow artifact has had its chance: twice
// MinShadow answered shadow evaluations and a lower bound still below the
// threshold. The pass retires it, so that it stops being scored; an
// operator may synthesize again.
func (th Thresholds) FailsShadow(a *Artifact) bool {
	return a.State == ArtifactShadow && a.ShadowPass+a.ShadowFail >= 2*th.MinShadow &&
		beta.Posterior(a.Passes(), a.Fails()).Lower < th.LowerBound
}

// outputKind classifies an answer for consistency.
func outputKind(s string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") {
		keys, ok := jsonKeys(t)
		if ok {
			return "json:" + keys
		}
	}
	if len(t) <= 40 && strings.Count(t, " ") <= 3 && t != "" {
		return "label"
	}
	return "text"
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// jsonKeys is the sorted field names of a JSON object.
func jsonKeys(s string) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) != nil {
		return "", false
	}
	return strings.Join(sortedKeys(obj), ","), true
}
