package learning

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
)

// RunRecord is what the learning loop reads of a run.
type RunRecord struct {
	ID        string
	App       string
	Mode      string
	Route     string
	Request   []byte
	Response  []byte
	CostUSD   float64
	LatencyMS float64
	CreatedAt time.Time
}

// RunFeedback is the latest rating of a run.
type RunFeedback struct {
	Rating     int
	Correction string
}

// The triggers of a learning pass.
const (
	TriggerTick  = "tick"  // POST /api/v1/learning/tick
	TriggerTimer = "timer" // SVC_LEARNING_INTERVAL, through the job queue
)

// Report is what one learning pass did.
type Report struct {
	ID                   string         `json:"id"`
	Trigger              string         `json:"trigger"` // "tick", "timer"
	ArtifactsSynthesized int            `json:"artifactsSynthesized"`
	PromotionsEligible   []string       `json:"promotionsEligible"`
	AutoPromoted         []string       `json:"autoPromoted"`
	SynthesisReports     []synth.Report `json:"synthesisReports"`
	Quarantined          []string       `json:"quarantined"`
	Retired              []string       `json:"retired"`
	RunsScanned          int            `json:"runsScanned"`
	Patterns             int            `json:"patterns"`
	Transitions          []Transition   `json:"transitions"`
	DurationMS           float64        `json:"durationMs"`
	CreatedAt            time.Time      `json:"createdAt"`
}

// Transition is a pattern's change of state, recorded in the report that
// made it.
type Transition struct {
	PatternID string `json:"patternId"`
	From      string `json:"from"`
	To        string `json:"to"`
	Reason    string `json:"reason"`
}

// Store persists the learning loop's records. Every method is scoped to a
// tenant, except ServingArtifacts, which loads the index of every tenant;
// a record of another tenant is errs.NotFound.
type Store interface {
	// ScanRuns calls fn with each of the tenant's successful runs, oldest
	// first. fn must not keep the record's slices.
	ScanRuns(ctx context.Context, tenantID string, fn func(*RunRecord) error) error
	// LearningRuns returns the tenant's runs among ids (unknown ids are left
	// out).
	LearningRuns(ctx context.Context, tenantID string, ids []string) ([]RunRecord, error)
	// Feedback returns the latest rating of every rated run of the tenant.
	Feedback(ctx context.Context, tenantID string) (map[string]RunFeedback, error)
	ListPatterns(ctx context.Context, tenantID string) ([]synth.Pattern, error)
	Pattern(ctx context.Context, tenantID, id string) (synth.Pattern, error)
	// SavePatterns inserts or updates patterns by id.
	SavePatterns(ctx context.Context, tenantID string, ps []synth.Pattern) error
	// ListArtifacts returns the tenant's artifacts, newest first; of one
	// pattern when patternID is not empty.
	ListArtifacts(ctx context.Context, tenantID, patternID string) ([]synth.Artifact, error)
	Artifact(ctx context.Context, tenantID, id string) (synth.Artifact, error)
	// InsertArtifact stores a with its evaluations.
	InsertArtifact(ctx context.Context, a *synth.Artifact, evals []synth.Evaluation) error
	// SetArtifactState changes an artifact's state. Returns errs.NotFound
	// for an unknown artifact.
	SetArtifactState(ctx context.Context, tenantID, id, state, reason string, at time.Time) (synth.Artifact, error)
	// AddEvaluations stores evaluations of one artifact and adds their
	// outcomes to its counters, in one transaction, and returns the
	// artifact as it is after.
	AddEvaluations(ctx context.Context, tenantID, artifactID string, evals []synth.Evaluation, at time.Time) (synth.Artifact, error)
	// Evaluations returns an artifact's newest evaluations.
	Evaluations(ctx context.Context, tenantID, artifactID string, limit int) ([]synth.Evaluation, error)
	InsertReport(ctx context.Context, tenantID string, r *Report) error
	// Reports returns the tenant's newest reports.
	Reports(ctx context.Context, tenantID string, limit int) ([]Report, error)
	// ServingArtifacts returns every tenant's shadow and promoted artifacts
	// with their patterns.
	ServingArtifacts(ctx context.Context) ([]ServingRow, error)
}

