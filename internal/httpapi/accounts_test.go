package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/svc-gateway/svc/internal/auth"
)

const (
	adminEmail    = "root@example.com"
	adminPassword = "correct horse battery"
)

// accountEnv starts svc with a bootstrap admin, so account mode is on.
func accountEnv(extra ...string) map[string]string {
	env := map[string]string{"SVC_ADMIN_EMAIL": adminEmail, "SVC_ADMIN_PASSWORD": adminPassword}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// browser is a client with a cookie jar, as a person's browser.
type browser struct {
	ts     *testServer
	client *http.Client
}

func (ts *testServer) browser(t testing.TB) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{ts: ts, client: &http.Client{Jar: jar}}
}

// do sends a request with the browser's cookies; headers are name, value
// pairs.
func (b *browser) do(t testing.TB, method, path, body string, headers ...string) response {
	t.Helper()
	return send(t, b.client, method, b.ts.URL+path, body, headers...)
}

// cookie returns the browser's session cookie value.
func (b *browser) cookie() string {
	u, _ := url.Parse(b.ts.URL)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "svc_session" {
			return c.Value
		}
	}
	return ""
}

func (b *browser) login(t testing.TB, email, password string) response {
	t.Helper()
	return b.do(t, "POST", "/api/v1/auth/login", `{"email":"`+email+`","password":"`+password+`"}`)
}

// signedIn returns a browser signed in as email.
func (ts *testServer) signedIn(t testing.TB, email, password string) *browser {
	t.Helper()
	b := ts.browser(t)
	res := b.login(t, email, password)
	require.Equal(t, http.StatusOK, res.status, res.body)
	return b
}

var linkToken = regexp.MustCompile(`token=([A-Za-z0-9_-]+)`)

// tokenOf returns the token of the first link in an email body.
func tokenOf(t testing.TB, text string) string {
	t.Helper()
	m := linkToken.FindStringSubmatch(text)
	require.NotNil(t, m, "no link with a token in: %s", text)
	return m[1]
}

func field(t testing.TB, res response, path ...string) any {
	t.Helper()
	var v any = res.json
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s: no object at %q in %s", strings.Join(path, "."), p, res.body)
		v = m[p]
	}
	return v
}

func TestLoginMeLogout(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	b := ts.browser(t)

	wrongPassword := b.login(t, adminEmail, "not the password")
	unknownEmail := b.login(t, "nobody@example.com", adminPassword)
	assert.Equal(t, http.StatusUnauthorized, wrongPassword.status)
	assert.Equal(t, wrongPassword.body, unknownEmail.body, "an unknown email and a wrong password answer alike")
	assert.Equal(t, "invalid_credentials", wrongPassword.errorCode())

	res := b.login(t, "  ROOT@example.com ", adminPassword)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, adminEmail, field(t, res, "user", "email"), "emails are matched lowercased")
	assert.Equal(t, "admin", field(t, res, "user", "role"))
	assert.Equal(t, true, field(t, res, "user", "emailVerified"))
	setCookie := res.header.Get("Set-Cookie")
	assert.Contains(t, setCookie, "svc_session=")
	assert.Contains(t, setCookie, "HttpOnly")
	assert.Contains(t, setCookie, "SameSite=Lax")
	assert.Contains(t, setCookie, "Path=/")
	assert.NotContains(t, setCookie, "Secure", "http base URL: no Secure flag")

	me := b.do(t, "GET", "/api/v1/auth/me", "")
	require.Equal(t, http.StatusOK, me.status, me.body)
	assert.Equal(t, adminEmail, field(t, me, "user", "email"))
	assert.Equal(t, "default", field(t, me, "activeTenantId"))
	assert.Equal(t, http.StatusOK, b.do(t, "GET", "/api/v1/runs", "").status, "a session reaches the management API")

	old := b.cookie()
	again := b.login(t, adminEmail, adminPassword)
	require.Equal(t, http.StatusOK, again.status)
	assert.NotEqual(t, old, b.cookie(), "every login gets a fresh session id")
	stale := ts.browser(t)
	u, _ := url.Parse(ts.URL)
	stale.client.Jar.SetCookies(u, []*http.Cookie{{Name: "svc_session", Value: old}})
	assert.Equal(t, http.StatusUnauthorized, stale.do(t, "GET", "/api/v1/auth/me", "").status, "the replaced session ended")

	out := b.do(t, "POST", "/api/v1/auth/logout", "")
	require.Equal(t, http.StatusOK, out.status)
	assert.Equal(t, true, out.json["ok"])
	assert.Contains(t, out.header.Get("Set-Cookie"), "Max-Age=0")
	replay := ts.browser(t)
	replay.client.Jar.SetCookies(u, []*http.Cookie{{Name: "svc_session", Value: again.header.Get("Set-Cookie")[len("svc_session="):strings.Index(again.header.Get("Set-Cookie"), ";")]}})
	assert.Equal(t, http.StatusUnauthorized, replay.do(t, "GET", "/api/v1/auth/me", "").status,
		"a logged-out session is deleted server-side, not only forgotten by the browser")
}

