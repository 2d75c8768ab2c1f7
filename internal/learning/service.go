// Package learning runs the learning loop: the Service that passes over a
// tenant's runs (the pass and its job), the operator's actions on patterns
// and artifacts (one file each: ignore, synthesize, promote, retire and
// quarantine, replay, feedback, reports, listing), the in-memory serving
// Index the gateway reads, the shadow evidence buffer and its flusher, and
// the side effects a replay or shadow evaluation suppresses. The
// algorithms it runs are pure and live beside it: request shapes in shape,
// patterns, artifacts and synthesis in synth, the Beta posterior in beta.
// It knows nothing of HTTP or SQL.
package learning

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/metrics"
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
	// SetArtifactState changes an artifact's state, and returns it with
	// the state it had before. Returns errs.NotFound for an unknown
	// artifact.
	SetArtifactState(ctx context.Context, tenantID, id, state, reason string, at time.Time) (a synth.Artifact, previous string, err error)
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
	// Metrics counts the shadow evaluations and the quarantines; nil
	// counts nothing.
	Metrics *metrics.Metrics
}

// Service runs the learning loop.
type Service struct {
	o      Options
	index  *Index
	passMu sync.Mutex // one pass at a time
	// reloading holds a *sync.Mutex per tenant: its index reloads in turn.
	reloading sync.Map
	shadow    shadowBuffer
	feed      changes.Feed  // Replicate: changes shared with the other replicas
	follow    *follower     // Replicate: the reloads other replicas' notices call for
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
	o.Metrics.KnownArtifactTypes(synth.TypeClassifier, synth.TypeTemplate, synth.TypeExtractor, synth.TypeLookup)
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
	for t, rs := range byTenant(rows) {
		s.index.set(t, rs, s.o.Logger)
	}
	return nil
}

// byTenant groups serving rows by their tenant.
func byTenant(rows []ServingRow) map[string][]ServingRow {
	out := map[string][]ServingRow{}
	for _, r := range rows {
		out[r.Artifact.TenantID] = append(out[r.Artifact.TenantID], r)
	}
	return out
}

// ForgetTenant takes a deleted tenant's artifacts out of the serving
// index, under its reload lock, so that a reload that read them before the
// deletion cannot put them back.
func (s *Service) ForgetTenant(tenantID string) {
	mu := s.reloadLock(tenantID)
	mu.Lock()
	defer mu.Unlock()
	s.index.forget(tenantID)
	s.reloading.Delete(tenantID)
}

// reloadLock is the lock the tenant's reloads take in turn.
func (s *Service) reloadLock(tenantID string) *sync.Mutex {
	mu, _ := s.reloading.LoadOrStore(tenantID, new(sync.Mutex))
	return mu.(*sync.Mutex)
}

// reload rebuilds one tenant's part of the serving index. Reloads of a
// tenant run one at a time, read and swap together, so that one that read
// the artifacts before a quarantine cannot finish after the reload that
// follows the quarantine and put the artifact back.
func (s *Service) reload(ctx context.Context, tenantID string) {
	mu := s.reloadLock(tenantID)
	mu.Lock()
	defer mu.Unlock()
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
