package accounts_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/tenant"
)

var ctx = context.Background()

const password = "correct horse battery"

// addUser stores a user with password, a member of tenantID with role; the
// organization is created when name is set.
func (w *world) addUser(t *testing.T, id, addr, tenantID, role, orgName string) accounts.User {
	t.Helper()
	hash, err := hasher.Hash(password)
	require.NoError(t, err)
	u := accounts.User{ID: id, Email: addr, Name: strings.ToUpper(id[4:5]) + id[5:], Role: accounts.PlatformMember,
		EmailVerified: true, CreatedAt: w.clock.Now()}
	require.NoError(t, w.store.CreateUser(ctx, accounts.NewUser{User: u, PasswordHash: hash, TenantID: tenantID,
		OrgRole: role, OrgName: orgName}))
	return u
}

// session is the identity of userID signed in with tenantID active.
func session(userID, tenantID, role string) *auth.Identity {
	return &auth.Identity{TenantID: tenantID, UserID: userID, Via: auth.ViaSession, Mode: auth.Optimize,
		OrgRole: role, Admin: auth.Elevated(role)}
}

// apiKey is an admin key of tenantID.
func apiKey(tenantID string) *auth.Identity {
	return &auth.Identity{TenantID: tenantID, KeyID: "key_1", Via: auth.ViaKey, Mode: auth.Optimize, Admin: true}
}

// requireErr checks err's kind and code.
func requireErr(t *testing.T, err error, kind errs.Kind, code string, msgAndArgs ...any) {
	t.Helper()
	var e *errs.Error
	require.ErrorAs(t, err, &e, msgAndArgs...)
	assert.Equal(t, kind, e.Kind, msgAndArgs...)
	assert.Equal(t, code, e.Code, msgAndArgs...)
}

func requireInvalid(t *testing.T, err error, param string, msgAndArgs ...any) {
	t.Helper()
	requireErr(t, err, errs.Invalid, "invalid_request", msgAndArgs...)
	var e *errs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, param, e.Param, msgAndArgs...)
}

func TestSignupNeedsItTurnedOn(t *testing.T) {
	w := newWorld(t, false)
	_, _, err := w.svc.Signup(ctx, "jane@acme.com", "Jane", password)
	requireErr(t, err, errs.Forbidden, "signup_disabled")
	assert.Empty(t, w.store.users)
	assert.Empty(t, w.mail.all())
	assert.False(t, w.manager.LoginRequired(ctx))
}

func TestSignupCreatesAnOwnerAndAsksToVerify(t *testing.T) {
	w := newWorld(t, true)
	u, org, err := w.svc.Signup(ctx, "  Jane@ACME.com ", " Jane Doe ", password)
	require.NoError(t, err)
	assert.Equal(t, "jane@acme.com", u.Email)
	assert.Equal(t, "Jane Doe", u.Name)
	assert.Equal(t, accounts.PlatformMember, u.Role)
	assert.False(t, u.EmailVerified, "the address is not proven yet")
	assert.Equal(t, "acme.com", org.Name)
	assert.Equal(t, auth.RoleOwner, org.Role)
	assert.True(t, org.Active)
	assert.Equal(t, w.clock.Now().Truncate(time.Millisecond), org.CreatedAt, "the time as stored: milliseconds, UTC")
	assert.NotEqual(t, tenant.DefaultID, org.TenantID)

	stored, hash, err := w.store.UserByEmail(ctx, "jane@acme.com")
	require.NoError(t, err)
	assert.Equal(t, u.ID, stored.ID)
	assert.True(t, hasher.Verify(password, hash), "the password is stored hashed")
	orgs, err := w.store.UserOrgs(ctx, u.ID)
	require.NoError(t, err)
	require.Len(t, orgs, 1)
	assert.Equal(t, accounts.Org{TenantID: org.TenantID, Name: "acme.com", Role: auth.RoleOwner, CreatedAt: org.CreatedAt}, orgs[0])
	assert.True(t, w.manager.LoginRequired(ctx), "with a user, svc asks for a login")

	path, _ := w.mail.link(t, "jane@acme.com")
	assert.Equal(t, "/verify-email", path)
	assert.Equal(t, []string{org.TenantID + " auth.signup"}, actions(w.audit))
	e := lastAudit(w.audit)
	assert.Equal(t, "user:"+u.ID, e.Actor)
	assert.Equal(t, map[string]any{"email": "jane@acme.com", "org": "acme.com"}, e.Details)

	_, org, err = w.svc.Signup(ctx, "jo@gmail.com", "Jo", password)
	require.NoError(t, err)
	assert.Equal(t, "Jo's org", org.Name, "a generic mail domain says nothing of the org")

	_, _, err = w.svc.Signup(ctx, "JANE@acme.com", "Jane again", password)
	assert.True(t, errs.Is(err, errs.Conflict), "an address signs up once")
}