// ServingRow is an artifact that answers requests, with its pattern.
type ServingRow struct {
	Artifact synth.Artifact
	Pattern  synth.Pattern
}

// Notifier sends a tenant's notable events to its webhook.
type Notifier interface {
	Notify(ctx context.Context, tenantID, eventType string, data any)
}

// Negative records decisions not to optimize (the negative cache tier).
type Negative interface {
	Ignore(ctx context.Context, tenantID, key, reason string) error
}

// Runs reads runs for a pattern's examples; ledger.Service is one.
type Runs interface {
	Run(ctx context.Context, tenantID, id string) (ledger.Run, error)
}

// Syncer makes every answered run readable; the ledger's Recorder is one.
type Syncer interface {
	Sync(ctx context.Context) error
}

// The webhook events of the learning loop.
const (
	EventArtifactSynthesized = "artifact.synthesized"
	EventArtifactPromoted    = "artifact.promoted"
	EventArtifactQuarantined = "artifact.quarantined"
	EventArtifactRetired     = "artifact.retired"
)

// Options configure a Service.
type Options struct {
	Store       Store
	Runs        Runs
	Effects     Effects // nil: evaluations record no suppressed side effects
	Syncer      Syncer
	Audit       *audit.Log
	Notifier    Notifier // may be nil
	Negative    Negative // may be nil
	Thresholds  synth.Thresholds
	AutoPromote bool
	// CanaryShare is the share of matching optimize requests a promoted
	// artifact serves when the tenant has canary_enabled.
	CanaryShare float64
	Logger      hclog.Logger
	Now         func() time.Time
}

// Service runs the learning loop.
type Service struct {
	o      Options
	index  *Index
	passMu sync.Mutex // one pass at a time
	// reloading holds a *sync.Mutex per tenant: its index reloads in turn.
	reloading sync.Map
	shadow    shadowBuffer
	stop      chan struct{} // closed by Close: stops the flusher
	done      chan struct{}
}

// DefaultCanaryShare is the share of matching requests served under
// canary_enabled: one in ten.
const DefaultCanaryShare = 0.1

// New returns a service; Load fills its serving index.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Thresholds == (synth.Thresholds{}) {
		o.Thresholds = synth.Defaults
	}
	if o.CanaryShare == 0 {
		o.CanaryShare = DefaultCanaryShare
	}
	return &Service{o: o, index: newIndex()}
}

// Thresholds returns the thresholds in force.
func (s *Service) Thresholds() synth.Thresholds { return s.o.Thresholds }

// Index is the serving index the gateway reads.
func (s *Service) Index() *Index { return s.index }

// Load builds the serving index from the store.
func (s *Service) Load(ctx context.Context) error {
	rows, err := s.o.Store.ServingArtifacts(ctx)
	if err != nil {
		return err
	}
	byTenant := map[string][]ServingRow{}
	for _, r := range rows {
		byTenant[r.Artifact.TenantID] = append(byTenant[r.Artifact.TenantID], r)
	}
	for t, rs := range byTenant {
		s.index.set(t, rs, s.o.Logger)
	}
	return nil
}

