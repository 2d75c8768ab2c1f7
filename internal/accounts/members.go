package accounts

import (
	"context"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/email"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/tenant"
)

// ErrLastOwner refuses a change that would leave an organization without
// an owner: no one could then grant the owner role or delete it. The store
// returns it, deciding in the transaction of the change.
var ErrLastOwner = errs.E(errs.Conflict, "last_owner",
	"this is the organization's last owner: make another member an owner first")

var errOwnerRequired = errs.E(errs.Forbidden, "owner_required", "only an owner of the organization may do this")

// Forgetter drops what a component keeps in memory of a tenant, once the
// tenant is deleted: cached keys, cached answers, serving artifacts, live
// streams of its runs.
type Forgetter interface {
	ForgetTenant(tenantID string)
}

// isOwner reports whether id is a signed-in owner of its active org.
func isOwner(id *auth.Identity) bool { return id.OrgRole == auth.RoleOwner }

// validRole checks an org role a person may be given.
func validRole(role string) error {
	switch role {
	case auth.RoleOwner, auth.RoleAdmin, auth.RoleMember:
		return nil
	}
	return errs.Invalidf("role", "role must be \"owner\", \"admin\" or \"member\"")
}

// member returns userID's membership of the caller's org; another org's
// user, or no user, is errs.NotFound.
func (s *Service) member(ctx context.Context, id *auth.Identity, userID string) (Member, error) {
	if userID == "" || len(userID) > 64 {
		return Member{}, errs.NotFoundf("member not found")
	}
	return s.Store.Member(ctx, id.TenantID, userID)
}

// SetRole gives a member of the caller's org another role. Owners and
// admins act; only an owner grants or takes away the owner role, and the
// last owner keeps it (ErrLastOwner).
func (s *Service) SetRole(ctx context.Context, id *auth.Identity, userID, role string) (Member, error) {
	if err := needSession(id); err != nil {
		return Member{}, err
	}
	if err := auth.RequireAdmin(id); err != nil {
		return Member{}, err
	}
	if err := validRole(role); err != nil {
		return Member{}, err
	}
	m, err := s.member(ctx, id, userID)
	if err != nil {
		return Member{}, err
	}
	if (m.Role == auth.RoleOwner || role == auth.RoleOwner) && !isOwner(id) {
		return Member{}, errOwnerRequired
	}
	if m.Role == role {
		return m, nil
	}
	out, err := s.Store.SetMemberRole(ctx, id.TenantID, userID, role)
	if err != nil {
		return Member{}, err
	}
	s.Sessions.Invalidate()
	s.record(ctx, id.TenantID, id.Actor(), "member.role_changed", "user:"+userID,
		map[string]any{"email": m.Email, "from": m.Role, "to": role})
	return out, nil
}

// RemoveMember takes a member out of the caller's org. Owners and admins
// act; only an owner removes an owner, and the last owner stays
// (ErrLastOwner). The removed person's sessions lose the org at their next
// request. The API keys they created belong to the org and stay.
func (s *Service) RemoveMember(ctx context.Context, id *auth.Identity, userID string) error {
	if err := needSession(id); err != nil {
		return err
	}
	if err := auth.RequireAdmin(id); err != nil {
		return err
	}
	m, err := s.member(ctx, id, userID)
	if err != nil {
		return err
	}
	if m.Role == auth.RoleOwner && !isOwner(id) {
		return errOwnerRequired
	}
	if err := s.Store.RemoveMember(ctx, id.TenantID, userID); err != nil {
		return err
	}
	s.Sessions.Invalidate()
	s.record(ctx, id.TenantID, id.Actor(), "member.removed", "user:"+userID, map[string]any{"email": m.Email, "role": m.Role})
	return nil
}

// Leave takes the signed-in person out of their active org and returns
// the org their session moves to, their oldest remaining membership, or
// nil when none is left. The last owner cannot leave (ErrLastOwner).
func (s *Service) Leave(ctx context.Context, id *auth.Identity) (*Org, error) {
	if err := needSession(id); err != nil {
		return nil, err
	}
	if err := s.Store.RemoveMember(ctx, id.TenantID, id.UserID); err != nil {
		return nil, err
	}
	s.Sessions.Invalidate()
	s.record(ctx, id.TenantID, id.Actor(), "member.left", "user:"+id.UserID, map[string]any{"role": roleOf(id)})
	return s.nextOrg(ctx, id.UserID)
}

// nextOrg is the org a person's session moves to: their oldest
// membership, or nil.
func (s *Service) nextOrg(ctx context.Context, userID string) (*Org, error) {
	orgs, err := s.Store.UserOrgs(ctx, userID)
	if err != nil || len(orgs) == 0 {
		return nil, err
	}
	o := orgs[0]
	o.Active = true
	return &o, nil
}

// DeleteOrg deletes the caller's org and every record of it, once confirm
// is its exact name. Only an owner may; the default tenant, which open dev
// mode and the bootstrap token act in, cannot be deleted. It returns the
// org the caller's session moves to, or nil. Every member's session loses
// the org at its next request; the event is audited in the org the caller
// moves to, since the org's own trail is deleted with it.
func (s *Service) DeleteOrg(ctx context.Context, id *auth.Identity, confirm string) (*Org, error) {
	if err := needSession(id); err != nil {
		return nil, err
	}
	if !isOwner(id) {
		return nil, errOwnerRequired
	}
	if id.TenantID == tenant.DefaultID {
		return nil, errs.E(errs.Conflict, "default_org", "the default organization cannot be deleted")
	}
	t, err := s.Store.Tenant(ctx, id.TenantID)
	if err != nil {
		return nil, err
	}
	if confirm != t.Name {
		return nil, errs.Invalidf("confirm", "confirm must be the organization's exact name, %q", t.Name)
	}
	if err := s.Store.DeleteOrg(ctx, t.ID); err != nil {
		return nil, err
	}
	for _, f := range s.Forget {
		f.ForgetTenant(t.ID)
	}
	s.Sessions.Invalidate()
	s.Logger.Info("organization deleted", "tenant", t.ID, "by", id.Actor())
	next, err := s.nextOrg(ctx, id.UserID)
	if next != nil {
		s.record(ctx, next.TenantID, id.Actor(), "org.deleted", "org:"+t.ID, map[string]any{"name": t.Name})
	}
	return next, err
}

// ResendVerification mails the signed-in person a new verification link;
// the links sent before stop working. An address already verified is
// errs.Conflict.
func (s *Service) ResendVerification(ctx context.Context, id *auth.Identity) error {
	u, err := s.Me(ctx, id)
	if err != nil {
		return err
	}
	if u.EmailVerified {
		return errs.E(errs.Conflict, "already_verified", "your email address is already verified")
	}
	if err := s.Store.DropUserTokens(ctx, u.ID, TokenVerify); err != nil {
		return err
	}
	raw, hash := newToken()
	now := s.now()
	if err := s.Store.CreateUserToken(ctx, hash, TokenVerify, u.ID, now, now.Add(VerifyLifetime)); err != nil {
		return err
	}
	s.Mailer.Send(u.Email, email.VerifyEmail(email.Verify{Name: u.Name, VerifyURL: s.link("/verify-email", raw)}))
	s.record(ctx, id.TenantID, id.Actor(), "auth.verification_resent", "user:"+u.ID, map[string]any{"email": u.Email})
	return nil
}
