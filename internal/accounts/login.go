package accounts

import (
	"context"
	"strings"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/email"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
)

// errBadLogin is the one answer to an unknown email and a wrong password.
var errBadLogin = errs.E(errs.Unauthorized, "invalid_credentials", "the email or password is wrong")

// Login checks a person's email and password and returns the user and the
// organization their session starts in. An unknown email and a wrong
// password get the same error after the same work (one argon2id hash).
func (s *Service) Login(ctx context.Context, addr, password string) (User, string, error) {
	e, err := NormalizeEmail(addr)
	if err != nil || password == "" || len(password) > auth.MaxPasswordLen {
		s.Hasher.Verify(password, "")
		return User{}, "", errBadLogin
	}
	u, hash, err := s.Store.UserByEmail(ctx, e)
	if errs.Is(err, errs.NotFound) {
		hash = ""
	} else if err != nil {
		return User{}, "", err
	}
	if !s.Hasher.Verify(password, hash) {
		return User{}, "", errBadLogin
	}
	if s.Hasher.NeedsRehash(hash) {
		if h, err := s.Hasher.Hash(password); err == nil {
			if err := s.Store.SetPassword(ctx, u.ID, h, s.now()); err != nil {
				s.Logger.Warn("storing a stronger password hash failed", "user", u.ID, "error", err)
			}
		}
	}
	orgs, err := s.Store.UserOrgs(ctx, u.ID)
	if err != nil {
		return User{}, "", err
	}
	if len(orgs) == 0 {
		return User{}, "", errs.E(errs.Forbidden, "no_organization", "your account belongs to no organization")
	}
	return u, orgs[0].TenantID, nil
}

// Me returns the signed-in user of id.
func (s *Service) Me(ctx context.Context, id *auth.Identity) (User, error) {
	if id == nil || id.Via != auth.ViaSession {
		return User{}, errs.E(errs.Unauthorized, "session_required", "sign in first")
	}
	u, _, err := s.Store.UserByID(ctx, id.UserID)
	return u, err
}