// reload rebuilds one tenant's part of the serving index. Reloads of a
// tenant run one at a time, read and swap together, so that one that read
// the artifacts before a quarantine cannot finish after the reload that
// follows the quarantine and put the artifact back.
func (s *Service) reload(ctx context.Context, tenantID string) {
	mu, _ := s.reloading.LoadOrStore(tenantID, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	arts, err := s.o.Store.ListArtifacts(ctx, tenantID, "")
	if err != nil {
		s.o.Logger.Error("reloading the serving index failed", "tenant", tenantID, "error", err)
		return
	}
	var rows []ServingRow
	patterns := map[string]synth.Pattern{}
	for _, a := range arts {
		if a.State != synth.ArtifactPromoted && a.State != synth.ArtifactShadow {
			continue
		}
		p, ok := patterns[a.PatternID]
		if !ok {
			if p, err = s.o.Store.Pattern(ctx, tenantID, a.PatternID); err != nil {
				continue
			}
			patterns[a.PatternID] = p
		}
		rows = append(rows, ServingRow{Artifact: a, Pattern: p})
	}
	s.index.set(tenantID, rows, s.o.Logger)
}

// sync makes every answered run readable and stores pending shadow
// evidence, failing on tenantID's failures only.
func (s *Service) sync(ctx context.Context, tenantID string) error {
	if s.o.Syncer != nil {
		if err := s.o.Syncer.Sync(ctx); err != nil {
			return err
		}
	}
	return s.flushShadowFor(ctx, tenantID)
}

// CanaryShare is the share of matching requests a promoted artifact serves
// under canary_enabled.
func (s *Service) CanaryShare() float64 { return s.o.CanaryShare }

func (s *Service) now() time.Time { return s.o.Now().UTC().Truncate(time.Millisecond) }

// Patterns lists the tenant's patterns, most optimizable first.
func (s *Service) Patterns(ctx context.Context, tenantID string) ([]synth.Pattern, error) {
	return s.o.Store.ListPatterns(ctx, tenantID)
}

// PatternDetail is a pattern with its artifacts and example runs.
type PatternDetail struct {
	synth.Pattern
	Artifacts   []synth.Artifact `json:"artifacts"`
	ExampleRuns []ledger.Run     `json:"exampleRuns"`
}

// PatternDetail returns one pattern with its artifacts and up to ten of
// its newest runs.
func (s *Service) PatternDetail(ctx context.Context, tenantID, id string) (PatternDetail, error) {
	p, err := s.o.Store.Pattern(ctx, tenantID, id)
	if err != nil {
		return PatternDetail{}, err
	}
	arts, err := s.o.Store.ListArtifacts(ctx, tenantID, id)
	if err != nil {
		return PatternDetail{}, err
	}
	d := PatternDetail{Pattern: p, Artifacts: arts, ExampleRuns: []ledger.Run{}}
	for _, rid := range p.ExampleRunIDs {
		run, err := s.o.Runs.Run(ctx, tenantID, rid)
		if errs.Is(err, errs.NotFound) {
			continue // swept by retention
		}
		if err != nil {
			return PatternDetail{}, err
		}
		run.Request, run.Response = nil, nil
		d.ExampleRuns = append(d.ExampleRuns, run)
	}
	return d, nil
}

// Artifacts lists the tenant's artifacts, newest first.
func (s *Service) Artifacts(ctx context.Context, tenantID string) ([]synth.Artifact, error) {
	if err := s.flushShadowFor(ctx, tenantID); err != nil {
		return nil, err
	}
	return s.o.Store.ListArtifacts(ctx, tenantID, "")
}

// ArtifactDetail is an artifact with its evidence and its pattern.
type ArtifactDetail struct {
	Artifact    synth.Artifact     `json:"artifact"`
	Evaluations []synth.Evaluation `json:"evaluations"`
	Pattern     *synth.Pattern     `json:"pattern"`
}

// ArtifactDetail returns one artifact with its newest 200 evaluations and
// its pattern (nil when the pattern is gone).
func (s *Service) ArtifactDetail(ctx context.Context, tenantID, id string) (ArtifactDetail, error) {
	if err := s.flushShadowFor(ctx, tenantID); err != nil {
		return ArtifactDetail{}, err
	}
	a, err := s.o.Store.Artifact(ctx, tenantID, id)
	if err != nil {
		return ArtifactDetail{}, err
	}
	evals, err := s.o.Store.Evaluations(ctx, tenantID, id, 200)
	if err != nil {
		return ArtifactDetail{}, err
	}
	d := ArtifactDetail{Artifact: a, Evaluations: evals}
	if p, err := s.o.Store.Pattern(ctx, tenantID, a.PatternID); err == nil {
		d.Pattern = &p
	} else if !errs.Is(err, errs.NotFound) {
		return ArtifactDetail{}, err
	}
	return d, nil
}

// Ignore marks a pattern negative and records that decision in the
// negative cache tier; its artifacts are retired.
func (s *Service) Ignore(ctx context.Context, tenantID, id, actor string) (synth.Pattern, error) {
	// Not while a pass runs: it saves the patterns it read, and would turn
	// this one back.
	s.passMu.Lock()
	defer s.passMu.Unlock()
	p, err := s.o.Store.Pattern(ctx, tenantID, id)
	if err != nil {
		return synth.Pattern{}, err
	}
	from := p.State
	p.Ignore()
	p.UpdatedAt = s.now()
	if err := s.o.Store.SavePatterns(ctx, tenantID, []synth.Pattern{p}); err != nil {
		return synth.Pattern{}, err
	}
	if s.o.Negative != nil {
		if err := s.o.Negative.Ignore(ctx, tenantID, NegativeKey(p.Key), "pattern ignored by an operator"); err != nil {
			return synth.Pattern{}, err
		}
	}
	arts, err := s.o.Store.ListArtifacts(ctx, tenantID, id)
	if err != nil {
		return synth.Pattern{}, err
	}
	for _, a := range arts {
		if a.State == synth.ArtifactShadow || a.State == synth.ArtifactPromoted {
			if _, err := s.o.Store.SetArtifactState(ctx, tenantID, a.ID, synth.ArtifactRetired, "its pattern was ignored", s.now()); err != nil {
				return synth.Pattern{}, err
			}
		}
	}
	s.reload(ctx, tenantID)
	s.audit(ctx, tenantID, actor, "pattern.ignored", p.ID, map[string]any{"from": from, "to": p.State})
	return p, nil
}

// NegativeKey is a pattern's key in the negative cache tier.
func NegativeKey(patternKey string) string { return "pattern:" + patternKey }

// SynthesisResult is what an operator's synthesis made.
type SynthesisResult struct {
	Artifact *synth.Artifact `json:"artifact"`
	Pattern  synth.Pattern   `json:"pattern"`
	Report   synth.Report    `json:"synthesisReport"`
}

// Synthesize tries to make an artifact of one pattern now, whatever its
// state but negative. Returns errs.Conflict for a negative pattern.
func (s *Service) Synthesize(ctx context.Context, tenantID, id, actor string) (SynthesisResult, error) {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	if err := s.sync(ctx, tenantID); err != nil {
		return SynthesisResult{}, err
	}
	p, err := s.o.Store.Pattern(ctx, tenantID, id)
	if err != nil {
		return SynthesisResult{}, err
	}
	if p.State == synth.PatternNegative {
		return SynthesisResult{}, errs.E(errs.Conflict, "pattern_negative", "the pattern is ignored; nothing is learned from it")
	}
	fb, err := s.o.Store.Feedback(ctx, tenantID)
	if err != nil {
		return SynthesisResult{}, err
	}
	examples, err := s.examples(ctx, tenantID, map[string]bool{p.Key: true}, fb)
	if err != nil {
		return SynthesisResult{}, err
	}
	a, rep, err := s.synthesize(ctx, &p, examples[p.Key])
	if err != nil {
		return SynthesisResult{}, err
	}
	if a != nil {
		from := p.State
		arts, err := s.artifactStates(ctx, tenantID, p.ID)
		if err != nil {
			return SynthesisResult{}, err
		}
		if p.State == synth.PatternRetired {
			p.State = synth.PatternCandidate // an operator's synthesis brings a retired pattern back
		}
		p.Advance(s.o.Thresholds, arts)
		s.audit(ctx, tenantID, actor, "artifact.synthesized", a.ID, map[string]any{"pattern": p.ID, "type": a.Type, "from": from, "to": p.State})
	}
	p.UpdatedAt = s.now()
	if err := s.o.Store.SavePatterns(ctx, tenantID, []synth.Pattern{p}); err != nil {
		return SynthesisResult{}, err
	}
	s.reload(ctx, tenantID)
	return SynthesisResult{Artifact: a, Pattern: p, Report: rep}, nil
}

// synthesize runs synthesis on examples and stores the artifact made, in
// shadow, with its replay evaluations.
func (s *Service) synthesize(ctx context.Context, p *synth.Pattern, examples []synth.Example) (*synth.Artifact, synth.Report, error) {
	p.SynthesizedAt = max(1, p.RunCount)
	cand, rep := synth.Fit(examples, s.o.Thresholds)
	rep.PatternID = p.ID
	if cand == nil {
		return nil, rep, nil
	}
	now := s.now()
	a := &synth.Artifact{ID: ids.New("art"), TenantID: p.TenantID, PatternID: p.ID, State: synth.ArtifactShadow,
		StateReason: "synthesized; the replay gate passed on holdout runs, shadow evidence is gathered on live traffic",
		Type:        cand.Type, Representation: cand.Representation, Provenance: cand.Provenance,
		SideEffects: len(p.Fingerprints.Tools) > 0, CreatedAt: now, UpdatedAt: now}
	evals := cand.Replay
	for i := range evals {
		evals[i].ID, evals[i].TenantID, evals[i].ArtifactID, evals[i].CreatedAt = ids.New("ev"), p.TenantID, a.ID, now
		a.Count(evals[i].Kind, evals[i].Outcome)
	}
	a.Refresh()
	if a.SideEffects {
		s.suppressEffects(ctx, p.TenantID, evals)
	}
	if err := s.o.Store.InsertArtifact(ctx, a, evals); err != nil {
		return nil, rep, err
	}
	rep.Created = a.ID
	s.notify(ctx, p.TenantID, EventArtifactSynthesized, a)
	return a, rep, nil
}

func (s *Service) artifactStates(ctx context.Context, tenantID, patternID string) ([]string, error) {
	arts, err := s.o.Store.ListArtifacts(ctx, tenantID, patternID)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(arts))
	for i, a := range arts {
		out[i] = a.State
	}
	return out, nil
}

