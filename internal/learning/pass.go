package learning

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/tracing"
)

// The triggers of a learning pass.
const (
	TriggerTick  = "tick"  // POST /api/v1/learning/tick
	TriggerTimer = "timer" // SVC_LEARNING_INTERVAL, through the job queue
)

// minPatternRuns is how many runs of one shape make a pattern worth a
// record.
const minPatternRuns = 3

// exampleRunsKept is how many of a pattern's newest runs its detail shows.
const exampleRunsKept = 10

// patternScan is one shape's runs during a pass.
type patternScan struct {
	stats synth.Stats
	// toolCalls counts live answers that called a tool: such a pattern is
	// not for an artifact, which would silently drop the calls.
	toolCalls int
	fp        shape.Fingerprints
	examples  []string // newest run ids, a ring of exampleRunsKept
	next      int
}

// Pass runs one learning pass over a tenant's runs:
//
//  1. scan every successful run (oldest first, one row at a time), group
//     it by shape and accumulate the pattern's stats; corrections and
//     negative ratings of live runs count against stability;
//  2. update the patterns' scores and lifecycle (a shape seen three times
//     gets a pattern record);
//  3. for each candidate pattern that wants it, read its live runs again
//     (bounded to synth.Thresholds.MaxTrainingRuns, newest) and synthesize;
//  4. quarantine promoted artifacts whose lower bound fell below the
//     threshold, retire shadow artifacts that failed the shadow gate (see
//     synth.Thresholds.FailsShadow), list the shadow artifacts that pass the
//     promotion gate, and with SVC_AUTO_PROMOTE promote those without side
//     effects;
//  5. store the report.
//
// Memory is bounded by the number of patterns, not of runs. The pass runs
// under a span of its own, whether a job or a request started it.
func (s *Service) Pass(ctx context.Context, tenantID, trigger string) (rep Report, err error) {
	ctx, span := tracing.Start(ctx, "learning.pass", trace.SpanKindInternal)
	if !span.IsRecording() {
		return s.pass(ctx, tenantID, trigger)
	}
	defer func() {
		span.SetAttributes(tracing.TenantID.String(tenantID), attribute.String("svc.learning.trigger", trigger),
			attribute.Int("svc.learning.runs_scanned", rep.RunsScanned))
		tracing.Error(span, err)
		span.End()
	}()
	return s.pass(ctx, tenantID, trigger)
}

