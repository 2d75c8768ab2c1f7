package accounts_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/tenant"
)

const acme = "t_acme"

// acmeWorld is an org Acme with an owner, an admin and a member, and an
// org Other whose owner is a stranger to Acme.
func acmeWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t, false)
	w.addUser(t, "usr_owner", "owner@acme.com", acme, auth.RoleOwner, "Acme")
	w.addUser(t, "usr_admin", "admin@acme.com", acme, auth.RoleAdmin, "")
	w.addUser(t, "usr_member", "member@acme.com", acme, auth.RoleMember, "")
	w.addUser(t, "usr_other", "other@other.com", "t_other", auth.RoleOwner, "Other")
	return w
}

// join adds userID to tenantID with role.
func (w *world) join(userID, tenantID, role string) {
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	w.store.members[userID] = append(w.store.members[userID], membership{tenantID, role})
}

func roleIn(t *testing.T, w *world, tenantID, userID string) string {
	t.Helper()
	m, err := w.store.Member(ctx, tenantID, userID)
	if errs.Is(err, errs.NotFound) {
		return ""
	}
	require.NoError(t, err)
	return m.Role
}

func TestSetRole(t *testing.T) {
	w := acmeWorld(t)
	owner, admin, member := session("usr_owner", acme, auth.RoleOwner), session("usr_admin", acme, auth.RoleAdmin),
		session("usr_member", acme, auth.RoleMember)

	_, err := w.svc.SetRole(ctx, member, "usr_admin", auth.RoleMember)
	requireErr(t, err, errs.Forbidden, "admin_required", "a member reads, never acts")
	_, err = w.svc.SetRole(ctx, apiKey(acme), "usr_member", auth.RoleAdmin)
	requireErr(t, err, errs.Unauthorized, "session_required", "roles are changed by people")

	w.invalidated()
	m, err := w.svc.SetRole(ctx, admin, "usr_member", auth.RoleAdmin)
	require.NoError(t, err)
	assert.Equal(t, accounts.Member{UserID: "usr_member", Email: "member@acme.com", Name: "Member", Role: auth.RoleAdmin}, m)
	assert.True(t, w.invalidated(), "sessions resolve the new role at their next request")
	e := lastAudit(w.audit)
	assert.Equal(t, acme+" member.role_changed", e.TenantID+" "+e.Action)
	assert.Equal(t, "user:usr_admin", e.Actor)
	assert.Equal(t, "user:usr_member", e.Target)
	assert.Equal(t, map[string]any{"email": "member@acme.com", "from": "member", "to": "admin"}, e.Details)

	_, err = w.svc.SetRole(ctx, admin, "usr_member", auth.RoleOwner)
	requireErr(t, err, errs.Forbidden, "owner_required", "an admin does not grant the owner role")
	_, err = w.svc.SetRole(ctx, admin, "usr_owner", auth.RoleAdmin)
	requireErr(t, err, errs.Forbidden, "owner_required", "an admin does not take it away")
	_, err = w.svc.SetRole(ctx, owner, "usr_owner", auth.RoleAdmin)
	requireErr(t, err, errs.Conflict, "last_owner")
	assert.Equal(t, auth.RoleOwner, roleIn(t, w, acme, "usr_owner"))

	_, err = w.svc.SetRole(ctx, owner, "usr_member", "boss")
	requireInvalid(t, err, "role")
	_, err = w.svc.SetRole(ctx, owner, "usr_other", auth.RoleMember)
	requireErr(t, err, errs.NotFound, "not_found", "another org's person is not found")
	_, err = w.svc.SetRole(ctx, owner, "usr_nobody", auth.RoleMember)
	requireErr(t, err, errs.NotFound, "not_found")
	assert.Equal(t, auth.RoleOwner, roleIn(t, w, "t_other", "usr_other"))

	_, err = w.svc.SetRole(ctx, owner, "usr_admin", auth.RoleOwner)
	require.NoError(t, err)
	_, err = w.svc.SetRole(ctx, owner, "usr_owner", auth.RoleMember)
	require.NoError(t, err, "with another owner, the first may step down")
	assert.Equal(t, auth.RoleMember, roleIn(t, w, acme, "usr_owner"))
}

func TestRemoveMember(t *testing.T) {
	w := acmeWorld(t)
	owner, admin, member := session("usr_owner", acme, auth.RoleOwner), session("usr_admin", acme, auth.RoleAdmin),
		session("usr_member", acme, auth.RoleMember)

	requireErr(t, w.svc.RemoveMember(ctx, member, "usr_admin"), errs.Forbidden, "admin_required")
	requireErr(t, w.svc.RemoveMember(ctx, admin, "usr_owner"), errs.Forbidden, "owner_required")
	requireErr(t, w.svc.RemoveMember(ctx, owner, "usr_owner"), errs.Conflict, "last_owner")
	requireErr(t, w.svc.RemoveMember(ctx, owner, "usr_other"), errs.NotFound, "not_found")
	requireErr(t, w.svc.RemoveMember(ctx, apiKey(acme), "usr_member"), errs.Unauthorized, "session_required")

	w.invalidated()
	require.NoError(t, w.svc.RemoveMember(ctx, admin, "usr_member"))
	assert.Empty(t, roleIn(t, w, acme, "usr_member"))
	assert.True(t, w.invalidated(), "the removed person's sessions lose the org at their next request")
	e := lastAudit(w.audit)
	assert.Equal(t, acme+" member.removed", e.TenantID+" "+e.Action)
	assert.Equal(t, map[string]any{"email": "member@acme.com", "role": "member"}, e.Details)
	requireErr(t, w.svc.RemoveMember(ctx, admin, "usr_member"), errs.NotFound, "not_found", "removed once")
}

