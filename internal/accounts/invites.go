package accounts

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/email"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
)

// Invite statuses.
const (
	InvitePending  = "pending"
	InviteAccepted = "accepted"
	InviteRevoked  = "revoked"
	InviteExpired  = "expired"
)

// Invite is an invitation of an email address into an organization. Its
// token exists only in the accept link; the store keeps its sha256.
type Invite struct {
	ID         string     `json:"id"`
	TenantID   string     `json:"-"`
	Email      string     `json:"email"`
	Role       string     `json:"role"`
	Status     string     `json:"status"`
	Inviter    string     `json:"-"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  time.Time  `json:"expiresAt"`
	DecidedAt  *time.Time `json:"-"`
	AcceptedBy string     `json:"-"`
}

// readAs returns inv as it reads at now: a pending invite past its expiry
// is expired, whether or not the sweep has marked it yet.
func (inv Invite) readAs(now time.Time) Invite {
	if inv.Status == InvitePending && !now.Before(inv.ExpiresAt) {
		inv.Status = InviteExpired
	}
	return inv
}

// InviteInfo is what the public lookup of an invite link tells.
type InviteInfo struct {
	Valid      bool       `json:"valid"`
	Status     string     `json:"status"` // an invite status, or "invalid" for an unknown link
	OrgName    string     `json:"orgName,omitempty"`
	Email      string     `json:"email,omitempty"`
	Role       string     `json:"role,omitempty"`
	UserExists bool       `json:"userExists"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
}

// Accepted is the outcome of accepting an invite.
type Accepted struct {
	User     User   `json:"user"`
	TenantID string `json:"tenantId"`
	OrgName  string `json:"orgName"`
	// NewUser says the account was created by the acceptance; the caller
	// starts its session.
	NewUser bool `json:"-"`
}

// CreateInvite invites addr into the caller's organization with role (admin
// or member), sends the invite email and returns the invite with its accept
// link, the only time the raw token is shown. A pending invite of the same
// address is revoked: the newest link is the one that works.
func (s *Service) CreateInvite(ctx context.Context, id *auth.Identity, addr, role string) (Invite, string, error) {
	if err := auth.RequireAdmin(id); err != nil {
		return Invite{}, "", err
	}
	e, err := NormalizeEmail(addr)
	if err != nil {
		return Invite{}, "", err
	}
	if role != auth.RoleAdmin && role != auth.RoleMember {
		return Invite{}, "", errs.Invalidf("role", "role must be \"admin\" or \"member\"")
	}
	inviterName := "An administrator"
	if u, _, err := s.Store.UserByEmail(ctx, e); err == nil {
		orgs, err := s.Store.UserOrgs(ctx, u.ID)
		if err != nil {
			return Invite{}, "", err
		}
		for _, o := range orgs {
			if o.TenantID == id.TenantID {
				return Invite{}, "", errs.E(errs.Conflict, "already_member", "%s is already a member of this organization", e)
			}
		}
	} else if !errs.Is(err, errs.NotFound) {
		return Invite{}, "", err
	}
	if id.Via == auth.ViaSession {
		if u, _, err := s.Store.UserByID(ctx, id.UserID); err == nil {
			inviterName = u.Name
		}
	}
	org, err := s.Store.Tenant(ctx, id.TenantID)
	if err != nil {
		return Invite{}, "", err
	}
	now := s.now()
	if old, err := s.Store.PendingInvite(ctx, id.TenantID, e); err == nil {
		if _, err := s.Store.SetInviteStatus(ctx, id.TenantID, old.ID, InviteRevoked, now); err != nil && !errs.Is(err, errs.Conflict) {
			return Invite{}, "", err
		}
		s.record(ctx, id.TenantID, id.Actor(), "invite.revoked", "invite:"+old.ID, map[string]any{"email": e, "reason": "replaced"})
	} else if !errs.Is(err, errs.NotFound) {
		return Invite{}, "", err
	}
	raw, hash := newToken()
	inv := Invite{ID: ids.New("inv"), TenantID: id.TenantID, Email: e, Role: role, Status: InvitePending,
		Inviter: id.Actor(), CreatedAt: now, ExpiresAt: now.Add(InviteLifetime)}
	if err := s.Store.CreateInvite(ctx, inv, hash); err != nil {
		return Invite{}, "", err
	}
	acceptURL := s.link("/accept-invite", raw)
	s.Mailer.Send(e, email.InviteEmail(email.Invite{
		OrgName: org.Name, InviterName: inviterName, Role: role, AcceptURL: acceptURL, ExpiresAt: inv.ExpiresAt,
	}))
	s.record(ctx, id.TenantID, id.Actor(), "invite.created", "invite:"+inv.ID, map[string]any{"email": e, "role": role})
	return inv, acceptURL, nil
}