func (s *Service) pass(ctx context.Context, tenantID, trigger string) (Report, error) {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	start := time.Now()
	rep := Report{ID: ids.New("lrn"), Trigger: trigger, PromotionsEligible: []string{}, AutoPromoted: []string{},
		SynthesisReports: []synth.Report{}, Quarantined: []string{}, Retired: []string{}, Transitions: []Transition{},
		CreatedAt: s.now()}
	if err := s.sync(ctx, tenantID); err != nil {
		return Report{}, err
	}
	fb, err := s.o.Store.Feedback(ctx, tenantID)
	if err != nil {
		return Report{}, err
	}
	scans := map[string]*patternScan{}
	err = s.o.Store.ScanRuns(ctx, tenantID, func(r *RunRecord) error {
		rep.RunsScanned++
		sh, err := shape.Parse(r.App, r.Request)
		if err != nil {
			return nil
		}
		ps := scans[sh.Key]
		if ps == nil {
			ps = &patternScan{fp: sh.Fingerprints, examples: make([]string, 0, exampleRunsKept)}
			scans[sh.Key] = ps
		}
		out, live, toolCall := learnable(r)
		if toolCall {
			ps.toolCalls++
		}
		ps.stats.Add(sh, out, live, r.CostUSD, r.LatencyMS, r.CreatedAt)
		if f, rated := fb[r.ID]; rated && (f.Rating < 0 || f.Correction != "" && !synth.Agrees(out, f.Correction)) {
			ps.stats.Corrections++
		}
		if len(ps.examples) < exampleRunsKept {
			ps.examples = append(ps.examples, r.ID)
		} else {
			ps.examples[ps.next] = r.ID
			ps.next = (ps.next + 1) % exampleRunsKept
		}
		return nil
	})
	if err != nil {
		return Report{}, err
	}

	existing, err := s.o.Store.ListPatterns(ctx, tenantID)
	if err != nil {
		return Report{}, err
	}
	byKey := make(map[string]*synth.Pattern, len(existing))
	for i := range existing {
		byKey[existing[i].Key] = &existing[i]
	}
	arts, err := s.o.Store.ListArtifacts(ctx, tenantID, "")
	if err != nil {
		return Report{}, err
	}
	states := map[string][]string{}
	for _, a := range arts {
		states[a.PatternID] = append(states[a.PatternID], a.State)
	}
	now := s.now()
	var changed []synth.Pattern
	var wanting []*synth.Pattern
	for key, ps := range scans {
		p := byKey[key]
		if p == nil {
			if ps.stats.Runs < minPatternRuns {
				continue
			}
			p = &synth.Pattern{ID: ids.New("pat"), TenantID: tenantID, Key: key, CreatedAt: now}
			byKey[key] = p
		}
		p.Fingerprints = ps.fp
		p.Apply(&ps.stats)
		p.ExampleRunIDs = newestFirst(ps.examples, ps.next)
		from := p.State
		if p.Advance(s.o.Thresholds, states[p.ID]) {
			rep.Transitions = append(rep.Transitions, Transition{PatternID: p.ID, From: from, To: p.State, Reason: p.StateReason})
		}
		p.UpdatedAt = now
		changed = append(changed, *p)
		if p.WantsSynthesis() {
			if ps.toolCalls > 0 {
				rep.SynthesisReports = append(rep.SynthesisReports, synth.Report{PatternID: p.ID, Attempts: []synth.TypeAttempt{},
					Reason: fmt.Sprintf("%d live answers of this pattern called a tool; an artifact answers with text only", ps.toolCalls)})
				continue
			}
			wanting = append(wanting, p)
		}
	}
	rep.Patterns = len(byKey)
	if err := s.o.Store.SavePatterns(ctx, tenantID, changed); err != nil {
		return Report{}, err
	}

	if len(wanting) > 0 {
		keys := make(map[string]bool, len(wanting))
		for _, p := range wanting {
			keys[p.Key] = true
		}
		examples, err := s.examples(ctx, tenantID, keys, fb)
		if err != nil {
			return Report{}, err
		}
		sort.Slice(wanting, func(i, j int) bool { return wanting[i].OptimizableScore > wanting[j].OptimizableScore })
		for _, p := range wanting {
			a, sr, err := s.synthesize(ctx, p, examples[p.Key])
			if err != nil {
				return Report{}, err
			}
			rep.SynthesisReports = append(rep.SynthesisReports, sr)
			if a != nil {
				rep.ArtifactsSynthesized++
				from := p.State
				if p.Advance(s.o.Thresholds, append(states[p.ID], a.State)) {
					rep.Transitions = append(rep.Transitions, Transition{PatternID: p.ID, From: from, To: p.State, Reason: p.StateReason})
				}
			}
			if err := s.o.Store.SavePatterns(ctx, tenantID, []synth.Pattern{*p}); err != nil {
				return Report{}, err
			}
		}
	}

	arts, err = s.o.Store.ListArtifacts(ctx, tenantID, "")
	if err != nil {
		return Report{}, err
	}
	for _, a := range arts {
		if a.State == synth.ArtifactPromoted && s.o.Thresholds.ShouldQuarantine(&a) {
			if err := s.checkQuarantine(ctx, a); err != nil {
				return Report{}, err
			}
			rep.Quarantined = append(rep.Quarantined, a.ID)
			continue
		}
		if a.State == synth.ArtifactShadow && s.o.Thresholds.FailsShadow(&a) {
			reason := fmt.Sprintf("retired: after %d shadow evaluations the lower bound %.3f is still below %.2f",
				a.ShadowPass+a.ShadowFail, a.LowerBound, s.o.Thresholds.LowerBound)
			if _, err := s.retire(ctx, tenantID, a.ID, synth.ArtifactRetired, reason, "svc", EventArtifactRetired); err != nil {
				return Report{}, err
			}
			rep.Retired = append(rep.Retired, a.ID)
			continue
		}
		if a.State != synth.ArtifactShadow || s.o.Thresholds.Gate(&a) != nil {
			continue
		}
		rep.PromotionsEligible = append(rep.PromotionsEligible, a.ID)
		if s.o.AutoPromote && !a.SideEffects {
			if _, err := s.promote(ctx, a, "svc", "promoted automatically (SVC_AUTO_PROMOTE): the gates passed"); err != nil {
				return Report{}, err
			}
			rep.AutoPromoted = append(rep.AutoPromoted, a.ID)
		}
	}
	s.changed(ctx, tenantID)
	rep.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	if err := s.o.Store.InsertReport(ctx, tenantID, &rep); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// examples reads the live runs of the patterns with keys as examples,
// newest MaxTrainingRuns of each, oldest first.
func (s *Service) examples(ctx context.Context, tenantID string, keys map[string]bool, fb map[string]RunFeedback) (map[string][]synth.Example, error) {
	limit := s.o.Thresholds.MaxTrainingRuns
	out := map[string][]synth.Example{}
	err := s.o.Store.ScanRuns(ctx, tenantID, func(r *RunRecord) error {
		if r.Route != ledger.RouteLive {
			return nil
		}
		sh, err := shape.Parse(r.App, r.Request)
		if err != nil || !keys[sh.Key] {
			return nil
		}
		e, ok := exampleOf(r, fb)
		if !ok {
			return nil
		}
		xs := append(out[sh.Key], e)
		if limit > 0 && len(xs) > 2*limit {
			xs = append(xs[:0:0], xs[len(xs)-limit:]...)
		}
		out[sh.Key] = xs
		return nil
	})
	for k, xs := range out {
		if limit > 0 && len(xs) > limit {
			out[k] = xs[len(xs)-limit:]
		}
	}
	return out, err
}

// newestFirst unrolls a ring whose oldest entry is at next.
func newestFirst(ring []string, next int) []string {
	out := make([]string, 0, len(ring))
	for i := range ring {
		out = append(out, ring[(next+len(ring)-1-i)%len(ring)])
	}
	return out
}

// JobType is the job type of a learning pass; register RunJob for it.
const JobType = "learning.pass"

// JobPayload is a learning pass job's payload.
type JobPayload struct {
	Trigger string `json:"trigger"`
}

// RunJob runs the learning pass a job asks for, for the job's tenant.
func (s *Service) RunJob(ctx context.Context, j jobs.Job) error {
	var p JobPayload
	if len(j.Payload) > 0 {
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return jobs.Permanent(err)
		}
	}
	if p.Trigger == "" {
		p.Trigger = TriggerTimer
	}
	rep, err := s.Pass(ctx, j.TenantID, p.Trigger)
	if err != nil {
		return err
	}
	if rep.ArtifactsSynthesized > 0 || len(rep.AutoPromoted) > 0 || len(rep.Quarantined) > 0 {
		s.o.Logger.Info("learning pass", "tenant", j.TenantID, "runs", rep.RunsScanned, "patterns", rep.Patterns,
			"synthesized", rep.ArtifactsSynthesized, "eligible", len(rep.PromotionsEligible), "autoPromoted", len(rep.AutoPromoted),
			"quarantined", len(rep.Quarantined), "ms", rep.DurationMS)
	}
	return nil
}

// maxLearnedReply bounds the answers a pass reads: one larger (a stream an
// upstream kept sending, cut in its record) is no pattern an artifact could
// stand in for, and reading it would cost the pass more than all the rest.
const maxLearnedReply = 1 << 20

// learnable is what a run answered that a pattern learns from: the text of
// a live answer that called no tool (live), and whether it called one.
func learnable(r *RunRecord) (text string, live, toolCall bool) {
	if r.Route != ledger.RouteLive || len(r.Response) > maxLearnedReply {
		return "", false, false
	}
	reply := shape.ReadReply(r.Response)
	return reply.Text, reply.HasText && !reply.ToolCall, reply.ToolCall
}