func TestSignupChecksItsInput(t *testing.T) {
	w := newWorld(t, true)
	for _, tc := range []struct{ email, name, password, param string }{
		{"jane", "Jane", password, "email"},
		{"Jane <jane@acme.com>", "Jane", password, "email"},
		{"jane@acme.com", "  ", password, "name"},
		{"jane@acme.com", strings.Repeat("é", 101), password, "name"},
		{"jane@acme.com", "Jane\x07", password, "name"},
		{"jane@acme.com", "Jane", "short", "password"},
		{"jane@acme.com", "Jane", strings.Repeat("p", auth.MaxPasswordLen+1), "password"},
	} {
		_, _, err := w.svc.Signup(ctx, tc.email, tc.name, tc.password)
		requireInvalid(t, err, tc.param, "%+v", tc)
	}
	_, _, err := w.svc.Signup(ctx, "jane@acme.com", strings.Repeat("é", 100), password)
	require.NoError(t, err, "100 characters is a name")
	assert.Len(t, w.store.users, 1)
	assert.Len(t, w.mail.all(), 1)
}

func TestVerifyConsumesItsLink(t *testing.T) {
	w := newWorld(t, true)
	u, org, err := w.svc.Signup(ctx, "jane@acme.com", "Jane", password)
	require.NoError(t, err)
	_, token := w.mail.link(t, "jane@acme.com")

	w.clock.Advance(accounts.VerifyLifetime - time.Millisecond)
	got, err := w.svc.Verify(ctx, token)
	require.NoError(t, err)
	assert.Equal(t, u.ID, got.ID)
	assert.True(t, got.EmailVerified)
	assert.Equal(t, w.clock.Now().Truncate(time.Millisecond), w.store.verified[u.ID])
	assert.Equal(t, org.TenantID+" auth.email_verified", actions(w.audit)[len(actions(w.audit))-1])

	_, err = w.svc.Verify(ctx, token)
	requireErr(t, err, errs.NotFound, "invalid_token", "a link works once")
	for _, bad := range []string{"", "nope", strings.Repeat("a", 129)} {
		_, err = w.svc.Verify(ctx, bad)
		requireErr(t, err, errs.NotFound, "invalid_token", bad)
	}

	w2 := newWorld(t, true)
	_, _, err = w2.svc.Signup(ctx, "jo@acme.com", "Jo", password)
	require.NoError(t, err)
	_, token = w2.mail.link(t, "jo@acme.com")
	w2.clock.Advance(accounts.VerifyLifetime)
	_, err = w2.svc.Verify(ctx, token)
	requireErr(t, err, errs.NotFound, "invalid_token", "a link lasts VerifyLifetime")

	// A reset link is not a verification link.
	require.NoError(t, w2.svc.RequestPasswordReset(ctx, "jo@acme.com"))
	_, reset := w2.mail.link(t, "jo@acme.com")
	_, err = w2.svc.Verify(ctx, reset)
	requireErr(t, err, errs.NotFound, "invalid_token")
}

