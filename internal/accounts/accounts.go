// Package accounts is how people use svc: users and their passwords,
// organizations and memberships, invitations, self-serve signup, address
// verification and password reset. Sessions and password hashing belong to
// package auth; this package decides who may become what, and tells them by
// email.
package accounts

import (
	"context"
	"crypto/sha256"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/email"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/tenant"
)

// Platform roles.
const (
	PlatformAdmin  = "admin"
	PlatformMember = "member"
)

// Lifetimes of one-time links.
const (
	InviteLifetime = 7 * 24 * time.Hour
	VerifyLifetime = 7 * 24 * time.Hour
	ResetLifetime  = time.Hour
)

// Token kinds of user_tokens.
const (
	TokenVerify = "verify"
	TokenReset  = "reset"
)

// User is a person with an account.
type User struct {
	ID            string    `json:"id"`
	Email         string    `json:"email"`
	Name          string    `json:"name"`
	Role          string    `json:"role"` // platform role
	EmailVerified bool      `json:"emailVerified"`
	CreatedAt     time.Time `json:"-"`
}

// Org is one of a user's organizations.
type Org struct {
	TenantID  string    `json:"tenantId"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"createdAt"` // the organization's, not the membership's
}

// Member is a user of an organization.
type Member struct {
	UserID string `json:"userId"`
	Email  string `json:"email"`
	Name   string `json:"name"`
	Role   string `json:"role"`
}

// NewUser is a user to create with a first membership. When OrgName is set,
// the organization TenantID is created with it.
type NewUser struct {
	User
	PasswordHash string
	TenantID     string
	OrgRole      string
	OrgName      string
}

// Store keeps users, memberships, one-time tokens and invitations.
type Store interface {
	// UserByEmail and UserByID return errs.NotFound for no such user, and
	// the user's password hash.
	UserByEmail(ctx context.Context, email string) (User, string, error)
	UserByID(ctx context.Context, id string) (User, string, error)
	// CreateUser returns errs.Conflict when the email is taken.
	CreateUser(ctx context.Context, u NewUser) error
	// EnsureAdmin creates u as a platform admin, or raises the existing
	// user of u.Email to admin without touching the password; either way
	// the user is verified and an owner of u.TenantID. It reports whether
	// the user was created.
	EnsureAdmin(ctx context.Context, u NewUser) (bool, error)
	SetPassword(ctx context.Context, userID, hash string, at time.Time) error
	SetEmailVerified(ctx context.Context, userID string, at time.Time) error

	// Tenant returns errs.NotFound for an unknown tenant.
	Tenant(ctx context.Context, id string) (tenant.Tenant, error)
	// UserOrgs lists the user's organizations, oldest membership first,
	// Active unset.
	UserOrgs(ctx context.Context, userID string) ([]Org, error)
	// CreateOrg creates t with ownerID as its owner.
	CreateOrg(ctx context.Context, t tenant.Tenant, ownerID string) error
	RenameOrg(ctx context.Context, tenantID, name string) error
	Members(ctx context.Context, tenantID string) ([]Member, error)
	// Member returns userID's membership of tenantID, or errs.NotFound.
	Member(ctx context.Context, tenantID, userID string) (Member, error)
	// SetMemberRole and RemoveMember change a membership: errs.NotFound
	// when userID is not a member of tenantID, ErrLastOwner when the change
	// would leave the tenant without an owner (decided in the change's
	// transaction).
	SetMemberRole(ctx context.Context, tenantID, userID, role string) (Member, error)
	RemoveMember(ctx context.Context, tenantID, userID string) error
	// DeleteOrg deletes the tenant and every record of it, in every table,
	// in one transaction.
	DeleteOrg(ctx context.Context, tenantID string) error

	CreateUserToken(ctx context.Context, hash [32]byte, kind, userID string, at, expires time.Time) error
	// ConsumeUserToken marks a live token used and returns its user;
	// errs.NotFound when it is unknown, used, expired or of another kind.
	ConsumeUserToken(ctx context.Context, hash [32]byte, kind string, at time.Time) (string, error)
	// DropUserTokens removes the user's unused tokens of kind.
	DropUserTokens(ctx context.Context, userID, kind string) error

	CreateInvite(ctx context.Context, inv Invite, hash [32]byte) error
	Invites(ctx context.Context, tenantID string) ([]Invite, error)
	// PendingInvite returns the tenant's pending invite of email, or
	// errs.NotFound.
	PendingInvite(ctx context.Context, tenantID, email string) (Invite, error)
	// InviteByToken returns the invite and its org's name, or errs.NotFound.
	InviteByToken(ctx context.Context, hash [32]byte) (Invite, string, error)
	// SetInviteStatus moves the tenant's invite from pending to status;
	// errs.NotFound for an unknown or foreign invite, errs.Conflict when it
	// is not pending.
	SetInviteStatus(ctx context.Context, tenantID, id, status string, at time.Time) (Invite, error)
	// AcceptInvite marks the pending invite accepted by userID and adds the
	// membership, creating newUser first when it is not nil; errs.Conflict
	// when the invite is no longer pending.
	AcceptInvite(ctx context.Context, inv Invite, userID string, newUser *NewUser, at time.Time) error
	// ExpireInvites marks pending invites past their expiry expired.
	ExpireInvites(ctx context.Context, at time.Time) (int, error)
}