func TestLeave(t *testing.T) {
	w := acmeWorld(t)
	w.join("usr_admin", "t_other", auth.RoleMember)

	_, err := w.svc.Leave(ctx, session("usr_owner", acme, auth.RoleOwner))
	requireErr(t, err, errs.Conflict, "last_owner")
	_, err = w.svc.Leave(ctx, apiKey(acme))
	requireErr(t, err, errs.Unauthorized, "session_required")

	next, err := w.svc.Leave(ctx, session("usr_admin", acme, auth.RoleAdmin))
	require.NoError(t, err)
	require.NotNil(t, next)
	assert.Equal(t, accounts.Org{TenantID: "t_other", Name: "Other", Role: auth.RoleMember, Active: true,
		CreatedAt: next.CreatedAt}, *next, "the session moves to the person's other org")
	assert.Empty(t, roleIn(t, w, acme, "usr_admin"))
	e := lastAudit(w.audit)
	assert.Equal(t, acme+" member.left", e.TenantID+" "+e.Action)

	next, err = w.svc.Leave(ctx, session("usr_member", acme, auth.RoleMember))
	require.NoError(t, err)
	assert.Nil(t, next, "no org left")
}

func TestDeleteOrg(t *testing.T) {
	w := acmeWorld(t)
	w.join("usr_owner", "t_other", auth.RoleMember)
	owner := session("usr_owner", acme, auth.RoleOwner)

	_, err := w.svc.DeleteOrg(ctx, session("usr_admin", acme, auth.RoleAdmin), "Acme")
	requireErr(t, err, errs.Forbidden, "owner_required")
	_, err = w.svc.DeleteOrg(ctx, apiKey(acme), "Acme")
	requireErr(t, err, errs.Unauthorized, "session_required")
	for _, confirm := range []string{"", "acme", "Acme ", "t_acme"} {
		_, err = w.svc.DeleteOrg(ctx, owner, confirm)
		requireInvalid(t, err, "confirm", confirm)
	}
	w.addUser(t, "usr_root", "root@example.com", tenant.DefaultID, auth.RoleOwner, "")
	_, err = w.svc.DeleteOrg(ctx, session("usr_root", tenant.DefaultID, auth.RoleOwner), tenant.DefaultName)
	requireErr(t, err, errs.Conflict, "default_org")
	assert.Empty(t, w.store.deleted)

	w.invalidated()
	next, err := w.svc.DeleteOrg(ctx, owner, "Acme")
	require.NoError(t, err)
	assert.Equal(t, []string{acme}, w.store.deleted)
	assert.Equal(t, []string{acme}, w.forgot.ids, "what is kept in memory of the org is dropped")
	assert.True(t, w.invalidated(), "every session of the org loses it at its next request")
	require.NotNil(t, next)
	assert.Equal(t, "t_other", next.TenantID)
	e := lastAudit(w.audit)
	assert.Equal(t, "t_other org.deleted", e.TenantID+" "+e.Action, "audited where the owner goes, the org's trail is gone")
	assert.Equal(t, "org:"+acme, e.Target)
	assert.Equal(t, map[string]any{"name": "Acme"}, e.Details)

	_, err = w.svc.DeleteOrg(ctx, owner, "Acme")
	requireErr(t, err, errs.NotFound, "not_found", "deleted once")
}

func TestResendVerification(t *testing.T) {
	w := newWorld(t, true)
	u, org, err := w.svc.Signup(ctx, "jane@acme.com", "Jane", password)
	require.NoError(t, err)
	_, first := w.mail.link(t, "jane@acme.com")
	me := session(u.ID, org.TenantID, auth.RoleOwner)

	require.NoError(t, w.svc.ResendVerification(ctx, me))
	path, second := w.mail.link(t, "jane@acme.com")
	assert.Equal(t, "/verify-email", path)
	assert.NotEqual(t, first, second)
	assert.Equal(t, org.TenantID+" auth.verification_resent", actions(w.audit)[len(actions(w.audit))-1])
	_, err = w.svc.Verify(ctx, first)
	requireErr(t, err, errs.NotFound, "invalid_token", "the earlier link stops working")
	_, err = w.svc.Verify(ctx, second)
	require.NoError(t, err)

	sent := len(w.mail.all())
	requireErr(t, w.svc.ResendVerification(ctx, me), errs.Conflict, "already_verified")
	requireErr(t, w.svc.ResendVerification(ctx, apiKey(org.TenantID)), errs.Unauthorized, "session_required")
	assert.Len(t, w.mail.all(), sent, "nothing more is sent")
}
