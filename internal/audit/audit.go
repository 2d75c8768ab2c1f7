// Package audit keeps the tenant's trail of decisions: who did what, and what
// svc allowed, denied or held for approval. Writing an event never fails the
// request that caused it.
package audit

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/paging"
)

// The decisions an event records.
const (
	Allow           = "allow"
	Deny            = "deny"
	RequireApproval = "require_approval"
)

// Event is one audit record.
type Event struct {
	ID       string         `json:"id"`
	TenantID string         `json:"-"`
	At       time.Time      `json:"at"`
	Actor    string         `json:"actor"`
	Action   string         `json:"action"`
	Decision string         `json:"decision"`
	Target   string         `json:"target"`
	Details  map[string]any `json:"details"`
}

// Filter narrows a listing. Empty fields match every event.
type Filter struct {
	Decision string
	// Action and Actor match exactly ("key.create", "user:usr_…").
	Action string
	Actor  string
	// Since and Until bound the event's time: Since included, Until not.
	Since time.Time
	Until time.Time
	Limit int
}

// maxFilterText bounds a filter's text fields.
const maxFilterText = 200

// Page sizes of a listing.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Validate checks f and fills its default limit.
func (f *Filter) Validate() error {
	switch f.Decision {
	case "", Allow, Deny, RequireApproval:
	default:
		return errs.Invalidf("decision", "decision must be one of allow, deny, require_approval")
	}
	for _, p := range []struct{ name, v string }{{"action", f.Action}, {"actor", f.Actor}} {
		if len(p.v) > maxFilterText || !utf8.ValidString(p.v) {
			return errs.Invalidf(p.name, "%s must be text of at most %d bytes", p.name, maxFilterText)
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return errs.Invalidf("until", "until must be later than since")
	}
	var err error
	f.Limit, err = paging.Limit(f.Limit, DefaultLimit, MaxLimit)
	return err
}

// Store persists events.
type Store interface {
	// AppendAudit stores e.
	AppendAudit(ctx context.Context, e *Event) error
	// ListAudit returns the tenant's events, newest first.
	ListAudit(ctx context.Context, tenantID string, f Filter) ([]Event, error)
}

// Log writes and reads the audit trail.
type Log struct {
	store  Store
	logger hclog.Logger
	now    func() time.Time
}

// NewLog returns an audit log over store. Failures to write are logged to
// logger.
func NewLog(store Store, logger hclog.Logger, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{store: store, logger: logger, now: now}
}

// Record appends e, filling its id and time. A write failure is logged, not
// returned: the audited action has already happened.
func (l *Log) Record(ctx context.Context, e Event) {
	e.ID = ids.New("aud")
	e.At = l.now().UTC().Truncate(time.Millisecond)
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	// The event outlives a cancelled request.
	if err := l.store.AppendAudit(context.WithoutCancel(ctx), &e); err != nil {
		l.logger.Error("audit write failed", "tenant", e.TenantID, "action", e.Action, "error", err)
	}
}

// List returns the tenant's events matching f, newest first.
func (l *Log) List(ctx context.Context, tenantID string, f Filter) ([]Event, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return l.store.ListAudit(ctx, tenantID, f)
}