func TestAccountMode(t *testing.T) {
	t.Run("no users: open dev mode", func(t *testing.T) {
		ts := newServer(t, "", nil)
		assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/runs", "", "").status)
		me := ts.call(t, "GET", "/api/v1/auth/me", "", "")
		assert.Equal(t, http.StatusUnauthorized, me.status, "open dev mode has no user to show")
	})
	t.Run("a user exists: sessions required", func(t *testing.T) {
		ts := newServer(t, "", accountEnv())
		res := ts.call(t, "GET", "/api/v1/runs", "", "")
		assert.Equal(t, http.StatusUnauthorized, res.status)
		assert.Equal(t, "missing_credentials", res.errorCode())
		chat := ts.call(t, "POST", "/v1/chat/completions", "", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
		assert.Equal(t, http.StatusOK, chat.status, "gateway traffic keeps the API-key rule: open without SVC_API_KEY")
		assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/health", "", "").status)
	})
	t.Run("SVC_REQUIRE_LOGIN with zero users", func(t *testing.T) {
		ts := newServer(t, "", map[string]string{"SVC_REQUIRE_LOGIN": "true"})
		assert.Equal(t, http.StatusUnauthorized, ts.call(t, "GET", "/api/v1/runs", "", "").status)
	})
	t.Run("bearer mode: keys still work beside sessions", func(t *testing.T) {
		ts := newServer(t, bootstrap, accountEnv())
		assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/runs", bootstrap, "").status)
		b := ts.signedIn(t, adminEmail, adminPassword)
		assert.Equal(t, http.StatusOK, b.do(t, "GET", "/api/v1/runs", "").status)
	})
}

func TestBootstrapAdminIsIdempotentAndKeepsAChangedPassword(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	b := ts.browser(t)
	require.Equal(t, http.StatusOK, b.do(t, "POST", "/api/v1/auth/password-reset", `{"email":"`+adminEmail+`"}`).status)
	token := tokenOf(t, ts.mail.last(t, adminEmail).Text)
	require.Equal(t, http.StatusOK, b.do(t, "POST", "/api/v1/auth/password-reset/"+token, `{"password":"a brand new secret"}`).status)

	require.NoError(t, ts.accounts.Bootstrap(context.Background(), adminEmail, adminPassword), "a restart boots again")
	assert.Equal(t, http.StatusUnauthorized, b.login(t, adminEmail, adminPassword).status, "the changed password is kept")
	res := b.login(t, adminEmail, "a brand new secret")
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, "admin", field(t, res, "user", "role"))
	orgs := b.do(t, "GET", "/api/v1/orgs", "")
	assert.Len(t, orgs.json["orgs"], 1, "no second membership")
}

func TestPasswordReset(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	signedIn := ts.signedIn(t, adminEmail, adminPassword)
	b := ts.browser(t)

	before := ts.mail.count()
	res := b.do(t, "POST", "/api/v1/auth/password-reset", `{"email":"nobody@example.com"}`)
	assert.Equal(t, http.StatusOK, res.status, "no account oracle")
	assert.Equal(t, before, ts.mail.count(), "no email for an unknown address")

	res = b.do(t, "POST", "/api/v1/auth/password-reset", `{"email":"`+adminEmail+`"}`)
	require.Equal(t, http.StatusOK, res.status)
	msg := ts.mail.last(t, adminEmail)
	assert.Contains(t, msg.Text, "http://localhost:4100/reset-password?token=")
	token := tokenOf(t, msg.Text)

	short := b.do(t, "POST", "/api/v1/auth/password-reset/"+token, `{"password":"short"}`)
	assert.Equal(t, http.StatusBadRequest, short.status)
	ok := b.do(t, "POST", "/api/v1/auth/password-reset/"+token, `{"password":"new password 123"}`)
	require.Equal(t, http.StatusOK, ok.status, ok.body)
	assert.Equal(t, true, ok.json["ok"])

	assert.Equal(t, http.StatusUnauthorized, signedIn.do(t, "GET", "/api/v1/auth/me", "").status, "every session of the user ended")
	assert.Equal(t, http.StatusUnauthorized, b.login(t, adminEmail, adminPassword).status)
	assert.Equal(t, http.StatusOK, b.login(t, adminEmail, "new password 123").status)
	reused := b.do(t, "POST", "/api/v1/auth/password-reset/"+token, `{"password":"another one 456"}`)
	assert.Equal(t, http.StatusNotFound, reused.status)
	assert.Equal(t, "invalid_token", reused.errorCode())

	// A second request makes the first link stop working, and links expire.
	require.Equal(t, http.StatusOK, b.do(t, "POST", "/api/v1/auth/password-reset", `{"email":"`+adminEmail+`"}`).status)
	first := tokenOf(t, ts.mail.last(t, adminEmail).Text)
	require.Equal(t, http.StatusOK, b.do(t, "POST", "/api/v1/auth/password-reset", `{"email":"`+adminEmail+`"}`).status)
	second := tokenOf(t, ts.mail.last(t, adminEmail).Text)
	assert.Equal(t, http.StatusNotFound, b.do(t, "POST", "/api/v1/auth/password-reset/"+first, `{"password":"another one 456"}`).status)
	ts.clock.Advance(time.Hour + time.Second)
	assert.Equal(t, http.StatusNotFound, b.do(t, "POST", "/api/v1/auth/password-reset/"+second, `{"password":"another one 456"}`).status)
}

