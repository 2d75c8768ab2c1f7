// Package approval holds requests that a policy sent for a person to decide:
// who asked for what, which rules held it, and the decision. An approved
// request becomes an exception: the identical request (same fingerprint)
// passes until the tenant's approval_exception_ttl_hours have run out. One
// caller may hold at most the tenant's approval_pending_limit of them
// pending.
package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/paging"
)

// The statuses of an approval.
const (
	Pending  = "pending"
	Approved = "approved"
	Rejected = "rejected"
)

// Rule is a policy rule that asked for the approval.
type Rule struct {
	ID     string `json:"id"`
	Effect string `json:"effect"`
	Reason string `json:"reason"`
}

// Requester is who made the request held for approval.
type Requester struct {
	Actor   string `json:"actor"`
	App     string `json:"app"`
	Agent   string `json:"agent"`
	Subject string `json:"subject"`
}

// Approval is one request held for a decision.
type Approval struct {
	ID          string          `json:"id"`
	TenantID    string          `json:"-"`
	Status      string          `json:"status"`
	Target      string          `json:"target"` // chat, tool or web
	Fingerprint string          `json:"fingerprint"`
	RunID       string          `json:"runId,omitempty"`
	Request     json.RawMessage `json:"request"` // what was asked
	RequestedBy Requester       `json:"requestedBy"`
	Rules       []Rule          `json:"rules"`
	CreatedAt   time.Time       `json:"createdAt"`
	DecidedAt   *time.Time      `json:"decidedAt"`
	DecidedBy   string          `json:"decidedBy,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	// ExpiresAt is when an approval's exception ends.
	ExpiresAt *time.Time `json:"expiresAt"`
}

// Filter narrows a listing.
type Filter struct {
	Status string
	Limit  int
}

// Page sizes of a listing.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

// Validate checks f and fills its default limit.
func (f *Filter) Validate() error {
	switch f.Status {
	case "", Pending, Approved, Rejected:
	default:
		return errs.Invalidf("status", "status must be one of pending, approved, rejected")
	}
	var err error
	f.Limit, err = paging.Limit(f.Limit, DefaultLimit, MaxLimit)
	return err
}

// ErrPendingLimit is what Store.OpenApproval returns for a caller who has
// as many approvals pending as the limit allows.
var ErrPendingLimit = errors.New("pending approval limit reached")

// Store persists approvals. Every method is scoped to the tenant.
type Store interface {
	// OpenApproval stores a, unless a pending approval of the tenant has
	// its fingerprint: then it returns that one and false. It returns
	// ErrPendingLimit, storing nothing, when a new approval would be the
	// limit+1st pending one of a.RequestedBy.Actor.
	OpenApproval(ctx context.Context, a *Approval, limit int) (Approval, bool, error)
	// Approval returns one approval, errs.NotFound for an unknown or
	// foreign id.
	Approval(ctx context.Context, tenantID, id string) (Approval, error)
	// ListApprovals returns the tenant's approvals, newest first.
	ListApprovals(ctx context.Context, tenantID string, f Filter) ([]Approval, error)
	// DecideApproval records a decision on a pending approval; errs.Conflict
	// when it is no longer pending.
	DecideApproval(ctx context.Context, a *Approval) error
	// ApprovedException returns the approval of the tenant with the
	// fingerprint whose exception lasts past now, if any.
	ApprovedException(ctx context.Context, tenantID, fingerprint string, now time.Time) (*Approval, error)
}

// Settings are the tenant's settings approvals follow.
type Settings interface {
	// ExceptionTTL is how long an approval grants an exception.
	ExceptionTTL(ctx context.Context, tenantID string) (time.Duration, error)
	// PendingApprovalLimit is how many approvals one caller may have
	// pending at once.
	PendingApprovalLimit(ctx context.Context, tenantID string) (int, error)
}

// Service opens, lists and decides approvals.
type Service struct {
	store    Store
	settings Settings
	now      func() time.Time
}

// NewService returns a service over store.
func NewService(store Store, settings Settings, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, settings: settings, now: now}
}

// RetryPending is how long a caller at the pending limit is told to wait:
// a person has to decide first, which takes minutes rather than seconds.
const RetryPending = time.Minute

// Request is what a policy held.
type Request struct {
	TenantID    string
	Target      string
	Fingerprint string
	RunID       string
	Request     json.RawMessage
	RequestedBy Requester
	Rules       []Rule
}

// Open holds r for a decision. Asking again while the first approval is
// pending returns that approval rather than a second one; created says
// which happened. A caller (r.RequestedBy.Actor: one API key, one
// signed-in user) with as many approvals pending as the tenant's limit
// gets errs.RateLimited instead of another.
func (s *Service) Open(ctx context.Context, r Request) (a Approval, created bool, err error) {
	limit, err := s.settings.PendingApprovalLimit(ctx, r.TenantID)
	if err != nil {
		return Approval{}, false, err
	}
	rules := r.Rules
	if rules == nil {
		rules = []Rule{}
	}
	a, created, err = s.store.OpenApproval(ctx, &Approval{
		ID: ids.New("apr"), TenantID: r.TenantID, Status: Pending, Target: r.Target, Fingerprint: r.Fingerprint,
		RunID: r.RunID, Request: r.Request, RequestedBy: r.RequestedBy, Rules: rules,
		CreatedAt: s.now().UTC().Truncate(time.Millisecond),
	}, limit)
	if errors.Is(err, ErrPendingLimit) {
		return Approval{}, false, &errs.Error{Kind: errs.RateLimited, Code: "too_many_pending_approvals", Retry: RetryPending,
			Public: fmt.Sprintf("this caller already has %d requests waiting for approval (the tenant's approval_pending_limit); "+
				"no other can be held until one of them is decided", limit)}
	}
	return a, created, err
}

// Exception returns the approval that lets the request with fingerprint
// pass now, or nil.
func (s *Service) Exception(ctx context.Context, tenantID, fingerprint string) (*Approval, error) {
	return s.store.ApprovedException(ctx, tenantID, fingerprint, s.now())
}

// List returns the tenant's approvals matching f, newest first.
func (s *Service) List(ctx context.Context, tenantID string, f Filter) ([]Approval, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return s.store.ListApprovals(ctx, tenantID, f)
}

// maxReason bounds a decision's reason.
const maxReason = 2000

// Decide approves or rejects a pending approval, recording who and why.
func (s *Service) Decide(ctx context.Context, tenantID, id string, approve bool, reason, decidedBy string) (Approval, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" || len(reason) > maxReason || !utf8.ValidString(reason) {
		return Approval{}, errs.Invalidf("reason", "reason must be text of 1 to %d bytes", maxReason)
	}
	if !ids.Valid("apr", id) {
		return Approval{}, errs.NotFoundf("approval not found")
	}
	a, err := s.store.Approval(ctx, tenantID, id)
	if err != nil {
		return Approval{}, err
	}
	if a.Status != Pending {
		return Approval{}, errs.E(errs.Conflict, "already_decided", "the approval was already %s", a.Status)
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	a.Status, a.DecidedAt, a.DecidedBy, a.Reason = Rejected, &now, decidedBy, reason
	if approve {
		ttl, err := s.settings.ExceptionTTL(ctx, tenantID)
		if err != nil {
			return Approval{}, err
		}
		expires := now.Add(ttl)
		a.Status, a.ExpiresAt = Approved, &expires
	}
	if err := s.store.DecideApproval(ctx, &a); err != nil {
		return Approval{}, err
	}
	return a, nil
}