func TestLogin(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	require.NoError(t, w.store.CreateOrg(ctx, tenant.Tenant{ID: "t_second", Name: "Second"}, jane.ID))

	u, tenantID, err := w.svc.Login(ctx, " JANE@acme.com", password)
	require.NoError(t, err)
	assert.Equal(t, jane.ID, u.ID)
	assert.Equal(t, "t_acme", tenantID, "the session starts in the first organization")

	for _, tc := range []struct{ email, password string }{
		{"jane@acme.com", "wrong password"},
		{"nobody@acme.com", password},
		{"not an address", password},
		{"jane@acme.com", ""},
		{"jane@acme.com", password + strings.Repeat("x", auth.MaxPasswordLen)},
	} {
		_, _, err := w.svc.Login(ctx, tc.email, tc.password)
		requireErr(t, err, errs.Unauthorized, "invalid_credentials", "%+v: one answer for every miss", tc)
	}

	w.addUser(t, "usr_lone", "lone@acme.com", "t_gone", auth.RoleMember, "")
	w.store.members["usr_lone"] = nil
	_, _, err = w.svc.Login(ctx, "lone@acme.com", password)
	requireErr(t, err, errs.Forbidden, "no_organization")

	w.store.fail = errors.New("database is locked")
	_, _, err = w.svc.Login(ctx, "jane@acme.com", password)
	assert.ErrorIs(t, err, w.store.fail, "a store failure is not a wrong password")
}

func TestLoginStoresAStrongerHash(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	weak, err := auth.NewHasher(auth.Argon2Params{MemoryKiB: 32, Time: 1, Threads: 1}).Hash(password)
	require.NoError(t, err)
	require.NoError(t, w.store.SetPassword(ctx, jane.ID, weak, w.clock.Now()))

	_, _, err = w.svc.Login(ctx, "jane@acme.com", password)
	require.NoError(t, err)
	_, hash, err := w.store.UserByID(ctx, jane.ID)
	require.NoError(t, err)
	assert.NotEqual(t, weak, hash)
	assert.Contains(t, hash, "$m=64,t=1,p=1$")
	assert.True(t, hasher.Verify(password, hash))

	_, _, err = w.svc.Login(ctx, "jane@acme.com", password)
	require.NoError(t, err)
	_, again, _ := w.store.UserByID(ctx, jane.ID)
	assert.Equal(t, hash, again, "a hash as strong as the hasher's stays")
}

func TestMeNeedsASession(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	for _, id := range []*auth.Identity{nil, apiKey("t_acme")} {
		_, err := w.svc.Me(ctx, id)
		requireErr(t, err, errs.Unauthorized, "session_required")
	}
	u, err := w.svc.Me(ctx, session(jane.ID, "t_acme", auth.RoleOwner))
	require.NoError(t, err)
	assert.Equal(t, jane, u)
}

func TestPasswordReset(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")

	require.NoError(t, w.svc.RequestPasswordReset(ctx, "nobody@acme.com"), "an unknown address is not told apart")
	assert.Empty(t, w.mail.all())
	requireInvalid(t, w.svc.RequestPasswordReset(ctx, "nobody"), "email")

	require.NoError(t, w.svc.RequestPasswordReset(ctx, "Jane@acme.com"))
	path, first := w.mail.link(t, "jane@acme.com")
	assert.Equal(t, "/reset-password", path)
	assert.Equal(t, []string{"t_acme auth.password_reset_requested"}, actions(w.audit))
	require.NoError(t, w.svc.RequestPasswordReset(ctx, "jane@acme.com"))
	_, token := w.mail.link(t, "jane@acme.com")
	requireErr(t, w.svc.ResetPassword(ctx, first, "a new password"), errs.NotFound, "invalid_token", "a newer link replaces the first")

	requireInvalid(t, w.svc.ResetPassword(ctx, token, "short"), "password")
	requireErr(t, w.svc.ResetPassword(ctx, "", "a new password"), errs.NotFound, "invalid_token")

	require.NoError(t, w.svc.ResetPassword(ctx, token, "a new password"), "a refused password does not use up the link")
	assert.Equal(t, []string{jane.ID}, w.sessions.endedAll, "every session of the user ends")
	_, _, err := w.svc.Login(ctx, "jane@acme.com", password)
	requireErr(t, err, errs.Unauthorized, "invalid_credentials")
	_, _, err = w.svc.Login(ctx, "jane@acme.com", "a new password")
	require.NoError(t, err)
	assert.Equal(t, "t_acme auth.password_reset", actions(w.audit)[len(actions(w.audit))-1])
	requireErr(t, w.svc.ResetPassword(ctx, token, "another password"), errs.NotFound, "invalid_token", "a link works once")

	require.NoError(t, w.svc.RequestPasswordReset(ctx, "jane@acme.com"))
	_, token = w.mail.link(t, "jane@acme.com")
	w.clock.Advance(accounts.ResetLifetime)
	requireErr(t, w.svc.ResetPassword(ctx, token, "another password"), errs.NotFound, "invalid_token", "a link lasts an hour")
}