func TestOrganizations(t *testing.T) {
	ts := newServer(t, bootstrap, accountEnv())
	b := ts.signedIn(t, adminEmail, adminPassword)

	orgs := b.do(t, "GET", "/api/v1/orgs", "")
	require.Equal(t, http.StatusOK, orgs.status)
	require.Len(t, orgs.json["orgs"], 1)
	def := orgs.json["orgs"].([]any)[0].(map[string]any)
	defCreated, err := time.Parse(time.RFC3339, fmt.Sprint(def["createdAt"]))
	require.NoError(t, err, "createdAt is an RFC 3339 time: %v", def["createdAt"])
	assert.False(t, defCreated.IsZero())
	delete(def, "createdAt")
	assert.Equal(t, map[string]any{"tenantId": "default", "name": "Default", "role": "owner", "active": true}, def)

	ts.clock.Advance(90*time.Minute + 123*time.Millisecond)
	acmeCreated := ts.clock.Now().UTC().Format(time.RFC3339Nano)
	created := b.do(t, "POST", "/api/v1/orgs", `{"name":"Acme"}`)
	require.Equal(t, http.StatusCreated, created.status, created.body)
	acme := field(t, created, "org", "tenantId").(string)
	assert.Equal(t, acme, created.json["activeTenantId"])
	assert.Equal(t, acmeCreated, field(t, created, "org", "createdAt"))
	assert.Equal(t, acme, field(t, b.do(t, "GET", "/api/v1/auth/me", ""), "activeTenantId"), "the new org is active")

	ts.clock.Advance(time.Hour) // when an org was made, not when it is read
	active := b.do(t, "GET", "/api/v1/orgs/active", "")
	require.Equal(t, http.StatusOK, active.status)
	assert.Equal(t, "Acme", active.json["name"])
	assert.Equal(t, "owner", active.json["role"])
	assert.Equal(t, acmeCreated, active.json["createdAt"])
	listed := b.do(t, "GET", "/api/v1/orgs", "").json["orgs"].([]any)
	require.Len(t, listed, 2)
	assert.Equal(t, def["tenantId"], listed[0].(map[string]any)["tenantId"])
	assert.Equal(t, defCreated.UTC().Format(time.RFC3339Nano), listed[0].(map[string]any)["createdAt"])
	assert.Equal(t, acmeCreated, listed[1].(map[string]any)["createdAt"])
	members := active.json["members"].([]any)
	require.Len(t, members, 1)
	assert.Equal(t, adminEmail, members[0].(map[string]any)["email"])

	renamed := b.do(t, "PATCH", "/api/v1/orgs/active", `{"name":"Acme Corp"}`)
	require.Equal(t, http.StatusOK, renamed.status, renamed.body)
	assert.Equal(t, "Acme Corp", renamed.json["name"])
	assert.Equal(t, http.StatusBadRequest, b.do(t, "PATCH", "/api/v1/orgs/active", `{"name":"  "}`).status)

	// Records made in one org stay there.
	key := b.do(t, "POST", "/api/v1/keys", `{"name":"acme key","mode":"optimize"}`)
	require.Equal(t, http.StatusCreated, key.status, key.body)
	assert.Empty(t, ts.call(t, "GET", "/api/v1/keys", bootstrap, "").json["keys"], "the default tenant does not see Acme's key")

	before := b.cookie()
	switched := b.do(t, "POST", "/api/v1/orgs/switch", `{"tenantId":"default"}`)
	require.Equal(t, http.StatusOK, switched.status, switched.body)
	assert.NotEqual(t, before, b.cookie(), "a switch starts a new session id")
	old := ts.browser(t)
	u, _ := url.Parse(ts.URL)
	old.client.Jar.SetCookies(u, []*http.Cookie{{Name: "svc_session", Value: before}})
	assert.Equal(t, http.StatusUnauthorized, old.do(t, "GET", "/api/v1/auth/me", "").status, "the session before the switch ended")
	assert.Equal(t, "default", switched.json["activeTenantId"])
	assert.Equal(t, "default", field(t, b.do(t, "GET", "/api/v1/auth/me", ""), "activeTenantId"))
	assert.Empty(t, b.do(t, "GET", "/api/v1/keys", "").json["keys"])

	foreign := ts.call(t, "POST", "/api/v1/orgs", bootstrap, `{"name":"Elsewhere"}`)
	assert.Equal(t, http.StatusUnauthorized, foreign.status, "a key has no organizations of its own")
	notMember := b.do(t, "POST", "/api/v1/orgs/switch", `{"tenantId":"t_nope"}`)
	assert.Equal(t, http.StatusForbidden, notMember.status)
	assert.Equal(t, "not_a_member", notMember.errorCode())

	audit := b.do(t, "GET", "/api/v1/audit", "")
	require.Equal(t, http.StatusOK, audit.status)
	assert.Contains(t, audit.body, `"org.switched"`)
	b.do(t, "POST", "/api/v1/orgs/switch", `{"tenantId":"`+acme+`"}`)
	acmeAudit := b.do(t, "GET", "/api/v1/audit", "").body
	assert.Contains(t, acmeAudit, `"org.created"`)
	assert.Contains(t, acmeAudit, `"org.renamed"`)
}

func TestStaleActiveOrgHealsToFirstMembership(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	b := ts.signedIn(t, adminEmail, adminPassword)
	created := b.do(t, "POST", "/api/v1/orgs", `{"name":"Gone soon"}`)
	require.Equal(t, http.StatusCreated, created.status)
	tenantID := field(t, created, "org", "tenantId").(string)
	_, err := ts.store.DB().Exec(`DELETE FROM memberships WHERE tenant_id = ?`, tenantID)
	require.NoError(t, err)
	ts.sessions.Invalidate()
	me := b.do(t, "GET", "/api/v1/auth/me", "")
	require.Equal(t, http.StatusOK, me.status)
	assert.Equal(t, "default", me.json["activeTenantId"])
}