// Promote promotes an artifact that passes the gate. A side-effect-bearing
// artifact needs confirm. Returns errs.Conflict with the gate's reasons.
func (s *Service) Promote(ctx context.Context, tenantID, id string, confirm bool, actor string) (synth.Artifact, error) {
	if err := s.flushShadowFor(ctx, tenantID); err != nil {
		return synth.Artifact{}, err
	}
	a, err := s.o.Store.Artifact(ctx, tenantID, id)
	if err != nil {
		return synth.Artifact{}, err
	}
	if a.State == synth.ArtifactPromoted {
		return a, nil
	}
	if err := s.o.Thresholds.Gate(&a); err != nil {
		return synth.Artifact{}, errs.E(errs.Conflict, "gate_failed", "%s", err.Error())
	}
	if a.SideEffects && !confirm {
		return synth.Artifact{}, errs.E(errs.Conflict, "confirmation_required",
			"the artifact's pattern offers tools (side effects): promote it with {\"confirm\": true}")
	}
	return s.promote(ctx, a, actor, "promoted by "+actor)
}

func (s *Service) promote(ctx context.Context, a synth.Artifact, actor, reason string) (synth.Artifact, error) {
	out, err := s.o.Store.SetArtifactState(ctx, a.TenantID, a.ID, synth.ArtifactPromoted, reason, s.now())
	if err != nil {
		return synth.Artifact{}, err
	}
	// Another promoted artifact of the pattern steps back: one serves.
	arts, err := s.o.Store.ListArtifacts(ctx, a.TenantID, a.PatternID)
	if err != nil {
		return synth.Artifact{}, err
	}
	for _, o := range arts {
		if o.ID != a.ID && o.State == synth.ArtifactPromoted {
			if _, err := s.o.Store.SetArtifactState(ctx, a.TenantID, o.ID, synth.ArtifactRetired, "replaced by "+a.ID, s.now()); err != nil {
				return synth.Artifact{}, err
			}
		}
	}
	if err := s.advancePattern(ctx, a.TenantID, a.PatternID); err != nil {
		return synth.Artifact{}, err
	}
	s.reload(ctx, a.TenantID)
	s.audit(ctx, a.TenantID, actor, "artifact.promoted", a.ID, map[string]any{"pattern": a.PatternID,
		"confidence": out.Confidence, "lowerBound": out.LowerBound, "alpha": out.Alpha, "beta": out.Beta})
	s.notify(ctx, a.TenantID, EventArtifactPromoted, out)
	return out, nil
}

