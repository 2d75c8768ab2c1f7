package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/paging"
	"github.com/svc-gateway/svc/internal/strictjson"
)

// Page sizes of a run listing.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Service answers the runs API.
type Service struct {
	store  Store
	synced Syncer
	now    func() time.Time
}

// Syncer makes every run recorded so far readable from the store; the
// Recorder is one.
type Syncer interface {
	Sync(ctx context.Context) error
}

// NewService returns a service over store. Every read first syncs the
// recorder, so that a run is readable as soon as its call was answered.
func NewService(store Store, recorder Syncer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, synced: recorder, now: now}
}

// sync waits for the recorder to store what it has journaled.
func (s *Service) sync(ctx context.Context) error {
	if err := s.synced.Sync(ctx); err != nil {
		return errs.Wrap(err, errs.Internal, "internal", "recorded runs could not be read")
	}
	return nil
}

// Validate checks f and fills its default limit.
func (f *Filter) Validate() error {
	if err := f.validateFields(); err != nil {
		return err
	}
	if len(f.Q) > maxFilterText || !utf8.ValidString(f.Q) {
		return errs.Invalidf("q", "q must be text of at most %d bytes", maxFilterText)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return errs.Invalidf("until", "until must be later than since")
	}
	var err error
	if f.Limit, err = paging.Limit(f.Limit, DefaultLimit, MaxLimit); err != nil {
		return err
	}
	f.Offset, err = paging.Offset(f.Offset)
	return err
}

// ValidateMatch checks a live stream's filter: route, status, app, agent
// model and traceId (see Matches); a search, a time range or paging is refused.
func (f *Filter) ValidateMatch() error {
	switch {
	case f.Q != "":
		return errs.Invalidf("q", "a live stream cannot search; q is for the list")
	case !f.Since.IsZero():
		return errs.Invalidf("since", "a live stream has no time range; since is for the list")
	case !f.Until.IsZero():
		return errs.Invalidf("until", "a live stream has no time range; until is for the list")
	case f.Limit != 0:
		return errs.Invalidf("limit", "a live stream has no pages; limit is for the list")
	case f.Offset != 0:
		return errs.Invalidf("offset", "a live stream has no pages; offset is for the list")
	}
	return f.validateFields()
}

// validateFields checks the fields a list and a live stream share.
func (f *Filter) validateFields() error {
	switch f.Route {
	case "", RouteLive, RouteExactCache, RouteArtifact, RouteBlocked:
	default:
		return errs.Invalidf("route", "route must be one of live, exact_cache, artifact, blocked")
	}
	switch f.Status {
	case "", StatusOK, StatusError, StatusBlocked:
	default:
		return errs.Invalidf("status", "status must be ok, error or blocked")
	}
	for _, p := range []struct{ name, v string }{{"app", f.App}, {"agent", f.Agent}, {"model", f.Model}} {
		if len(p.v) > maxFilterText || !utf8.ValidString(p.v) {
			return errs.Invalidf(p.name, "%s must be text of at most %d bytes", p.name, maxFilterText)
		}
	}
	if f.TraceID != "" {
		id, err := trace.TraceIDFromHex(strings.ToLower(f.TraceID))
		if err != nil {
			return errs.Invalidf("traceId", "traceId must be a W3C trace id: 32 hex digits, not all zero")
		}
		f.TraceID = id.String()
	}
	return nil
}

// List returns a page of the tenant's runs, newest first, and how many
// match in all.
func (s *Service) List(ctx context.Context, tenantID string, f Filter) ([]Run, int, error) {
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	if err := s.sync(ctx); err != nil {
		return nil, 0, err
	}
	return s.store.ListRuns(ctx, tenantID, f)
}

// Run returns one of the tenant's runs, without its trace.
func (s *Service) Run(ctx context.Context, tenantID, id string) (Run, error) {
	return s.run(ctx, tenantID, id)
}

func (s *Service) run(ctx context.Context, tenantID, id string) (Run, error) {
	if !ids.Valid("run", id) {
		return Run{}, errs.NotFoundf("run not found")
	}
	if err := s.sync(ctx); err != nil {
		return Run{}, err
	}
	return s.store.Run(ctx, tenantID, id)
}

// Detail is a run with its whole trace.
type Detail struct {
	Run         Run          `json:"run"`
	Events      []Event      `json:"events"`
	SideEffects []SideEffect `json:"sideEffects"`
}

// Get returns a run with its events.
func (s *Service) Get(ctx context.Context, tenantID, id string) (Detail, error) {
	run, err := s.run(ctx, tenantID, id)
	if err != nil {
		return Detail{}, err
	}
	events, _, err := s.store.RunEvents(ctx, tenantID, id)
	if err != nil {
		return Detail{}, err
	}
	effects, err := s.store.SideEffects(ctx, tenantID, id)
	if err != nil {
		return Detail{}, err
	}
	return Detail{Run: run, Events: events, SideEffects: effects}, nil
}