func TestBootstrapMakesTheOperatorAnAdmin(t *testing.T) {
	w := newWorld(t, false)
	requireInvalid(t, w.svc.Bootstrap(ctx, "admin", password), "email")
	requireInvalid(t, w.svc.Bootstrap(ctx, "admin@acme.com", "short"), "password")
	assert.Empty(t, w.store.users)

	require.NoError(t, w.svc.Bootstrap(ctx, "Admin@acme.com", password))
	u, hash, err := w.store.UserByEmail(ctx, "admin@acme.com")
	require.NoError(t, err)
	assert.Equal(t, accounts.PlatformAdmin, u.Role)
	assert.True(t, u.EmailVerified)
	assert.Equal(t, "admin", u.Name)
	assert.True(t, hasher.Verify(password, hash))
	orgs, err := w.store.UserOrgs(ctx, u.ID)
	require.NoError(t, err)
	assert.Equal(t, []accounts.Org{{TenantID: tenant.DefaultID, Name: tenant.DefaultName, Role: auth.RoleOwner, CreatedAt: orgs[0].CreatedAt}}, orgs)
	assert.True(t, w.manager.LoginRequired(ctx))
	assert.True(t, w.invalidated())

	require.NoError(t, w.svc.Bootstrap(ctx, "admin@acme.com", "another password"))
	_, again, _ := w.store.UserByEmail(ctx, "admin@acme.com")
	assert.Equal(t, hash, again, "running it again never resets the password")
	assert.Len(t, w.store.users, 1)

	// An existing user is raised to admin.
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleMember, "Acme")
	require.NoError(t, w.svc.Bootstrap(ctx, "jane@acme.com", "another password"))
	raised, janeHash, _ := w.store.UserByID(ctx, jane.ID)
	assert.Equal(t, accounts.PlatformAdmin, raised.Role)
	assert.True(t, hasher.Verify(password, janeHash))
}

func TestCreateInvite(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	w.addUser(t, "usr_bob", "bob@acme.com", "t_acme", auth.RoleMember, "")
	w.addUser(t, "usr_eve", "eve@other.com", "t_other", auth.RoleOwner, "Other")
	owner := session(jane.ID, "t_acme", auth.RoleOwner)

	_, _, err := w.svc.CreateInvite(ctx, session("usr_bob", "t_acme", auth.RoleMember), "new@acme.com", auth.RoleMember)
	requireErr(t, err, errs.Forbidden, "admin_required", "members do not invite")
	_, _, err = w.svc.CreateInvite(ctx, owner, "new", auth.RoleMember)
	requireInvalid(t, err, "email")
	for _, role := range []string{auth.RoleOwner, "", "Admin"} {
		_, _, err = w.svc.CreateInvite(ctx, owner, "new@acme.com", role)
		requireInvalid(t, err, "role", role)
	}
	_, _, err = w.svc.CreateInvite(ctx, owner, "BOB@acme.com", auth.RoleAdmin)
	requireErr(t, err, errs.Conflict, "already_member")
	assert.Empty(t, w.store.invites)
	assert.Empty(t, w.mail.all())

	inv, acceptURL, err := w.svc.CreateInvite(ctx, owner, "New@Acme.com", auth.RoleAdmin)
	require.NoError(t, err)
	assert.Equal(t, "t_acme", inv.TenantID)
	assert.Equal(t, "new@acme.com", inv.Email)
	assert.Equal(t, auth.RoleAdmin, inv.Role)
	assert.Equal(t, accounts.InvitePending, inv.Status)
	assert.Equal(t, "user:"+jane.ID, inv.Inviter)
	now := w.clock.Now().Truncate(time.Millisecond)
	assert.Equal(t, now, inv.CreatedAt)
	assert.Equal(t, now.Add(accounts.InviteLifetime), inv.ExpiresAt)
	path, token := w.mail.link(t, "new@acme.com")
	assert.Equal(t, "/accept-invite", path)
	assert.Equal(t, baseURL+"/accept-invite?token="+token, acceptURL)
	msg := w.mail.all()[0].msg
	assert.Contains(t, msg.Text, "Acme")
	assert.Contains(t, msg.Text, "Jane", "the inviter is named")
	assert.Equal(t, []string{"t_acme invite.created"}, actions(w.audit))
	assert.Equal(t, map[string]any{"email": "new@acme.com", "role": "admin"}, lastAudit(w.audit).Details)

	// A user of another org may be invited; a key invites as "an
	// administrator".
	_, _, err = w.svc.CreateInvite(ctx, apiKey("t_acme"), "eve@other.com", auth.RoleMember)
	require.NoError(t, err)
	assert.Contains(t, w.mail.all()[1].msg.Text, "An administrator")

	// Inviting again revokes the pending invite: the newest link works.
	again, _, err := w.svc.CreateInvite(ctx, owner, "new@acme.com", auth.RoleMember)
	require.NoError(t, err)
	assert.Equal(t, accounts.InviteRevoked, w.store.invite(inv.ID).Status)
	assert.Equal(t, accounts.InvitePending, w.store.invite(again.ID).Status)
	actions := actions(w.audit)
	assert.Equal(t, []string{"t_acme invite.revoked", "t_acme invite.created"}, actions[len(actions)-2:])
	info, err := w.svc.LookupInvite(ctx, token)
	require.NoError(t, err)
	assert.Equal(t, accounts.InviteRevoked, info.Status)
	assert.False(t, info.Valid)
}