// RequestPasswordReset sends a reset link when addr belongs to an account,
// and does nothing otherwise: the caller's answer is the same either way.
// Links sent earlier stop working.
func (s *Service) RequestPasswordReset(ctx context.Context, addr string) error {
	e, err := NormalizeEmail(addr)
	if err != nil {
		return err
	}
	u, _, err := s.Store.UserByEmail(ctx, e)
	if errs.Is(err, errs.NotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if err := s.Store.DropUserTokens(ctx, u.ID, TokenReset); err != nil {
		return err
	}
	raw, hash := newToken()
	now := s.now()
	if err := s.Store.CreateUserToken(ctx, hash, TokenReset, u.ID, now, now.Add(ResetLifetime)); err != nil {
		return err
	}
	s.Mailer.Send(u.Email, email.PasswordResetEmail(email.Reset{
		Name: u.Name, ResetURL: s.link("/reset-password", raw), ExpiresIn: ResetLifetime,
	}))
	s.recordForUser(ctx, u.ID, "auth.password_reset_requested", nil)
	return nil
}

// ResetPassword sets a new password with a reset token, consumes the token
// and ends every session of the user.
func (s *Service) ResetPassword(ctx context.Context, raw, password string) error {
	if err := auth.ValidatePassword(password); err != nil {
		return err
	}
	hash, ok := tokenHash(raw)
	if !ok {
		return errInvalidLink
	}
	userID, err := s.Store.ConsumeUserToken(ctx, hash, TokenReset, s.now())
	if errs.Is(err, errs.NotFound) {
		return errInvalidLink
	} else if err != nil {
		return err
	}
	h, err := s.Hasher.Hash(password)
	if err != nil {
		return err
	}
	if err := s.Store.SetPassword(ctx, userID, h, s.now()); err != nil {
		return err
	}
	if err := s.Sessions.EndAll(ctx, userID); err != nil {
		return err
	}
	s.recordForUser(ctx, userID, "auth.password_reset", nil)
	return nil
}

var errInvalidLink = errs.E(errs.NotFound, "invalid_token", "this link is not valid: it is unknown, used or expired")

// recordForUser audits a user's action in their first organization.
func (s *Service) recordForUser(ctx context.Context, userID, action string, details map[string]any) {
	orgs, err := s.Store.UserOrgs(ctx, userID)
	if err != nil || len(orgs) == 0 {
		return
	}
	s.record(ctx, orgs[0].TenantID, userActor(userID), action, "user:"+userID, details)
}

// Signup creates an account and its organization when public signup is on:
// the org is named after the email's domain, or "<name>'s org" for a
// generic mail provider; the user owns it, is sent a verification link and
// starts signed in (their session starts in the returned tenant).
func (s *Service) Signup(ctx context.Context, addr, name, password string) (User, Org, error) {
	if !s.AllowSignup {
		return User{}, Org{}, errs.E(errs.Forbidden, "signup_disabled", "public signup is disabled; ask an administrator for an invitation")
	}
	e, err := NormalizeEmail(addr)
	if err != nil {
		return User{}, Org{}, err
	}
	n, err := cleanName("name", name)
	if err != nil {
		return User{}, Org{}, err
	}
	if err := auth.ValidatePassword(password); err != nil {
		return User{}, Org{}, err
	}
	hash, err := s.Hasher.Hash(password)
	if err != nil {
		return User{}, Org{}, err
	}
	u := User{ID: ids.New("usr"), Email: e, Name: n, Role: PlatformMember, CreatedAt: s.now()}
	org := Org{TenantID: ids.New("t"), Name: OrgNameFor(e, n), Role: auth.RoleOwner, Active: true, CreatedAt: stored(u.CreatedAt)}
	err = s.Store.CreateUser(ctx, NewUser{User: u, PasswordHash: hash, TenantID: org.TenantID, OrgRole: auth.RoleOwner, OrgName: org.Name})
	if err != nil {
		return User{}, Org{}, err
	}
	s.Sessions.UserCreated()
	raw, th := newToken()
	now := s.now()
	if err := s.Store.CreateUserToken(ctx, th, TokenVerify, u.ID, now, now.Add(VerifyLifetime)); err != nil {
		return User{}, Org{}, err
	}
	s.Mailer.Send(e, email.VerifyEmail(email.Verify{Name: n, VerifyURL: s.link("/verify-email", raw)}))
	s.record(ctx, org.TenantID, userActor(u.ID), "auth.signup", "user:"+u.ID, map[string]any{"email": e, "org": org.Name})
	return u, org, nil
}

// Verify marks the address of a verification token's user verified and
// consumes the token.
func (s *Service) Verify(ctx context.Context, raw string) (User, error) {
	hash, ok := tokenHash(raw)
	if !ok {
		return User{}, errInvalidLink
	}
	userID, err := s.Store.ConsumeUserToken(ctx, hash, TokenVerify, s.now())
	if errs.Is(err, errs.NotFound) {
		return User{}, errInvalidLink
	} else if err != nil {
		return User{}, err
	}
	if err := s.Store.SetEmailVerified(ctx, userID, s.now()); err != nil {
		return User{}, err
	}
	u, _, err := s.Store.UserByID(ctx, userID)
	if err != nil {
		return User{}, err
	}
	s.recordForUser(ctx, userID, "auth.email_verified", map[string]any{"email": u.Email})
	return u, nil
}

// GenericMailDomains are mail providers whose domain says nothing about the
// person's organization; signups from them name their org "<name>'s org".
var GenericMailDomains = map[string]bool{
	"gmail.com": true, "googlemail.com": true, "outlook.com": true, "hotmail.com": true, "live.com": true,
	"msn.com": true, "yahoo.com": true, "ymail.com": true, "icloud.com": true, "me.com": true, "mac.com": true,
	"aol.com": true, "proton.me": true, "protonmail.com": true, "pm.me": true, "gmx.com": true, "gmx.de": true,
	"gmx.net": true, "web.de": true, "mail.com": true, "zoho.com": true, "yandex.com": true, "yandex.ru": true,
	"mail.ru": true, "qq.com": true, "163.com": true, "126.com": true, "fastmail.com": true, "hey.com": true,
	"tutanota.com": true, "tuta.io": true, "hushmail.com": true,
}

// OrgNameFor names a signup's organization: the email's domain, or
// "<name>'s org" when the domain is a generic mail provider.
func OrgNameFor(addr, name string) string {
	_, domain, _ := strings.Cut(addr, "@")
	if domain == "" || GenericMailDomains[domain] {
		return name + "'s org"
	}
	return domain
}