// advancePattern applies the pattern's lifecycle after its artifacts
// changed.
func (s *Service) advancePattern(ctx context.Context, tenantID, patternID string) error {
	p, err := s.o.Store.Pattern(ctx, tenantID, patternID)
	if err != nil {
		return err
	}
	states, err := s.artifactStates(ctx, tenantID, patternID)
	if err != nil {
		return err
	}
	if p.Advance(s.o.Thresholds, states) {
		p.UpdatedAt = s.now()
		return s.o.Store.SavePatterns(ctx, tenantID, []synth.Pattern{p})
	}
	return nil
}

// Rollback retires an artifact: it stops serving and is not scored again.
func (s *Service) Rollback(ctx context.Context, tenantID, id, actor string) (synth.Artifact, error) {
	return s.retire(ctx, tenantID, id, synth.ArtifactRetired, "rolled back by "+actor, actor, EventArtifactRetired)
}

// Quarantine stops an artifact at once, keeping it for inspection.
func (s *Service) Quarantine(ctx context.Context, tenantID, id, actor, reason string) (synth.Artifact, error) {
	if reason == "" {
		reason = "quarantined by " + actor
	}
	return s.retire(ctx, tenantID, id, synth.ArtifactQuarantined, reason, actor, EventArtifactQuarantined)
}