func TestInvitesAreListedAndRevokedByAdminsOfTheirOrg(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	w.addUser(t, "usr_eve", "eve@other.com", "t_other", auth.RoleOwner, "Other")
	owner := session(jane.ID, "t_acme", auth.RoleOwner)
	first, _, err := w.svc.CreateInvite(ctx, owner, "a@acme.com", auth.RoleMember)
	require.NoError(t, err)
	w.clock.Advance(time.Hour)
	second, _, err := w.svc.CreateInvite(ctx, owner, "b@acme.com", auth.RoleMember)
	require.NoError(t, err)
	_, _, err = w.svc.CreateInvite(ctx, session("usr_eve", "t_other", auth.RoleOwner), "c@other.com", auth.RoleMember)
	require.NoError(t, err)

	_, err = w.svc.Invites(ctx, session("usr_x", "t_acme", auth.RoleMember))
	requireErr(t, err, errs.Forbidden, "admin_required")
	list, err := w.svc.Invites(ctx, owner)
	require.NoError(t, err)
	require.Len(t, list, 2, "only the org's own")
	assert.Equal(t, []string{second.ID, first.ID}, []string{list[0].ID, list[1].ID}, "newest first")

	w.clock.Advance(accounts.InviteLifetime - time.Hour)
	list, err = w.svc.Invites(ctx, owner)
	require.NoError(t, err)
	assert.Equal(t, accounts.InvitePending, list[0].Status)
	assert.Equal(t, accounts.InviteExpired, list[1].Status, "past its expiry an invite reads expired before any sweep")

	_, err = w.svc.RevokeInvite(ctx, session("usr_x", "t_acme", auth.RoleMember), second.ID)
	requireErr(t, err, errs.Forbidden, "admin_required")
	_, err = w.svc.RevokeInvite(ctx, session("usr_eve", "t_other", auth.RoleOwner), second.ID)
	assert.True(t, errs.Is(err, errs.NotFound), "another org's invite is not found")
	revoked, err := w.svc.RevokeInvite(ctx, owner, second.ID)
	require.NoError(t, err)
	assert.Equal(t, accounts.InviteRevoked, revoked.Status)
	assert.Equal(t, "t_acme invite.revoked", actions(w.audit)[len(actions(w.audit))-1])
	_, err = w.svc.RevokeInvite(ctx, owner, second.ID)
	assert.True(t, errs.Is(err, errs.Conflict), "an invite is revoked once")

	n, err := w.svc.ExpireInvites(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the sweep marks the pending invite past its expiry")
	assert.Equal(t, accounts.InviteExpired, w.store.invite(first.ID).Status)
}

func TestLookupInvite(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	w.addUser(t, "usr_eve", "eve@other.com", "t_other", auth.RoleOwner, "Other")
	owner := session(jane.ID, "t_acme", auth.RoleOwner)

	for _, raw := range []string{"", "unknown", strings.Repeat("a", 200)} {
		info, err := w.svc.LookupInvite(ctx, raw)
		require.NoError(t, err, "an unknown link is not an error")
		assert.Equal(t, accounts.InviteInfo{Status: "invalid"}, info)
	}

	inv, _, err := w.svc.CreateInvite(ctx, owner, "new@acme.com", auth.RoleAdmin)
	require.NoError(t, err)
	_, token := w.mail.link(t, "new@acme.com")
	info, err := w.svc.LookupInvite(ctx, token)
	require.NoError(t, err)
	exp := inv.ExpiresAt
	assert.Equal(t, accounts.InviteInfo{Valid: true, Status: accounts.InvitePending, OrgName: "Acme", Email: "new@acme.com",
		Role: auth.RoleAdmin, ExpiresAt: &exp}, info)

	_, _, err = w.svc.CreateInvite(ctx, owner, "eve@other.com", auth.RoleMember)
	require.NoError(t, err)
	_, token2 := w.mail.link(t, "eve@other.com")
	info, err = w.svc.LookupInvite(ctx, token2)
	require.NoError(t, err)
	assert.True(t, info.UserExists, "the page asks an existing user to sign in")

	w.clock.Advance(accounts.InviteLifetime)
	info, err = w.svc.LookupInvite(ctx, token)
	require.NoError(t, err)
	assert.Equal(t, accounts.InviteExpired, info.Status)
	assert.False(t, info.Valid)
	assert.Equal(t, accounts.InviteExpired, w.store.invite(inv.ID).Status, "reading an expired link marks it")
}

func TestAcceptInviteCreatesTheInvitedAccount(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	inv, _, err := w.svc.CreateInvite(ctx, session(jane.ID, "t_acme", auth.RoleOwner), "new@acme.com", auth.RoleAdmin)
	require.NoError(t, err)
	_, token := w.mail.link(t, "new@acme.com")

	_, err = w.svc.AcceptInvite(ctx, nil, "unknown", "New", password)
	requireErr(t, err, errs.NotFound, "invite_not_found")
	_, err = w.svc.AcceptInvite(ctx, nil, token, "", password)
	requireInvalid(t, err, "name")
	_, err = w.svc.AcceptInvite(ctx, nil, token, "New", "short")
	requireInvalid(t, err, "password")
	assert.Equal(t, accounts.InvitePending, w.store.invite(inv.ID).Status, "a refused acceptance leaves the invite pending")
	assert.False(t, w.invalidated())

	out, err := w.svc.AcceptInvite(ctx, nil, token, " New Person ", password)
	require.NoError(t, err)
	assert.True(t, out.NewUser)
	assert.Equal(t, "t_acme", out.TenantID)
	assert.Equal(t, "Acme", out.OrgName)
	assert.Equal(t, "new@acme.com", out.User.Email)
	assert.Equal(t, "New Person", out.User.Name)
	assert.Equal(t, accounts.PlatformMember, out.User.Role)
	assert.True(t, out.User.EmailVerified, "the link proves the address")
	orgs, err := w.store.UserOrgs(ctx, out.User.ID)
	require.NoError(t, err)
	require.Len(t, orgs, 1)
	assert.Equal(t, auth.RoleAdmin, orgs[0].Role, "with the invited role")
	stored := w.store.invite(inv.ID)
	assert.Equal(t, accounts.InviteAccepted, stored.Status)
	assert.Equal(t, out.User.ID, stored.AcceptedBy)
	assert.True(t, w.invalidated(), "memberships changed: cached sessions are read again")
	e := lastAudit(w.audit)
	assert.Equal(t, "invite.accepted", e.Action)
	assert.Equal(t, "user:"+out.User.ID, e.Actor)
	assert.Equal(t, map[string]any{"email": "new@acme.com", "role": "admin", "newUser": true}, e.Details)
	_, _, err = w.svc.Login(ctx, "new@acme.com", password)
	require.NoError(t, err)

	_, err = w.svc.AcceptInvite(ctx, nil, token, "New", password)
	requireErr(t, err, errs.Conflict, "invite_accepted", "a link is accepted once")
}

func TestAcceptInviteOfAnExistingUserNeedsThatUser(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	eve := w.addUser(t, "usr_eve", "eve@other.com", "t_other", auth.RoleOwner, "Other")
	w.addUser(t, "usr_mal", "mal@other.com", "t_other", auth.RoleMember, "")
	_, _, err := w.svc.CreateInvite(ctx, session(jane.ID, "t_acme", auth.RoleOwner), "eve@other.com", auth.RoleMember)
	require.NoError(t, err)
	_, token := w.mail.link(t, "eve@other.com")

	for _, caller := range []*auth.Identity{nil, apiKey("t_other")} {
		_, err = w.svc.AcceptInvite(ctx, caller, token, "Eve", "a guessed password")
		requireErr(t, err, errs.Unauthorized, "sign_in_required", "the link cannot be used to test a password")
	}
	_, err = w.svc.AcceptInvite(ctx, session("usr_mal", "t_other", auth.RoleMember), token, "", "")
	requireErr(t, err, errs.Forbidden, "wrong_user")

	out, err := w.svc.AcceptInvite(ctx, session(eve.ID, "t_other", auth.RoleOwner), token, "", "")
	require.NoError(t, err)
	assert.False(t, out.NewUser)
	assert.Equal(t, eve, out.User)
	orgs, err := w.store.UserOrgs(ctx, eve.ID)
	require.NoError(t, err)
	require.Len(t, orgs, 2)
	assert.Equal(t, accounts.Org{TenantID: "t_acme", Name: "Acme", Role: auth.RoleMember, CreatedAt: orgs[1].CreatedAt}, orgs[1])
	assert.Len(t, w.store.users, 3, "no account was created")
	assert.Equal(t, false, lastAudit(w.audit).Details["newUser"])
}

func TestAcceptInviteRefusesWhatIsNotPending(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	owner := session(jane.ID, "t_acme", auth.RoleOwner)
	revoked, _, err := w.svc.CreateInvite(ctx, owner, "a@acme.com", auth.RoleMember)
	require.NoError(t, err)
	_, revokedToken := w.mail.link(t, "a@acme.com")
	_, err = w.svc.RevokeInvite(ctx, owner, revoked.ID)
	require.NoError(t, err)
	_, err = w.svc.AcceptInvite(ctx, nil, revokedToken, "A", password)
	requireErr(t, err, errs.Conflict, "invite_revoked")

	_, _, err = w.svc.CreateInvite(ctx, owner, "b@acme.com", auth.RoleMember)
	require.NoError(t, err)
	_, token := w.mail.link(t, "b@acme.com")
	w.clock.Advance(accounts.InviteLifetime)
	_, err = w.svc.AcceptInvite(ctx, nil, token, "B", password)
	requireErr(t, err, errs.Conflict, "invite_expired")
	_, _, err = w.store.UserByEmail(ctx, "b@acme.com")
	assert.True(t, errs.Is(err, errs.NotFound), "no account was made")
}

func TestOrganizationsOfASignedInUser(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	w.addUser(t, "usr_eve", "eve@other.com", "t_other", auth.RoleOwner, "Other")
	id := session(jane.ID, "t_acme", auth.RoleOwner)

	for _, who := range []*auth.Identity{nil, apiKey("t_acme")} {
		_, err := w.svc.Orgs(ctx, who)
		requireErr(t, err, errs.Unauthorized, "session_required")
		_, err = w.svc.CreateOrg(ctx, who, "Beta")
		requireErr(t, err, errs.Unauthorized, "session_required")
		_, err = w.svc.CheckSwitch(ctx, who, "t_acme")
		requireErr(t, err, errs.Unauthorized, "session_required")
	}

	_, err := w.svc.CreateOrg(ctx, id, " ")
	requireInvalid(t, err, "name")
	assert.False(t, w.invalidated())
	org, err := w.svc.CreateOrg(ctx, id, " Beta ")
	require.NoError(t, err)
	assert.Equal(t, "Beta", org.Name)
	assert.Equal(t, auth.RoleOwner, org.Role)
	assert.True(t, org.Active)
	assert.Equal(t, w.clock.Now().Truncate(time.Millisecond), org.CreatedAt)
	assert.True(t, w.invalidated(), "a new membership: cached sessions are read again")
	assert.Equal(t, org.TenantID+" org.created", actions(w.audit)[len(actions(w.audit))-1])

	orgs, err := w.svc.Orgs(ctx, id)
	require.NoError(t, err)
	require.Len(t, orgs, 2)
	assert.Equal(t, []string{"t_acme", org.TenantID}, []string{orgs[0].TenantID, orgs[1].TenantID})
	assert.Equal(t, []bool{true, false}, []bool{orgs[0].Active, orgs[1].Active}, "the session's org is active")

	switched, err := w.svc.CheckSwitch(ctx, id, org.TenantID)
	require.NoError(t, err)
	assert.Equal(t, org.TenantID, switched.TenantID)
	assert.True(t, switched.Active)
	e := lastAudit(w.audit)
	assert.Equal(t, org.TenantID, e.TenantID)
	assert.Equal(t, "org.switched", e.Action)
	assert.Equal(t, map[string]any{"from": "t_acme"}, e.Details)
	audited := len(actions(w.audit))
	for _, other := range []string{"t_other", "t_nowhere"} {
		_, err = w.svc.CheckSwitch(ctx, id, other)
		requireErr(t, err, errs.Forbidden, "not_a_member", other)
	}
	assert.Len(t, actions(w.audit), audited)
}

func TestTheActiveOrganization(t *testing.T) {
	w := newWorld(t, false)
	jane := w.addUser(t, "usr_jane", "jane@acme.com", "t_acme", auth.RoleOwner, "Acme")
	w.addUser(t, "usr_bob", "bob@acme.com", "t_acme", auth.RoleMember, "")
	w.addUser(t, "usr_eve", "eve@other.com", "t_other", auth.RoleOwner, "Other")

	_, err := w.svc.Active(ctx, apiKey("t_acme"))
	requireErr(t, err, errs.Unauthorized, "session_required", "members' addresses are for people of the org")
	active, err := w.svc.Active(ctx, session(jane.ID, "t_acme", auth.RoleOwner))
	require.NoError(t, err)
	assert.Equal(t, "t_acme", active.TenantID)
	assert.Equal(t, "Acme", active.Name)
	assert.Equal(t, auth.RoleOwner, active.Role)
	assert.Equal(t, []accounts.Member{
		{UserID: "usr_jane", Email: "jane@acme.com", Name: "Jane", Role: auth.RoleOwner},
		{UserID: "usr_bob", Email: "bob@acme.com", Name: "Bob", Role: auth.RoleMember},
	}, active.Members, "only the org's own members")

	for _, tc := range []struct {
		id   *auth.Identity
		role string
	}{
		{&auth.Identity{TenantID: "t_acme", UserID: "usr_x", Via: auth.ViaSession, Admin: true}, auth.RoleAdmin},
		{&auth.Identity{TenantID: "t_acme", UserID: "usr_x", Via: auth.ViaSession}, auth.RoleMember},
	} {
		active, err = w.svc.Active(ctx, tc.id)
		require.NoError(t, err)
		assert.Equal(t, tc.role, active.Role)
	}

	bob := session("usr_bob", "t_acme", auth.RoleMember)
	_, err = w.svc.Rename(ctx, bob, "Bob's")
	requireErr(t, err, errs.Forbidden, "admin_required")
	_, err = w.svc.Rename(ctx, apiKey("t_acme"), "Keyed")
	requireErr(t, err, errs.Unauthorized, "session_required")
	owner := session(jane.ID, "t_acme", auth.RoleOwner)
	_, err = w.svc.Rename(ctx, owner, strings.Repeat("x", 101))
	requireInvalid(t, err, "name")
	renamed, err := w.svc.Rename(ctx, owner, " Acme Inc ")
	require.NoError(t, err)
	assert.Equal(t, "Acme Inc", renamed.Name)
	assert.Len(t, renamed.Members, 2)
	e := lastAudit(w.audit)
	assert.Equal(t, "org.renamed", e.Action)
	assert.Equal(t, map[string]any{"from": "Acme", "to": "Acme Inc"}, e.Details)
	other, err := w.store.Tenant(ctx, "t_other")
	require.NoError(t, err)
	assert.Equal(t, "Other", other.Name)
}