// Mailer sends a message without failing or blocking.
type Mailer interface {
	Send(to string, msg email.Message)
}

// Options configure a Service.
type Options struct {
	Store    Store
	Sessions *auth.SessionManager
	Hasher   *auth.Hasher
	Mailer   Mailer
	Audit    *audit.Log
	Logger   hclog.Logger
	// BaseURL begins the links in emails (SVC_APP_BASE_URL), without a
	// trailing slash.
	BaseURL string
	// AllowSignup is SVC_ALLOW_PUBLIC_SIGNUP.
	AllowSignup bool
	// Forget is told of each deleted org, so that nothing of it stays in
	// memory.
	Forget []Forgetter
	Now    func() time.Time
}

// Service is the accounts domain.
type Service struct {
	Options
}

// NewService returns a service.
func NewService(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Service{Options: o}
}

func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Millisecond) }

// newToken returns a one-time token and the sha256 that is stored.
func newToken() (string, [32]byte) {
	raw := ids.Secret()
	return raw, sha256.Sum256([]byte(raw))
}

// tokenHash is the stored form of a raw token from a link.
func tokenHash(raw string) ([32]byte, bool) {
	if raw == "" || len(raw) > 128 {
		return [32]byte{}, false
	}
	return sha256.Sum256([]byte(raw)), true
}

// NormalizeEmail lowercases and checks an address: a bare addr-spec of at
// most 254 bytes.
func NormalizeEmail(s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	if e == "" || len(e) > 254 {
		return "", errs.Invalidf("email", "email must be an address of at most 254 characters")
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" {
		return "", errs.Invalidf("email", "email must be a plain address such as name@example.com")
	}
	return e, nil
}

// cleanName checks a person's or an organization's name.
func cleanName(field, s string) (string, error) {
	n := strings.TrimSpace(s)
	if n == "" || utf8.RuneCountInString(n) > 100 || !printable(n) {
		return "", errs.Invalidf(field, "%s must be 1 to 100 printable characters", field)
	}
	return n, nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// record writes an audit event of a person's action.
func (s *Service) record(ctx context.Context, tenantID, actor, action, target string, details map[string]any) {
	if s.Audit == nil || tenantID == "" {
		return
	}
	s.Audit.Record(ctx, audit.Event{TenantID: tenantID, Actor: actor, Action: action, Decision: audit.Allow,
		Target: target, Details: details})
}

func userActor(id string) string { return "user:" + id }

// link returns <base>/<path>?token=<raw>.
func (s *Service) link(path, raw string) string {
	return s.BaseURL + path + "?token=" + raw
}

// Bootstrap makes sure the operator's admin from SVC_ADMIN_EMAIL and
// SVC_ADMIN_PASSWORD exists: created verified, owner of the default tenant,
// platform admin. An existing user is raised to admin; their password is
// never reset. Running it again changes nothing.
func (s *Service) Bootstrap(ctx context.Context, addr, password string) error {
	e, err := NormalizeEmail(addr)
	if err != nil {
		return err
	}
	if err := auth.ValidatePassword(password); err != nil {
		return err
	}
	hash, err := s.Hasher.Hash(password)
	if err != nil {
		return err
	}
	name, _, _ := strings.Cut(e, "@")
	created, err := s.Store.EnsureAdmin(ctx, NewUser{
		User:         User{ID: ids.New("usr"), Email: e, Name: name, Role: PlatformAdmin, EmailVerified: true, CreatedAt: s.now()},
		PasswordHash: hash, TenantID: tenant.DefaultID, OrgRole: auth.RoleOwner,
	})
	if err != nil {
		return err
	}
	s.Sessions.UserCreated()
	s.Sessions.Invalidate()
	if created {
		s.Logger.Info("bootstrap admin created", "email", e)
	}
	return nil
}