func (s *Service) retire(ctx context.Context, tenantID, id, state, reason, actor, event string) (synth.Artifact, error) {
	a, err := s.o.Store.SetArtifactState(ctx, tenantID, id, state, reason, s.now())
	if err != nil {
		return synth.Artifact{}, err
	}
	s.index.drop(tenantID, id)
	if err := s.advancePattern(ctx, tenantID, a.PatternID); err != nil {
		return synth.Artifact{}, err
	}
	s.reload(ctx, tenantID)
	s.audit(ctx, tenantID, actor, "artifact."+state, a.ID, map[string]any{"pattern": a.PatternID, "reason": reason,
		"confidence": a.Confidence, "lowerBound": a.LowerBound, "alpha": a.Alpha, "beta": a.Beta})
	s.notify(ctx, tenantID, event, a)
	return a, nil
}

// ReplayResult is what a replay found.
type ReplayResult struct {
	Artifact    synth.Artifact     `json:"artifact"`
	Evaluations []synth.Evaluation `json:"evaluations"`
	Passed      int                `json:"passed"`
	Failed      int                `json:"failed"`
	Abstained   int                `json:"abstained"`
}

// Replay re-runs the artifact against recorded runs (its holdout runs when
// runIDs is empty) and records the evaluations. Replays call no provider
// and no tool: their side effects are suppressed by construction.
func (s *Service) Replay(ctx context.Context, tenantID, id string, runIDs []string) (ReplayResult, error) {
	a, err := s.o.Store.Artifact(ctx, tenantID, id)
	if err != nil {
		return ReplayResult{}, err
	}
	if len(runIDs) == 0 {
		runIDs = a.Provenance.HoldoutRunIDs
	}
	if len(runIDs) > 10000 {
		return ReplayResult{}, errs.Invalidf("runIds", "at most 10000 runs are replayed at once")
	}
	ans, err := synth.Compile(a.Type, a.Representation)
	if err != nil {
		return ReplayResult{}, errs.Wrap(err, errs.Internal, "internal", "the artifact cannot be read")
	}
	if err := s.sync(ctx, tenantID); err != nil {
		return ReplayResult{}, err
	}
	runs, err := s.o.Store.LearningRuns(ctx, tenantID, runIDs)
	if err != nil {
		return ReplayResult{}, err
	}
	fb, err := s.o.Store.Feedback(ctx, tenantID)
	if err != nil {
		return ReplayResult{}, err
	}
	p, err := s.o.Store.Pattern(ctx, tenantID, a.PatternID)
	if err != nil {
		return ReplayResult{}, err
	}
	res := ReplayResult{Evaluations: []synth.Evaluation{}}
	now := s.now()
	for i := range runs {
		e, ok := exampleOf(&runs[i], fb)
		if !ok || e.Shape.Key != p.Key {
			continue
		}
		ev := synth.Evaluate(ans, synth.EvalReplay, e)
		ev.ID, ev.TenantID, ev.ArtifactID, ev.CreatedAt = ids.New("ev"), tenantID, a.ID, now
		switch ev.Outcome {
		case synth.OutcomePass:
			res.Passed++
		case synth.OutcomeFail:
			res.Failed++
		default:
			res.Abstained++
		}
		res.Evaluations = append(res.Evaluations, ev)
	}
	if a.SideEffects {
		s.suppressEffects(ctx, tenantID, res.Evaluations)
	}
	res.Artifact, err = s.o.Store.AddEvaluations(ctx, tenantID, a.ID, res.Evaluations, now)
	if err != nil {
		return ReplayResult{}, err
	}
	if err := s.checkQuarantine(ctx, res.Artifact); err != nil {
		return ReplayResult{}, err
	}
	return res, nil
}