// Invites lists the caller's organization's invites, newest first.
func (s *Service) Invites(ctx context.Context, id *auth.Identity) ([]Invite, error) {
	if err := auth.RequireAdmin(id); err != nil {
		return nil, err
	}
	list, err := s.Store.Invites(ctx, id.TenantID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	for i := range list {
		list[i] = list[i].readAs(now)
	}
	return list, nil
}

// RevokeInvite revokes a pending invite of the caller's organization:
// errs.NotFound for an unknown or foreign id, errs.Conflict when it is not
// pending.
func (s *Service) RevokeInvite(ctx context.Context, id *auth.Identity, inviteID string) (Invite, error) {
	if err := auth.RequireAdmin(id); err != nil {
		return Invite{}, err
	}
	inv, err := s.Store.SetInviteStatus(ctx, id.TenantID, inviteID, InviteRevoked, s.now())
	if err != nil {
		return Invite{}, err
	}
	s.record(ctx, id.TenantID, id.Actor(), "invite.revoked", "invite:"+inv.ID, map[string]any{"email": inv.Email})
	return inv, nil
}

// LookupInvite tells the accept page what a link is for. An unknown link is
// not an error: it reads as invalid.
func (s *Service) LookupInvite(ctx context.Context, raw string) (InviteInfo, error) {
	inv, orgName, err := s.inviteByToken(ctx, raw)
	if errs.Is(err, errs.NotFound) {
		return InviteInfo{Status: "invalid"}, nil
	} else if err != nil {
		return InviteInfo{}, err
	}
	_, _, uerr := s.Store.UserByEmail(ctx, inv.Email)
	if uerr != nil && !errs.Is(uerr, errs.NotFound) {
		return InviteInfo{}, uerr
	}
	exp := inv.ExpiresAt
	return InviteInfo{Valid: inv.Status == InvitePending, Status: inv.Status, OrgName: orgName, Email: inv.Email,
		Role: inv.Role, UserExists: uerr == nil, ExpiresAt: &exp}, nil
}

// inviteByToken finds a link's invite as it reads now, marking it expired
// when its time has passed.
func (s *Service) inviteByToken(ctx context.Context, raw string) (Invite, string, error) {
	hash, ok := tokenHash(raw)
	if !ok {
		return Invite{}, "", errs.NotFoundf("invite not found")
	}
	inv, orgName, err := s.Store.InviteByToken(ctx, hash)
	if err != nil {
		return Invite{}, "", err
	}
	now := s.now()
	if read := inv.readAs(now); read.Status != inv.Status {
		if _, err := s.Store.SetInviteStatus(ctx, inv.TenantID, inv.ID, InviteExpired, now); err != nil && !errs.Is(err, errs.Conflict) {
			return Invite{}, "", err
		}
		inv = read
	}
	return inv, orgName, nil
}

// AcceptInvite accepts the invite of a link. For a new address it creates
// the account from name and password (verified: the link proves the
// address); an existing account may accept only when caller is signed in
// as that user, so the link cannot be used to test a password. Either way
// the user joins the invited organization with the invited role.
func (s *Service) AcceptInvite(ctx context.Context, caller *auth.Identity, raw, name, password string) (Accepted, error) {
	inv, orgName, err := s.inviteByToken(ctx, raw)
	if errs.Is(err, errs.NotFound) {
		return Accepted{}, errs.E(errs.NotFound, "invite_not_found", "this invitation link is not valid")
	} else if err != nil {
		return Accepted{}, err
	}
	if inv.Status != InvitePending {
		return Accepted{}, errs.E(errs.Conflict, "invite_"+inv.Status, "this invitation is %s", inv.Status)
	}
	now := s.now()
	out := Accepted{TenantID: inv.TenantID, OrgName: orgName}
	existing, _, err := s.Store.UserByEmail(ctx, inv.Email)
	switch {
	case err == nil:
		if caller == nil || caller.Via != auth.ViaSession {
			return Accepted{}, errs.E(errs.Unauthorized, "sign_in_required", "sign in as %s to accept this invitation", inv.Email)
		}
		if caller.UserID != existing.ID {
			return Accepted{}, errs.E(errs.Forbidden, "wrong_user", "this invitation is for %s; sign in as that user to accept it", inv.Email)
		}
		if err := s.Store.AcceptInvite(ctx, inv, existing.ID, nil, now); err != nil {
			return Accepted{}, err
		}
		out.User = existing
	case errs.Is(err, errs.NotFound):
		n, err := cleanName("name", name)
		if err != nil {
			return Accepted{}, err
		}
		if err := auth.ValidatePassword(password); err != nil {
			return Accepted{}, err
		}
		hash, err := s.Hasher.Hash(password)
		if err != nil {
			return Accepted{}, err
		}
		nu := NewUser{
			User:         User{ID: ids.New("usr"), Email: inv.Email, Name: n, Role: PlatformMember, EmailVerified: true, CreatedAt: now},
			PasswordHash: hash, TenantID: inv.TenantID, OrgRole: inv.Role,
		}
		if err := s.Store.AcceptInvite(ctx, inv, nu.ID, &nu, now); err != nil {
			return Accepted{}, err
		}
		s.Sessions.UserCreated()
		out.User, out.NewUser = nu.User, true
	default:
		return Accepted{}, err
	}
	s.Sessions.Invalidate()
	s.record(ctx, inv.TenantID, userActor(out.User.ID), "invite.accepted", "invite:"+inv.ID,
		map[string]any{"email": inv.Email, "role": inv.Role, "newUser": out.NewUser})
	return out, nil
}

// ExpireInvites marks every pending invite past its expiry expired, and
// returns how many.
func (s *Service) ExpireInvites(ctx context.Context) (int, error) {
	return s.Store.ExpireInvites(ctx, s.now())
}