// invite creates an invite as b and returns its accept link's token.
func invite(t testing.TB, b *browser, email, role string) (string, response) {
	t.Helper()
	res := b.do(t, "POST", "/api/v1/orgs/active/invites", `{"email":"`+email+`","role":"`+role+`"}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	return tokenOf(t, res.json["acceptUrl"].(string)), res
}

func TestInviteANewUser(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	admin := ts.signedIn(t, adminEmail, adminPassword)
	token, res := invite(t, admin, "New.Person@Example.com", "member")
	assert.Equal(t, "new.person@example.com", field(t, res, "invite", "email"))
	assert.Equal(t, "pending", field(t, res, "invite", "status"))
	assert.Contains(t, res.json["acceptUrl"], "http://localhost:4100/accept-invite?token=")
	assert.Equal(t, res.json["acceptUrl"], tokenLink(ts.mail.last(t, "new.person@example.com").Text), "the email carries the accept link")

	list := admin.do(t, "GET", "/api/v1/orgs/active/invites", "")
	require.Equal(t, http.StatusOK, list.status)
	assert.NotContains(t, list.body, token, "the raw token is never shown again")
	assert.Len(t, list.json["invites"], 1)

	guest := ts.browser(t)
	info := guest.do(t, "GET", "/api/v1/invites/"+token, "")
	require.Equal(t, http.StatusOK, info.status)
	assert.Equal(t, true, info.json["valid"])
	assert.Equal(t, "Default", info.json["orgName"])
	assert.Equal(t, "new.person@example.com", info.json["email"])
	assert.Equal(t, "member", info.json["role"])
	assert.Equal(t, false, info.json["userExists"])

	assert.Equal(t, http.StatusBadRequest, guest.do(t, "POST", "/api/v1/invites/"+token+"/accept", `{"name":"New Person"}`).status,
		"a new account needs a password")
	accepted := guest.do(t, "POST", "/api/v1/invites/"+token+"/accept", `{"name":"New Person","password":"welcome aboard"}`)
	require.Equal(t, http.StatusOK, accepted.status, accepted.body)
	assert.Equal(t, "default", accepted.json["tenantId"])
	me := guest.do(t, "GET", "/api/v1/auth/me", "")
	require.Equal(t, http.StatusOK, me.status, "the new user is signed in")
	assert.Equal(t, true, field(t, me, "user", "emailVerified"), "the link proved the address")
	assert.Equal(t, "member", me.json["role"])
	assert.Equal(t, http.StatusForbidden, guest.do(t, "POST", "/api/v1/keys", `{"name":"k","mode":"observe"}`).status,
		"a member is not an admin")

	reused := ts.browser(t).do(t, "POST", "/api/v1/invites/"+token+"/accept", `{"name":"Someone","password":"whatever 123"}`)
	assert.Equal(t, http.StatusConflict, reused.status)
	assert.Equal(t, "invite_accepted", reused.errorCode())
	assert.Equal(t, false, guest.do(t, "GET", "/api/v1/invites/"+token, "").json["valid"])
	unknown := guest.do(t, "POST", "/api/v1/invites/nope/accept", `{"name":"X","password":"whatever 123"}`)
	assert.Equal(t, http.StatusNotFound, unknown.status)
	assert.Equal(t, "invalid", guest.do(t, "GET", "/api/v1/invites/nope", "").json["status"])

	assert.Contains(t, admin.do(t, "GET", "/api/v1/audit", "").body, `"invite.accepted"`)
	assert.Contains(t, admin.do(t, "GET", "/api/v1/audit", "").body, `"invite.created"`)
}

func tokenLink(text string) string {
	return regexp.MustCompile(`http://\S+accept-invite\?token=[A-Za-z0-9_-]+`).FindString(text)
}

func TestInviteAnExistingUser(t *testing.T) {
	ts := newServer(t, "", accountEnv("SVC_ALLOW_PUBLIC_SIGNUP", "true"))
	jane := ts.browser(t)
	require.Equal(t, http.StatusCreated, jane.do(t, "POST", "/api/v1/auth/signup", `{"email":"jane@acme.test","name":"Jane","password":"jane's secret"}`).status)
	other := ts.browser(t)
	require.Equal(t, http.StatusCreated, other.do(t, "POST", "/api/v1/auth/signup", `{"email":"other@acme.test","name":"Other","password":"other secret"}`).status)

	admin := ts.signedIn(t, adminEmail, adminPassword)
	token, _ := invite(t, admin, "jane@acme.test", "admin")
	info := ts.browser(t).do(t, "GET", "/api/v1/invites/"+token, "")
	assert.Equal(t, true, info.json["userExists"])

	anon := ts.browser(t).do(t, "POST", "/api/v1/invites/"+token+"/accept", `{"name":"Jane","password":"jane's secret"}`)
	assert.Equal(t, http.StatusUnauthorized, anon.status, "a password in the body is no way in for an existing account")
	assert.Equal(t, "sign_in_required", anon.errorCode())
	wrong := other.do(t, "POST", "/api/v1/invites/"+token+"/accept", "")
	assert.Equal(t, http.StatusForbidden, wrong.status)
	assert.Equal(t, "wrong_user", wrong.errorCode())

	ok := jane.do(t, "POST", "/api/v1/invites/"+token+"/accept", "")
	require.Equal(t, http.StatusOK, ok.status, ok.body)
	me := jane.do(t, "GET", "/api/v1/auth/me", "")
	assert.Equal(t, "default", me.json["activeTenantId"], "the user lands in the invited org")
	assert.Equal(t, "admin", me.json["role"])
	orgs := jane.do(t, "GET", "/api/v1/orgs", "")
	assert.Len(t, orgs.json["orgs"], 2)

	again := admin.do(t, "POST", "/api/v1/orgs/active/invites", `{"email":"jane@acme.test","role":"member"}`)
	assert.Equal(t, http.StatusConflict, again.status)
	assert.Equal(t, "already_member", again.errorCode())
}

func TestInviteExpiryRevocationAndRules(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	admin := ts.signedIn(t, adminEmail, adminPassword)
	guest := ts.browser(t)

	for _, body := range []string{`{"email":"x@example.com","role":"owner"}`, `{"email":"not an email","role":"member"}`, `{"email":"x@example.com"}`} {
		assert.Equal(t, http.StatusBadRequest, admin.do(t, "POST", "/api/v1/orgs/active/invites", body).status, body)
	}

	expiring, _ := invite(t, admin, "late@example.com", "member")
	ts.clock.Advance(7*24*time.Hour + time.Millisecond)
	info := guest.do(t, "GET", "/api/v1/invites/"+expiring, "")
	assert.Equal(t, false, info.json["valid"])
	assert.Equal(t, "expired", info.json["status"])
	late := guest.do(t, "POST", "/api/v1/invites/"+expiring+"/accept", `{"name":"Late","password":"too late 123"}`)
	assert.Equal(t, http.StatusConflict, late.status)
	assert.Equal(t, "invite_expired", late.errorCode())

	assert.Equal(t, http.StatusUnauthorized, admin.do(t, "GET", "/api/v1/auth/me", "").status, "a week idle ends a session")
	admin = ts.signedIn(t, adminEmail, adminPassword)
	invite(t, admin, "unread@example.com", "member")
	ts.clock.Advance(8 * 24 * time.Hour)
	n, err := ts.accounts.ExpireInvites(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the sweep marks the invite no one opened")
	admin = ts.signedIn(t, adminEmail, adminPassword)

	revoked, res := invite(t, admin, "changed.mind@example.com", "member")
	id := field(t, res, "invite", "id").(string)
	rv := admin.do(t, "POST", "/api/v1/orgs/active/invites/"+id+"/revoke", "")
	require.Equal(t, http.StatusOK, rv.status, rv.body)
	assert.Equal(t, "revoked", field(t, rv, "invite", "status"))
	assert.Equal(t, http.StatusConflict, admin.do(t, "POST", "/api/v1/orgs/active/invites/"+id+"/revoke", "").status)
	refused := guest.do(t, "POST", "/api/v1/invites/"+revoked+"/accept", `{"name":"C","password":"changed 12345"}`)
	assert.Equal(t, http.StatusConflict, refused.status)
	assert.Equal(t, "invite_revoked", refused.errorCode())

	statuses := map[string]string{}
	for _, inv := range admin.do(t, "GET", "/api/v1/orgs/active/invites", "").json["invites"].([]any) {
		m := inv.(map[string]any)
		statuses[m["email"].(string)] = m["status"].(string)
	}
	assert.Equal(t, map[string]string{"late@example.com": "expired", "unread@example.com": "expired",
		"changed.mind@example.com": "revoked"}, statuses)

	// Another org's admin neither sees nor revokes these.
	require.Equal(t, http.StatusCreated, admin.do(t, "POST", "/api/v1/orgs", `{"name":"Other"}`).status)
	assert.Empty(t, admin.do(t, "GET", "/api/v1/orgs/active/invites", "").json["invites"])
	foreign := admin.do(t, "POST", "/api/v1/orgs/active/invites/"+id+"/revoke", "")
	assert.Equal(t, http.StatusNotFound, foreign.status)

	// A member cannot invite.
	memberToken, _ := invite(t, admin, "member@example.com", "member")
	member := ts.browser(t)
	require.Equal(t, http.StatusOK, member.do(t, "POST", "/api/v1/invites/"+memberToken+"/accept", `{"name":"M","password":"member 12345"}`).status)
	assert.Equal(t, http.StatusForbidden, member.do(t, "POST", "/api/v1/orgs/active/invites", `{"email":"y@example.com","role":"member"}`).status)
	assert.Equal(t, http.StatusForbidden, member.do(t, "GET", "/api/v1/orgs/active/invites", "").status)
	assert.Equal(t, http.StatusForbidden, member.do(t, "PATCH", "/api/v1/orgs/active", `{"name":"Mine"}`).status)
}

func TestSignupAndVerification(t *testing.T) {
	off := newServer(t, "", nil)
	res := off.browser(t).do(t, "POST", "/api/v1/auth/signup", `{"email":"a@acme.test","name":"A","password":"password 123"}`)
	assert.Equal(t, http.StatusForbidden, res.status)
	assert.Equal(t, "signup_disabled", res.errorCode())
	assert.Equal(t, false, off.call(t, "GET", "/health", "", "").json["publicSignup"])

	ts := newServer(t, "", map[string]string{"SVC_ALLOW_PUBLIC_SIGNUP": "true"})
	jane := ts.browser(t)
	res = jane.do(t, "POST", "/api/v1/auth/signup", `{"email":"Jane@Acme.test","name":"Jane Doe","password":"password 123"}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	assert.Equal(t, "acme.test", res.json["orgName"], "named from the email domain")
	assert.Equal(t, false, field(t, res, "user", "emailVerified"))
	me := jane.do(t, "GET", "/api/v1/auth/me", "")
	require.Equal(t, http.StatusOK, me.status, "signed in at once")
	assert.Equal(t, "owner", me.json["role"])
	assert.Equal(t, false, field(t, me, "user", "emailVerified"), "the dashboard shows its verify banner")
	assert.Equal(t, http.StatusOK, jane.do(t, "GET", "/api/v1/runs", "").status, "verification gates nothing critical")

	bob := ts.browser(t)
	res = bob.do(t, "POST", "/api/v1/auth/signup", `{"email":"bob@gmail.com","name":"Bob","password":"password 123"}`)
	require.Equal(t, http.StatusCreated, res.status)
	assert.Equal(t, "Bob's org", res.json["orgName"], "generic mail providers do not name orgs")

	dup := ts.browser(t).do(t, "POST", "/api/v1/auth/signup", `{"email":"jane@acme.test","name":"J","password":"password 123"}`)
	assert.Equal(t, http.StatusConflict, dup.status)
	for _, body := range []string{`{"email":"x","name":"X","password":"password 123"}`, `{"email":"x@y.test","name":"","password":"password 123"}`,
		`{"email":"x@y.test","name":"X","password":"short"}`, `{"email":"x@y.test","name":"X","password":"password 123","admin":true}`} {
		assert.Equal(t, http.StatusBadRequest, ts.browser(t).do(t, "POST", "/api/v1/auth/signup", body).status, body)
	}

	msg := ts.mail.last(t, "jane@acme.test")
	assert.Contains(t, msg.Text, "http://localhost:4100/verify-email?token=")
	token := tokenOf(t, msg.Text)
	v := ts.browser(t).do(t, "GET", "/api/v1/auth/verify/"+token, "")
	require.Equal(t, http.StatusOK, v.status, v.body)
	assert.Equal(t, "jane@acme.test", v.json["email"])
	assert.Equal(t, true, field(t, jane.do(t, "GET", "/api/v1/auth/me", ""), "user", "emailVerified"))
	assert.Equal(t, http.StatusNotFound, ts.browser(t).do(t, "GET", "/api/v1/auth/verify/"+token, "").status, "the token is consumed")

	audit := jane.do(t, "GET", "/api/v1/audit", "").body
	assert.Contains(t, audit, `"auth.signup"`)
	assert.Contains(t, audit, `"auth.email_verified"`)
	assert.NotContains(t, bob.do(t, "GET", "/api/v1/audit", "").body, "jane@acme.test", "each org sees its own trail")
}

func TestAccountEndpointsShareAPerAddressBucket(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	admin := ts.signedIn(t, adminEmail, adminPassword)
	for i := range 4 {
		invite(t, admin, "p"+string(rune('a'+i))+"@example.com", "member")
	}
	guest := ts.browser(t)
	for range 6 {
		res := guest.do(t, "POST", "/api/v1/auth/signup", `{"email":"a@b.test","name":"A","password":"password 123"}`)
		require.Equal(t, http.StatusForbidden, res.status, "signup is off but still draws from the bucket")
	}
	res := guest.do(t, "POST", "/api/v1/invites/nope/accept", `{"name":"X","password":"password 123"}`)
	assert.Equal(t, http.StatusTooManyRequests, res.status, "signup, invite-create and invite-accept share one bucket of 10 a minute")
	assert.NotEmpty(t, res.header.Get("Retry-After"))
	ts.clock.Advance(7 * time.Second)
	assert.Equal(t, http.StatusNotFound, guest.do(t, "POST", "/api/v1/invites/nope/accept", `{"name":"X","password":"password 123"}`).status,
		"the bucket refills")
}

func TestCookieWritesRefuseCrossSiteRequests(t *testing.T) {
	ts := newServer(t, bootstrap, accountEnv())
	b := ts.signedIn(t, adminEmail, adminPassword)
	res := b.do(t, "POST", "/api/v1/orgs", `{"name":"Evil"}`, "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusForbidden, res.status)
	assert.Equal(t, "cross_origin", res.errorCode())
	res = b.do(t, "POST", "/api/v1/orgs", `{"name":"Evil"}`, "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, res.status)
	assert.Equal(t, http.StatusOK, b.do(t, "GET", "/api/v1/orgs", "", "Sec-Fetch-Site", "cross-site").status, "reads are not writes")
	assert.Equal(t, http.StatusCreated, b.do(t, "POST", "/api/v1/orgs", `{"name":"Fine"}`, "Sec-Fetch-Site", "same-origin").status)
	login := ts.browser(t).do(t, "POST", "/api/v1/auth/login", `{"email":"`+adminEmail+`","password":"`+adminPassword+`"}`, "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusForbidden, login.status, "no login CSRF")
	keyed := ts.call(t, "POST", "/api/v1/keys", bootstrap, `{"name":"k","mode":"observe"}`, "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusCreated, keyed.status, "bearer tokens are not ambient credentials")
}

// TestNoPlainSecretsInTheDatabase walks every account flow and then reads
// the database files byte by byte for the passwords and tokens that passed
// through.
func TestNoPlainSecretsInTheDatabase(t *testing.T) {
	ts := newServer(t, "", accountEnv("SVC_ALLOW_PUBLIC_SIGNUP", "true"))
	secrets := []string{adminPassword}
	admin := ts.signedIn(t, adminEmail, adminPassword)
	secrets = append(secrets, admin.cookie())

	token, _ := invite(t, admin, "invitee@example.com", "member")
	guest := ts.browser(t)
	require.Equal(t, http.StatusOK, guest.do(t, "POST", "/api/v1/invites/"+token+"/accept", `{"name":"Invitee","password":"invitee secret 1"}`).status)
	secrets = append(secrets, token, "invitee secret 1", guest.cookie())

	signup := ts.browser(t)
	require.Equal(t, http.StatusCreated, signup.do(t, "POST", "/api/v1/auth/signup", `{"email":"s@signup.test","name":"S","password":"signup secret 2"}`).status)
	verify := tokenOf(t, ts.mail.last(t, "s@signup.test").Text)
	secrets = append(secrets, "signup secret 2", signup.cookie(), verify)

	require.Equal(t, http.StatusOK, guest.do(t, "POST", "/api/v1/auth/password-reset", `{"email":"invitee@example.com"}`).status)
	reset := tokenOf(t, ts.mail.last(t, "invitee@example.com").Text)
	require.Equal(t, http.StatusOK, guest.do(t, "POST", "/api/v1/auth/password-reset/"+reset, `{"password":"reset secret 3"}`).status)
	secrets = append(secrets, reset, "reset secret 3")

	var files bytes.Buffer
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(ts.store.Path() + suffix)
		if err == nil {
			files.Write(b)
		}
	}
	require.Positive(t, files.Len())
	for _, s := range secrets {
		require.NotEmpty(t, s)
		assert.False(t, bytes.Contains(files.Bytes(), []byte(s)), "%q is in the database files", s)
	}
	assert.True(t, bytes.Contains(files.Bytes(), []byte("$argon2id$v=19$")), "passwords are stored as argon2id hashes")
}

func TestOrgRolesGateSeedDemo(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	owner := ts.signedIn(t, adminEmail, adminPassword)
	token, _ := invite(t, owner, "member@example.com", "member")
	member := ts.browser(t)
	require.Equal(t, http.StatusOK, member.do(t, "POST", "/api/v1/invites/"+token+"/accept", `{"name":"M","password":"member 12345"}`).status)

	assert.Equal(t, http.StatusForbidden, member.do(t, "POST", "/api/v1/orgs/active/seed-demo", "").status)
	assert.Equal(t, http.StatusOK, member.do(t, "GET", "/api/v1/orgs/active/onboarding", "").status, "members read onboarding")
	res := owner.do(t, "POST", "/api/v1/orgs/active/seed-demo", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.EqualValues(t, 1, field(t, member.do(t, "GET", "/api/v1/orgs/active/onboarding", ""), "workflowCount"))
}

func TestActiveOrgIsForPeople(t *testing.T) {
	ts := newServer(t, bootstrap, accountEnv())
	res := ts.call(t, "GET", "/api/v1/orgs/active", bootstrap, "")
	assert.Equal(t, http.StatusUnauthorized, res.status, "a key does not read the members' addresses")
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "PATCH", "/api/v1/orgs/active", bootstrap, `{"name":"X"}`).status)
}

func TestBootstrapRefusesToRaiseAnUnverifiedAccount(t *testing.T) {
	ts := newServer(t, "", map[string]string{"SVC_ALLOW_PUBLIC_SIGNUP": "true"})
	squatter := ts.browser(t)
	require.Equal(t, http.StatusCreated, squatter.do(t, "POST", "/api/v1/auth/signup",
		`{"email":"admin@corp.test","name":"Squatter","password":"squatter pass"}`).status)
	err := ts.accounts.Bootstrap(context.Background(), "admin@corp.test", "operator pass 1")
	require.Error(t, err, "the squatter's password must not become the admin's")
	assert.Contains(t, err.Error(), "not verified")
	me := squatter.do(t, "GET", "/api/v1/auth/me", "")
	assert.Equal(t, "member", field(t, me, "user", "role"))
}

func TestPerAddressBucketsBehindATrustedProxy(t *testing.T) {
	signup := func(ts *testServer, client string) int {
		return ts.browser(t).do(t, "POST", "/api/v1/auth/signup", `{"email":"a@b.test","name":"A","password":"password 123"}`,
			"X-Forwarded-For", client+", 127.0.0.1").status
	}
	proxied := newServer(t, "", map[string]string{"SVC_TRUSTED_PROXIES": "127.0.0.1"})
	for range 10 {
		require.Equal(t, http.StatusForbidden, signup(proxied, "203.0.113.1"))
	}
	assert.Equal(t, http.StatusTooManyRequests, signup(proxied, "203.0.113.1"))
	assert.Equal(t, http.StatusForbidden, signup(proxied, "203.0.113.2"), "another client behind the proxy has its own bucket")

	direct := newServer(t, "", nil)
	for i := range 10 {
		require.Equal(t, http.StatusForbidden, signup(direct, "198.51.100."+strconv.Itoa(i)))
	}
	assert.Equal(t, http.StatusTooManyRequests, signup(direct, "198.51.100.99"),
		"without a trusted proxy, X-Forwarded-For is the client's to write and is ignored")
}

// Guesses at one account's password from many addresses are slowed by the
// account's own bucket, the right password included once it is empty, and
// an address with no account behaves the same.
func TestSignInAttemptsAreLimitedPerAccount(t *testing.T) {
	env := accountEnv()
	env["SVC_TRUSTED_PROXIES"] = "127.0.0.1"
	ts := newServer(t, "", env)
	login := func(client, email, password string) response {
		return ts.browser(t).do(t, "POST", "/api/v1/auth/login", `{"email":"`+email+`","password":"`+password+`"}`,
			"X-Forwarded-For", client+", 127.0.0.1")
	}
	for _, email := range []string{adminEmail, "nobody@example.com"} {
		for i := range 10 {
			res := login("203.0.113."+strconv.Itoa(i), email, "wrong guess "+strconv.Itoa(i))
			require.Equal(t, http.StatusUnauthorized, res.status, "attempt %d at %s", i, email)
		}
		res := login("203.0.113.77", email, "wrong guess 10")
		require.Equal(t, http.StatusTooManyRequests, res.status, email)
		assert.NotEmpty(t, res.header.Get("Retry-After"))
		assert.Contains(t, res.body, "this account")
	}
	assert.Equal(t, http.StatusTooManyRequests, login("198.51.100.1", strings.ToUpper(adminEmail), adminPassword).status,
		"the right password waits too, under any spelling of the address")
	assert.Equal(t, http.StatusUnauthorized, login("198.51.100.2", "other@example.com", "wrong").status, "other accounts are not slowed")

	ts.clock.Advance(31 * time.Second)
	assert.Equal(t, http.StatusOK, login("198.51.100.3", adminEmail, adminPassword).status, "one attempt back after 30 seconds")
}

// Only failed sign-ins draw from the account's bucket, so the owner's own
// sign-ins never lock them out; once wrong guesses have emptied it, the
// right password is refused exactly like a wrong one until it refills.
func TestSignInChargesOnlyFailedAttemptsToTheAccount(t *testing.T) {
	env := accountEnv()
	env["SVC_TRUSTED_PROXIES"] = "127.0.0.1"
	ts := newServer(t, "", env)
	login := func(client, password string) response {
		return ts.browser(t).do(t, "POST", "/api/v1/auth/login", `{"email":"`+adminEmail+`","password":"`+password+`"}`,
			"X-Forwarded-For", client+", 127.0.0.1")
	}
	for i := range 20 {
		res := login("203.0.113."+strconv.Itoa(i), adminPassword)
		require.Equal(t, http.StatusOK, res.status, "sign-in %d: correct sign-ins cost the account nothing", i)
	}
	for i := range 10 {
		require.Equal(t, http.StatusUnauthorized, login("198.51.100."+strconv.Itoa(i), "wrong guess "+strconv.Itoa(i)).status, "guess %d", i)
	}
	wrong := login("192.0.2.1", "wrong guess 10")
	right := login("192.0.2.2", adminPassword)
	require.Equal(t, http.StatusTooManyRequests, right.status, "the right password waits too")
	assert.Equal(t, wrong.status, right.status)
	assert.Equal(t, wrong.body, right.body, "a refusal says nothing about the password")
	assert.Equal(t, wrong.header.Get("Retry-After"), right.header.Get("Retry-After"))

	ts.clock.Advance(31 * time.Second)
	for i := range 3 {
		assert.Equal(t, http.StatusOK, login("192.0.2."+strconv.Itoa(10+i), adminPassword).status,
			"sign-in %d: one refilled token serves any number of correct sign-ins", i)
	}
	assert.Equal(t, http.StatusUnauthorized, login("192.0.2.20", "wrong guess 11").status, "a failure takes the token")
	assert.Equal(t, http.StatusTooManyRequests, login("192.0.2.21", adminPassword).status)
}

// deviceCookie returns the device cookie res set.
func deviceCookie(t *testing.T, res response) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: res.header}).Cookies() {
		if c.Name == auth.DeviceCookie {
			return c
		}
	}
	require.FailNow(t, "no device cookie set", "%v", res.header)
	return nil
}

// A browser that signed in to an account before keeps signing in while
// guesses from elsewhere have emptied the account's bucket; its own wrong
// guesses empty only its own bucket; its cookie is new at each sign-in,
// goes to the sign-in endpoint only, and stops counting once replaced.
func TestAKnownDeviceSignsInWhileTheAccountIsUnderAttack(t *testing.T) {
	env := accountEnv()
	env["SVC_TRUSTED_PROXIES"] = "127.0.0.1"
	ts := newServer(t, "", env)
	login := func(b *browser, client, email, password string) response {
		return b.do(t, "POST", "/api/v1/auth/login", `{"email":"`+email+`","password":"`+password+`"}`,
			"X-Forwarded-For", client+", 127.0.0.1")
	}
	owner := ts.browser(t)
	first := login(owner, "192.0.2.1", adminEmail, adminPassword)
	require.Equal(t, http.StatusOK, first.status, first.body)
	c := deviceCookie(t, first)
	assert.Equal(t, "/api/v1/auth/login", c.Path, "sent to the sign-in endpoint only")
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	assert.Equal(t, int(auth.DeviceLifetime/time.Second), c.MaxAge)

	for i := range 10 {
		res := login(ts.browser(t), "203.0.113."+strconv.Itoa(i), adminEmail, "wrong guess "+strconv.Itoa(i))
		require.Equal(t, http.StatusUnauthorized, res.status, "guess %d", i)
	}
	require.Equal(t, http.StatusTooManyRequests, login(ts.browser(t), "198.51.100.1", adminEmail, adminPassword).status,
		"a browser never signed in waits with the guesses")

	second := login(owner, "192.0.2.1", strings.ToUpper(adminEmail), adminPassword)
	require.Equal(t, http.StatusOK, second.status, "the owner's browser signs in: %s", second.body)
	assert.NotEqual(t, c.Value, deviceCookie(t, second).Value, "a new device cookie at each sign-in")

	// The first cookie, replayed from another browser, is no device now.
	thief := ts.browser(t)
	u, _ := url.Parse(ts.URL + "/api/v1/auth/login")
	thief.client.Jar.SetCookies(u, []*http.Cookie{{Name: auth.DeviceCookie, Value: c.Value, Path: c.Path}})
	assert.Equal(t, http.StatusTooManyRequests, login(thief, "198.51.100.2", adminEmail, adminPassword).status)

	// The device's own wrong guesses empty its own bucket, not the
	// account's (already empty) one, and then wait like any.
	for i := range 10 {
		// From addresses of their own: each address has its own limit.
		res := login(owner, "192.0.2."+strconv.Itoa(10+i), adminEmail, "owner typo "+strconv.Itoa(i))
		require.Equal(t, http.StatusUnauthorized, res.status, "typo %d", i)
	}
	assert.Equal(t, http.StatusTooManyRequests, login(owner, "192.0.2.30", adminEmail, adminPassword).status)
	ts.clock.Advance(31 * time.Second)
	assert.Equal(t, http.StatusOK, login(owner, "192.0.2.31", adminEmail, adminPassword).status)

	// A device unused for its lifetime is forgotten.
	ts.clock.Advance(auth.DeviceLifetime + time.Minute)
	for i := range 10 {
		require.Equal(t, http.StatusUnauthorized, login(ts.browser(t), "203.0.113."+strconv.Itoa(i), adminEmail, "later guess").status)
	}
	assert.Equal(t, http.StatusTooManyRequests, login(owner, "192.0.2.32", adminEmail, adminPassword).status,
		"an expired device shares the account's bucket")
}
