package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// joined returns a browser of a new person who accepted an invite from
// inviter into inviter's active org with role.
func joined(t *testing.T, ts *testServer, inviter *browser, email, role string) *browser {
	t.Helper()
	token, _ := invite(t, inviter, email, role)
	b := ts.browser(t)
	res := b.do(t, "POST", "/api/v1/invites/"+token+"/accept", `{"name":"`+email[:3]+`","password":"welcome aboard"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	return b
}

// userIDs maps the emails of the active org's members to their ids.
func userIDs(t *testing.T, b *browser) map[string]string {
	t.Helper()
	res := b.do(t, "GET", "/api/v1/orgs/active", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	out := map[string]string{}
	for _, m := range res.json["members"].([]any) {
		m := m.(map[string]any)
		out[m["email"].(string)] = m["userId"].(string)
	}
	return out
}

// newOrg has b create an org and returns its tenant id.
func newOrg(t *testing.T, b *browser, name string) string {
	t.Helper()
	res := b.do(t, "POST", "/api/v1/orgs", `{"name":"`+name+`"}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	return field(t, res, "org", "tenantId").(string)
}

func errorParam(res response) any {
	e, _ := res.json["error"].(map[string]any)
	return e["param"]
}

func TestMemberRolesAndRemoval(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	owner := ts.signedIn(t, adminEmail, adminPassword)
	stranger := joined(t, ts, owner, "stranger@example.com", "member") // of Default only
	acme := newOrg(t, owner, "Acme")
	admin := joined(t, ts, owner, "admin@example.com", "admin")
	member := joined(t, ts, owner, "member@example.com", "member")
	ids := userIDs(t, owner)
	require.Len(t, ids, 3)
	strangerID := field(t, stranger.do(t, "GET", "/api/v1/auth/me", ""), "user", "id").(string)
	memberPath := "/api/v1/orgs/active/members/" + ids["member@example.com"]
	ownerPath := "/api/v1/orgs/active/members/" + ids[adminEmail]

	for _, c := range []struct{ method, path, body string }{
		{"PATCH", memberPath, `{"role":"admin"}`},
		{"DELETE", "/api/v1/orgs/active/members/" + ids["admin@example.com"], ""},
		{"DELETE", "/api/v1/orgs/active", `{"confirm":"Acme"}`},
	} {
		res := member.do(t, c.method, c.path, c.body)
		assert.Equal(t, http.StatusForbidden, res.status, "%s %s: %s", c.method, c.path, res.body)
		assert.Equal(t, "admin_required", res.errorCode())
	}

	res := admin.do(t, "PATCH", memberPath, `{"role":"admin"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, map[string]any{"member": map[string]any{"userId": ids["member@example.com"], "email": "member@example.com",
		"name": "mem", "role": "admin"}}, res.json)
	assert.Equal(t, "admin", member.do(t, "GET", "/api/v1/auth/me", "").json["role"], "the new role holds from the next request")
	require.Equal(t, http.StatusOK, admin.do(t, "PATCH", memberPath, `{"role":"member"}`).status)
	assert.Equal(t, http.StatusForbidden, member.do(t, "POST", "/api/v1/keys", `{"name":"k","mode":"observe"}`).status)

	res = admin.do(t, "PATCH", memberPath, `{"role":"owner"}`)
	assert.Equal(t, http.StatusForbidden, res.status)
	assert.Equal(t, "owner_required", res.errorCode())
	res = admin.do(t, "PATCH", ownerPath, `{"role":"member"}`)
	assert.Equal(t, "owner_required", res.errorCode())
	res = admin.do(t, "DELETE", ownerPath, "")
	assert.Equal(t, "owner_required", res.errorCode(), "an admin cannot remove an owner")
	res = owner.do(t, "PATCH", ownerPath, `{"role":"admin"}`)
	assert.Equal(t, http.StatusConflict, res.status)
	assert.Equal(t, "last_owner", res.errorCode())
	res = owner.do(t, "DELETE", ownerPath, "")
	assert.Equal(t, http.StatusConflict, res.status)
	assert.Equal(t, "last_owner", res.errorCode())
	res = owner.do(t, "PATCH", memberPath, `{"role":"boss"}`)
	assert.Equal(t, http.StatusBadRequest, res.status)
	assert.Equal(t, "role", errorParam(res))
	res = owner.do(t, "PATCH", memberPath, `{"role":"admin","x":1}`)
	assert.Equal(t, http.StatusBadRequest, res.status, "unknown keys are refused")
	for _, method := range []string{"PATCH", "DELETE"} {
		res = owner.do(t, method, "/api/v1/orgs/active/members/"+strangerID, `{"role":"admin"}`)
		assert.Equal(t, http.StatusNotFound, res.status, "another org's person: %s", res.body)
		res = owner.do(t, method, "/api/v1/orgs/active/members/usr_nobody", `{"role":"admin"}`)
		assert.Equal(t, http.StatusNotFound, res.status)
	}
	assert.Equal(t, "member", field(t, stranger.do(t, "GET", "/api/v1/auth/me", ""), "role"), "untouched in their own org")

	// Keys an admin made belong to the org: they outlive the admin's
	// membership.
	key := admin.do(t, "POST", "/api/v1/keys", `{"name":"admin's key","mode":"optimize"}`)
	require.Equal(t, http.StatusCreated, key.status, key.body)
	token := key.json["token"].(string)

	res = owner.do(t, "DELETE", "/api/v1/orgs/active/members/"+ids["admin@example.com"], "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, map[string]any{"ok": true}, res.json)
	res = admin.do(t, "GET", "/api/v1/orgs/active", "")
	assert.Equal(t, http.StatusForbidden, res.status, "the removed person's next request has no org: %s", res.body)
	assert.Equal(t, "no_organization", res.errorCode())
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/settings", token, "").status, "their key stays the org's")
	assert.NotContains(t, userIDs(t, owner), "admin@example.com")

	// One with another org moves there at their next request.
	inviteToDefault := func() {
		owner.do(t, "POST", "/api/v1/orgs/switch", `{"tenantId":"default"}`)
		tok, _ := invite(t, owner, "member@example.com", "member")
		require.Equal(t, http.StatusOK, member.do(t, "POST", "/api/v1/invites/"+tok+"/accept", "").status)
		owner.do(t, "POST", "/api/v1/orgs/switch", `{"tenantId":"`+acme+`"}`)
		member.do(t, "POST", "/api/v1/orgs/switch", `{"tenantId":"`+acme+`"}`)
	}
	inviteToDefault()
	require.Equal(t, acme, member.do(t, "GET", "/api/v1/auth/me", "").json["activeTenantId"])
	require.Equal(t, http.StatusOK, owner.do(t, "DELETE", memberPath, "").status)
	me := member.do(t, "GET", "/api/v1/auth/me", "")
	assert.Equal(t, "default", me.json["activeTenantId"], "switched to their other org")
	assert.NotContains(t, member.do(t, "GET", "/api/v1/orgs", "").body, acme)

	audit := owner.do(t, "GET", "/api/v1/audit", "").body
	assert.Contains(t, audit, `"member.role_changed"`)
	assert.Contains(t, audit, `"member.removed"`)
}

func TestLeaveOrg(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	owner := ts.signedIn(t, adminEmail, adminPassword)
	acme := newOrg(t, owner, "Acme")
	member := joined(t, ts, owner, "member@example.com", "member")

	res := owner.do(t, "POST", "/api/v1/orgs/active/leave", "")
	assert.Equal(t, http.StatusConflict, res.status)
	assert.Equal(t, "last_owner", res.errorCode())
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "POST", "/api/v1/orgs/active/leave", "svc_nope", "").status)

	// The owner also belongs to Default: leaving Acme moves there, once
	// another owner is named.
	require.Equal(t, http.StatusOK, owner.do(t, "PATCH", "/api/v1/orgs/active/members/"+userIDs(t, owner)["member@example.com"],
		`{"role":"owner"}`).status)
	before := owner.cookie()
	res = owner.do(t, "POST", "/api/v1/orgs/active/leave", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	org := res.json["activeOrg"].(map[string]any)
	assert.Equal(t, "default", org["tenantId"])
	assert.Equal(t, true, org["active"])
	assert.NotEqual(t, before, owner.cookie(), "a new session id, as with a switch")
	assert.Equal(t, "default", owner.do(t, "GET", "/api/v1/auth/me", "").json["activeTenantId"])
	assert.NotContains(t, owner.do(t, "GET", "/api/v1/orgs", "").body, acme)

	// The last one of Acme, now its last owner, stays; a member with no
	// other org who leaves is signed out.
	res = member.do(t, "POST", "/api/v1/orgs/active/leave", "")
	assert.Equal(t, "last_owner", res.errorCode())
	third := joined(t, ts, member, "third@example.com", "member")
	res = third.do(t, "POST", "/api/v1/orgs/active/leave", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, map[string]any{"activeOrg": nil}, res.json)
	assert.Equal(t, http.StatusUnauthorized, third.do(t, "GET", "/api/v1/auth/me", "").status)
	assert.Contains(t, member.do(t, "GET", "/api/v1/audit", "").body, `"member.left"`)
}

func TestDeleteOrg(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	owner := ts.signedIn(t, adminEmail, adminPassword)
	acme := newOrg(t, owner, "Acme")
	admin := joined(t, ts, owner, "admin@example.com", "admin")
	member := joined(t, ts, owner, "member@example.com", "member")

	// Records in Acme, and in Default.
	key := owner.do(t, "POST", "/api/v1/keys", `{"name":"acme","mode":"optimize","admin":true}`)
	require.Equal(t, http.StatusCreated, key.status, key.body)
	acmeKey := key.json["token"].(string)
	for range 2 {
		ts.chatRun(t, acmeKey, triage) // the second is an exact-cache hit
	}
	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/orgs/active/seed-demo", acmeKey, "").status)
	require.Equal(t, http.StatusOK, ts.call(t, "PUT", "/api/v1/settings", acmeKey, `{"key":"retention_days","value":7}`).status)
	invite(t, owner, "later@example.com", "member")
	_, err := ts.checkpoints.Seal(t.Context())
	require.NoError(t, err)
	ts.chatRun(t, "", triage)
	require.NoError(t, ts.recorder.Sync(t.Context()))
	defaultRuns := ts.countRows(t, "runs", "default")
	require.Positive(t, defaultRuns)

	res := admin.do(t, "DELETE", "/api/v1/orgs/active", `{"confirm":"Acme"}`)
	assert.Equal(t, http.StatusForbidden, res.status)
	assert.Equal(t, "owner_required", res.errorCode())
	res = member.do(t, "DELETE", "/api/v1/orgs/active", `{"confirm":"Acme"}`)
	assert.Equal(t, http.StatusForbidden, res.status)
	for _, body := range []string{"", `{}`, `{"confirm":"acme"}`, `{"confirm":"` + acme + `"}`} {
		res = owner.do(t, "DELETE", "/api/v1/orgs/active", body)
		assert.Equal(t, http.StatusBadRequest, res.status, "%q: %s", body, res.body)
		assert.Equal(t, "confirm", errorParam(res), body)
	}
	require.Equal(t, http.StatusOK, owner.do(t, "POST", "/api/v1/orgs/switch", `{"tenantId":"default"}`).status)
	res = owner.do(t, "DELETE", "/api/v1/orgs/active", `{"confirm":"Default"}`)
	assert.Equal(t, http.StatusConflict, res.status)
	assert.Equal(t, "default_org", res.errorCode())
	require.Equal(t, http.StatusOK, owner.do(t, "POST", "/api/v1/orgs/switch", `{"tenantId":"`+acme+`"}`).status)

	res = owner.do(t, "DELETE", "/api/v1/orgs/active", `{"confirm":"Acme"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, map[string]any{"ok": true}, res.json)
	assert.Equal(t, "default", owner.do(t, "GET", "/api/v1/auth/me", "").json["activeTenantId"], "the owner moved to their other org")
	res = member.do(t, "GET", "/api/v1/runs", "")
	assert.Equal(t, http.StatusForbidden, res.status, "a member's next request has no org: %s", res.body)
	assert.Equal(t, "no_organization", res.errorCode())
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "GET", "/api/v1/runs", acmeKey, "").status, "its keys are gone at once")
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "POST", "/v1/chat/completions", acmeKey, triage).status)

	for _, table := range ts.tenantTables(t) {
		assert.Zero(t, ts.countRows(t, table, acme), "%s keeps rows of the deleted org", table)
	}
	assert.Equal(t, defaultRuns, ts.countRows(t, "runs", "default"), "another org's runs stay")
	assert.Equal(t, http.StatusOK, owner.do(t, "GET", "/api/v1/runs", "").status)
	audit := owner.do(t, "GET", "/api/v1/audit", "")
	assert.Contains(t, audit.body, `"org.deleted"`, "audited in the org the owner moved to")
}