// exampleOf reads a live run as an example: its shape and the model's
// answer. ok is false for runs the loop cannot learn from, among them a run
// whose answer was corrected or rated down.
func exampleOf(r *RunRecord, fb map[string]RunFeedback) (synth.Example, bool) {
	if r.Route != ledger.RouteLive {
		return synth.Example{}, false
	}
	sh, err := shape.Parse(r.App, r.Request)
	if err != nil {
		return synth.Example{}, false
	}
	out, ok := shape.ResponseText(r.Response)
	if !ok {
		return synth.Example{}, false
	}
	if f, rated := fb[r.ID]; rated && (f.Correction != "" || f.Rating < 0) {
		// A corrected or rejected answer teaches nothing, and a correction
		// is not taken as a label: any key of the tenant may send one, and
		// it would decide what an artifact answers other people. It counts
		// against the pattern's stability instead.
		return synth.Example{}, false
	}
	return synth.Example{RunID: r.ID, Shape: sh, Output: out}, true
}

// Feedback turns a rating of a run into evidence: on an artifact-served run
// a live evaluation (a negative rating or a correction fails it, a positive
// one passes it), and an artifact whose lower bound falls below the
// threshold is quarantined. A correction of a live run counts against its
// pattern's stability at the next pass.
func (s *Service) Feedback(ctx context.Context, tenantID string, run ledger.Run, rating int, correction string) error {
	if run.Route != ledger.RouteArtifact {
		return nil
	}
	artifactID := servedArtifactID(run.Explanation.Artifact)
	if artifactID == "" {
		return nil
	}
	a, err := s.o.Store.Artifact(ctx, tenantID, artifactID)
	if errs.Is(err, errs.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	got, _ := shape.ResponseText(run.Response)
	ev := synth.Evaluation{ID: ids.New("ev"), TenantID: tenantID, ArtifactID: a.ID, Kind: synth.EvalLive, RunID: run.ID,
		Got: synth.Clip(got), CreatedAt: s.now()}
	switch {
	case rating < 0 || correction != "" && !synth.Agrees(got, correction):
		ev.Outcome, ev.Expected, ev.Reason = synth.OutcomeFail, synth.Clip(correction), "a person rated the answer down"
		if correction != "" {
			ev.Reason = "a person corrected the answer"
		}
	default:
		ev.Outcome, ev.Expected, ev.Reason = synth.OutcomePass, synth.Clip(got), "a person rated the answer up"
	}
	a, err = s.o.Store.AddEvaluations(ctx, tenantID, a.ID, []synth.Evaluation{ev}, ev.CreatedAt)
	if err != nil {
		return err
	}
	return s.checkQuarantine(ctx, a)
}

// checkQuarantine quarantines a promoted artifact whose evidence turned.
func (s *Service) checkQuarantine(ctx context.Context, a synth.Artifact) error {
	if a.State != synth.ArtifactPromoted {
		return nil
	}
	reason := ""
	if s.o.Thresholds.ShouldQuarantine(&a) {
		reason = fmt.Sprintf("quarantined automatically: lower bound %.3f (alpha %.0f, beta %.0f) fell below %.2f",
			a.LowerBound, a.Alpha, a.Beta, s.o.Thresholds.LowerBound)
	} else {
		recent, err := s.o.Store.Evaluations(ctx, a.TenantID, a.ID, 4*synth.RecentWindow)
		if err != nil {
			return err
		}
		if !s.o.Thresholds.TurnedRecently(recent) {
			return nil
		}
		reason = fmt.Sprintf("quarantined automatically: its newest evidence turned (the upper bound of its last %d verdicts is below %.2f)",
			synth.RecentWindow, s.o.Thresholds.LowerBound)
	}
	_, err := s.retire(ctx, a.TenantID, a.ID, synth.ArtifactQuarantined, reason, "svc", EventArtifactQuarantined)
	return err
}

// servedArtifactID reads the artifact id of a run's routeExplanation.artifact.
func servedArtifactID(detail any) string {
	switch d := detail.(type) {
	case map[string]any:
		id, _ := d["id"].(string)
		return id
	case *ArtifactDetailOfRun:
		return d.ID
	case json.RawMessage:
		var x struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(d, &x)
		return x.ID
	}
	return ""
}

// ArtifactDetailOfRun is a run's routeExplanation.artifact.
type ArtifactDetailOfRun struct {
	ID        string  `json:"id"`
	PatternID string  `json:"patternId"`
	Type      string  `json:"type"`
	State     string  `json:"state"`
	Served    bool    `json:"served"`
	Abstained bool    `json:"abstained"`
	Canary    bool    `json:"canary,omitempty"`
	Shadow    string  `json:"shadow,omitempty"` // outcome of the shadow evaluation
	Reason    string  `json:"reason"`
	SavedUSD  float64 `json:"savedUsd"`
	SavedMS   float64 `json:"savedMs"`
}

// LearningReports is the last report and the history.
type LearningReports struct {
	Last    *Report  `json:"last"`
	History []Report `json:"history"`
	Report
}

// Reports returns the tenant's last learning report (its fields also at
// the top level, so the answer is itself a report) and up to 50 before it.
func (s *Service) Reports(ctx context.Context, tenantID string) (LearningReports, error) {
	rs, err := s.o.Store.Reports(ctx, tenantID, 50)
	if err != nil {
		return LearningReports{}, err
	}
	out := LearningReports{History: rs, Report: Report{PromotionsEligible: []string{}, AutoPromoted: []string{},
		SynthesisReports: []synth.Report{}, Quarantined: []string{}, Retired: []string{}, Transitions: []Transition{}}}
	if len(rs) > 0 {
		out.Last = &rs[0]
		out.Report = rs[0]
	}
	return out, nil
}

func (s *Service) audit(ctx context.Context, tenantID, actor, action, target string, details map[string]any) {
	if s.o.Audit == nil {
		return
	}
	s.o.Audit.Record(ctx, audit.Event{TenantID: tenantID, Actor: actor, Action: action, Decision: audit.Allow,
		Target: target, Details: details})
}

func (s *Service) notify(ctx context.Context, tenantID, event string, a any) {
	if s.o.Notifier != nil {
		s.o.Notifier.Notify(ctx, tenantID, event, a)
	}
}