// Integrity recomputes a run's chain from the run as stored: an edited
// field, event or head, or deleted events, are reported. A chain rewritten
// whole to fit an edit is found only against the signed checkpoints (svc
// verify).
func (s *Service) Integrity(ctx context.Context, tenantID, id string) (Integrity, error) {
	c, err := s.chain(ctx, tenantID, id)
	if err != nil {
		return Integrity{}, err
	}
	return c.Verify(), nil
}

func (s *Service) chain(ctx context.Context, tenantID, id string) (StoredRun, error) {
	if !ids.Valid("run", id) {
		return StoredRun{}, errs.NotFoundf("run not found")
	}
	if err := s.sync(ctx); err != nil {
		return StoredRun{}, err
	}
	return s.store.RunChain(ctx, tenantID, id)
}

// Bundle is everything needed to replay a run elsewhere.
type Bundle struct {
	Version    int             `json:"version"`
	ExportedAt time.Time       `json:"exportedAt"`
	Run        Run             `json:"run"`
	Provider   string          `json:"provider"`
	Model      string          `json:"model"`
	Request    json.RawMessage `json:"request"`
	Response   json.RawMessage `json:"response"`
	Verdict    Verdict         `json:"verdict"`
	Events     []Event         `json:"events"`
	Integrity  Integrity       `json:"integrity"`
}

// ReplayBundle exports a run for replay.
func (s *Service) ReplayBundle(ctx context.Context, tenantID, id string) (Bundle, error) {
	c, err := s.chain(ctx, tenantID, id)
	if err != nil {
		return Bundle{}, err
	}
	req, res := c.Run.Request, c.Run.Response
	run := c.Run
	run.Request, run.Response = nil, nil
	if res == nil {
		res = json.RawMessage("null")
	}
	return Bundle{
		Version: 1, ExportedAt: s.now().UTC(), Run: run, Provider: run.Provider, Model: run.Model,
		Request: req, Response: res, Verdict: run.Explanation.Policy, Events: c.Events,
		Integrity: c.Verify(),
	}, nil
}

// FeedbackInput is a rating as the API receives it.
type FeedbackInput struct {
	Type       string
	Rating     int
	Correction string
}

// AddFeedback validates and stores a rating of a run, and appends it to the
// run's trace.
func (s *Service) AddFeedback(ctx context.Context, tenantID, runID string, in FeedbackInput) (Feedback, error) {
	switch {
	case in.Type != "rating":
		return Feedback{}, errs.Invalidf("type", "type must be \"rating\"")
	case in.Rating != 1 && in.Rating != -1:
		return Feedback{}, errs.Invalidf("rating", "rating must be 1 or -1")
	case len(in.Correction) > 100_000 || !utf8.ValidString(in.Correction):
		return Feedback{}, errs.Invalidf("correction", "correction must be text of at most 100000 bytes")
	}
	if _, err := s.run(ctx, tenantID, runID); err != nil {
		return Feedback{}, err
	}
	f := Feedback{ID: ids.New("fb"), TenantID: tenantID, RunID: runID, Rating: in.Rating,
		Correction: in.Correction, CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	if err := s.store.AddFeedback(ctx, &f); err != nil {
		return Feedback{}, err
	}
	payload, err := json.Marshal(map[string]any{"feedbackId": f.ID, "rating": f.Rating, "correction": f.Correction})
	if err != nil {
		return Feedback{}, err
	}
	if _, err := s.store.AppendEvent(ctx, tenantID, runID, "feedback", f.CreatedAt, payload); err != nil {
		return Feedback{}, err
	}
	return f, nil
}

// maxEventType bounds a trace event's type name.
const maxEventType = 100

// Trace appends an event of type typ to a run's trace. payload must be a
// JSON object.
func (s *Service) Trace(ctx context.Context, tenantID, runID, typ string, payload json.RawMessage) (Event, error) {
	typ = strings.TrimSpace(typ)
	if typ == "" || len(typ) > maxEventType || !printable(typ) {
		return Event{}, errs.Invalidf("type", "type must be printable text of 1 to %d bytes", maxEventType)
	}
	canonical, err := CanonicalPayload(payload)
	var keyErr *strictjson.KeyError
	switch {
	case errors.As(err, &keyErr):
		return Event{}, errs.Invalidf("payload."+keyErr.Param(), "payload: %s", keyErr.Error())
	case err != nil:
		return Event{}, errs.Invalidf("payload", "payload must be a JSON object")
	}
	if _, err := s.run(ctx, tenantID, runID); err != nil {
		return Event{}, err
	}
	return s.store.AppendEvent(ctx, tenantID, runID, typ, s.now(), canonical)
}

// Agents lists the tenant's agents.
func (s *Service) Agents(ctx context.Context, tenantID string) ([]Agent, error) {
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	return s.store.ListAgents(ctx, tenantID)
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}