// tenantTables lists every table with a tenant_id column.
func (ts *testServer) tenantTables(t *testing.T) []string {
	t.Helper()
	rows, err := ts.store.DB().Query(`SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c
		WHERE m.type = 'table' AND c.name = 'tenant_id'`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NotEmpty(t, out)
	return out
}

func (ts *testServer) countRows(t *testing.T, table, tenantID string) int {
	t.Helper()
	var n int
	require.NoError(t, ts.store.DB().QueryRow(fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE tenant_id = ?`, table), tenantID).Scan(&n))
	return n
}

func TestResendVerification(t *testing.T) {
	ts := newServer(t, bootstrap, accountEnv("SVC_ALLOW_PUBLIC_SIGNUP", "true"))
	b := ts.browser(t)
	res := b.do(t, "POST", "/api/v1/auth/signup", `{"email":"jane@acme.com","name":"Jane","password":"correct horse 1"}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	first := tokenOf(t, ts.mail.last(t, "jane@acme.com").Text)

	res = b.do(t, "POST", "/api/v1/auth/verify/resend", "")
	require.Equal(t, http.StatusAccepted, res.status, res.body)
	assert.Equal(t, map[string]any{"sent": true}, res.json)
	second := tokenOf(t, ts.mail.last(t, "jane@acme.com").Text)
	assert.NotEqual(t, first, second)
	assert.Equal(t, http.StatusNotFound, b.do(t, "GET", "/api/v1/auth/verify/"+first, "").status, "the earlier link stops working")
	require.Equal(t, http.StatusOK, b.do(t, "GET", "/api/v1/auth/verify/"+second, "").status)

	res = b.do(t, "POST", "/api/v1/auth/verify/resend", "")
	assert.Equal(t, http.StatusConflict, res.status)
	assert.Equal(t, "already_verified", res.errorCode())

	// Resends draw on a bucket of the person's own, not on the address's
	// that invitations share.
	for res.status != http.StatusTooManyRequests {
		res = b.do(t, "POST", "/api/v1/auth/verify/resend", "")
		require.Contains(t, []int{http.StatusConflict, http.StatusTooManyRequests}, res.status, res.body)
	}
	res = b.do(t, "POST", "/api/v1/orgs/active/invites", `{"email":"kim@acme.com","role":"member"}`)
	assert.Equal(t, http.StatusCreated, res.status, "the address's bucket is untouched: %s", res.body)
	res = ts.call(t, "POST", "/api/v1/auth/verify/resend", bootstrap, "")
	assert.Equal(t, http.StatusUnauthorized, res.status, "a key has no address to verify")
	assert.Contains(t, b.do(t, "GET", "/api/v1/audit", "").body, `"auth.verification_resent"`)
}
