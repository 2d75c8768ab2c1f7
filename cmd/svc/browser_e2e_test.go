package main_test

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browsertest"
)

// The browser tests run the real svc process and drive its pages in a
// headless Chromium, as a person would: they type into the forms, press the
// buttons and read what the page shows.

const (
	adminEmail    = "admin@example.com"
	adminPassword = "admin-password-1"
)

// startAccounts runs svc in account mode: a bootstrap admin exists, so the
// API wants a session.
func startAccounts(t *testing.T, env ...string) *proc {
	return start(t, append([]string{
		"SVC_ADMIN_EMAIL=" + adminEmail, "SVC_ADMIN_PASSWORD=" + adminPassword,
		"SVC_APP_BASE_URL=http://svc.example.test",
	}, env...)...)
}

// person is an API client with its own cookie jar.
type person struct {
	p      *proc
	client *http.Client
}

func newPerson(t *testing.T, p *proc) *person {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &person{p: p, client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (c *person) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req, err := http.NewRequest(method, "http://"+c.p.addr+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

func (c *person) login(t *testing.T, email, password string) {
	t.Helper()
	status, out := c.call(t, "POST", "/api/v1/auth/login", map[string]string{"email": email, "password": password})
	require.Equal(t, http.StatusOK, status, out)
}

// invite creates an invitation in the caller's active org and returns the
// path and query of its accept link, and its raw token.
func (c *person) invite(t *testing.T, email string) (string, string) {
	t.Helper()
	status, out := c.call(t, "POST", "/api/v1/orgs/active/invites", map[string]string{"email": email, "role": "member"})
	require.Equal(t, http.StatusCreated, status, out)
	assert.Equal(t, "pending", out["invite"].(map[string]any)["status"])
	u, err := url.Parse(out["acceptUrl"].(string))
	require.NoError(t, err)
	require.Equal(t, "/accept-invite", u.Path)
	raw := u.Query().Get("token")
	require.NotEmpty(t, raw)
	return u.RequestURI(), raw
}

// pageURL is the address of path on the test's svc.
func (p *proc) pageURL(path string) string { return "http://" + p.addr + path }

// waitEmail waits for the console transport's log line of a message to to
// whose subject contains subject, and returns the first link in it to path.
func (p *proc) waitEmail(t *testing.T, to, subject, path string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-p.logs:
			require.True(t, ok, "svc exited")
			if line["@message"] != "email" || line["to"] != to {
				continue
			}
			if s, _ := line["subject"].(string); !strings.Contains(strings.ToLower(s), strings.ToLower(subject)) {
				continue
			}
			text, _ := line["text"].(string)
			link := regexp.MustCompile(`https?://[^\s"<>]+` + regexp.QuoteMeta(path) + `\?token=[A-Za-z0-9_\-.~%]+`).FindString(text)
			require.NotEmpty(t, link, "no %s link in the email:\n%s", path, text)
			u, err := url.Parse(link)
			require.NoError(t, err)
			return u.RequestURI()
		case <-timeout:
			t.Fatalf("no email to %s about %q", to, subject)
		}
	}
}

// assertTokenNotInRequestLog checks that no request log line holds raw: the
// pages and the API log paths without one-time tokens.
func (p *proc) assertTokenNotInRequestLog(t *testing.T, raw string) {
	t.Helper()
	requests := 0
	for _, l := range p.stderrLines() {
		var line map[string]any
		if json.Unmarshal([]byte(l), &line) != nil || line["@message"] != "request" {
			continue
		}
		requests++
		assert.NotContains(t, l, raw, "a request log line holds a one-time token")
	}
	assert.Positive(t, requests, "svc logged its requests")
}

func assertNoPageErrors(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	assert.Empty(t, b.Errors(), "the pages ran without script errors or refused resources")
}

func TestBrowserAcceptInviteShowsAnInvalidLink(t *testing.T) {
	t.Parallel()
	p := startAccounts(t)
	b := browsertest.Start(t)

	b.Navigate(p.pageURL("/accept-invite?token=nope"))
	b.WaitText("#problem-title", "This invitation is not valid")
	b.WaitText("#problem-detail", "Ask the person who invited you")
	assert.Equal(t, "Accept an invitation · svc", b.Title())

	b.Navigate(p.pageURL("/accept-invite"))
	b.WaitText("#problem-title", "This invitation is not valid")
	assertNoPageErrors(t, b)
}

// A new person opens the accept link, creates their account on the page and
// lands in the console signed in, in the inviting org.
func TestBrowserAcceptInviteAsANewUser(t *testing.T) {
	t.Parallel()
	p := startAccounts(t)
	admin := newPerson(t, p)
	admin.login(t, adminEmail, adminPassword)
	const email = "nora.new@example.com"
	link, raw := admin.invite(t, email)

	b := browsertest.Start(t)
	b.Navigate(p.pageURL(link))
	b.WaitText("#new-user-title", "Create your account")
	b.WaitText("#invite-summary", "invited "+email+" to join as a member")
	assert.Equal(t, email, b.Value("#new-email"), "the address is the invite's")

	// The page checks the passwords before it sends anything.
	b.Fill("#new-name", "Nora New")
	b.Fill("#new-password", "short")
	b.Fill("#new-confirm", "short")
	b.Click("#new-user-submit")
	b.WaitText("#status", "at least 8 characters")
	b.Fill("#new-password", "nora-password-1")
	b.Fill("#new-confirm", "nora-password-2")
	b.Click("#new-user-submit")
	b.WaitText("#status", "do not match")

	b.Fill("#new-confirm", "nora-password-1")
	b.Click("#new-user-submit")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, p.addr+"/") })
	b.WaitText("#whoami", "Signed in as Nora New ("+email+")")
	visit(b, p, "org", "Organization")
	b.WaitText("#org-list", "Default")
	orgs := b.Fetch("GET", "/api/v1/orgs")
	require.Equal(t, http.StatusOK, orgs.Status, orgs.Body)
	created := orgs.Body["orgs"].([]any)[0].(map[string]any)["createdAt"].(string)
	b.WaitText("#org-list time", "since "+created[:10])

	me := b.Fetch("GET", "/api/v1/auth/me")
	require.Equal(t, http.StatusOK, me.Status, me.Body)
	user := me.Body["user"].(map[string]any)
	assert.Equal(t, email, user["email"])
	assert.Equal(t, true, user["emailVerified"], "the link proved the address")
	assert.True(t, b.Hidden("#verify-banner"), "no verify-your-email banner for a verified address")

	// The same link again: used.
	b.Navigate(p.pageURL(link))
	b.WaitText("#problem-title", "already been used")

	// The new password works from another client too.
	newPerson(t, p).login(t, email, "nora-password-1")
	assertNoPageErrors(t, b)
	p.assertTokenNotInRequestLog(t, raw)
}

// An existing account holder, not signed in, signs in on the accept page
// and joins.
func TestBrowserAcceptInviteAsAnExistingUser(t *testing.T) {
	t.Parallel()
	p := startAccounts(t)
	admin := newPerson(t, p)
	admin.login(t, adminEmail, adminPassword)

	// Olga has an account in Default, through an invitation accepted over the API.
	const email = "olga.old@example.com"
	_, raw := admin.invite(t, email)
	status, out := newPerson(t, p).call(t, "POST", "/api/v1/invites/"+raw+"/accept",
		map[string]string{"name": "Olga Old", "password": "olga-password-1"})
	require.Equal(t, http.StatusOK, status, out)

	// The admin invites her into a second org.
	status, out = admin.call(t, "POST", "/api/v1/orgs", map[string]string{"name": "Second Org"})
	require.Equal(t, http.StatusCreated, status, out)
	link, _ := admin.invite(t, email)

	b := browsertest.Start(t)
	b.Navigate(p.pageURL(link))
	b.WaitText("#sign-in-title", "Sign in to accept")
	b.WaitText("#invite-summary", "Second Org invited "+email)
	assert.Equal(t, email, b.Value("#sign-in-email"))

	b.Fill("#sign-in-password", "wrong-password")
	b.Click("#sign-in-submit")
	b.WaitText("#status", "wrong")

	b.Fill("#sign-in-password", "olga-password-1")
	b.Click("#sign-in-submit")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, p.addr+"/") })
	b.WaitText("#whoami", "Signed in as Olga Old ("+email+")")
	visit(b, p, "org", "Organization")
	b.WaitText("#org-list", "Default")
	b.WaitText("#org-list li[aria-current]", "Second Org")

	// A member sees the new org's onboarding, without the demo button.
	visit(b, p, "start", "Get started")
	b.WaitText("#onboarding-state", "no runs yet")
	assert.True(t, b.Hidden("#seed-demo"), "loading the demo is for owners and admins")

	// She switches back to Default with the switcher.
	b.Choose("#org-select", "Default")
	b.Click("#switch-submit")
	b.WaitText("#status", "Switched to Default")
	visit(b, p, "org", "Organization")
	b.WaitText("#org-list li[aria-current]", "Default")
	me := b.Fetch("GET", "/api/v1/auth/me")
	require.Equal(t, http.StatusOK, me.Status, me.Body)
	orgs := b.Fetch("GET", "/api/v1/orgs")
	for _, o := range orgs.Body["orgs"].([]any) {
		org := o.(map[string]any)
		assert.Equal(t, org["name"] == "Default", org["active"], "%v", org)
		if org["name"] == "Default" {
			assert.Equal(t, org["tenantId"], me.Body["activeTenantId"])
		}
	}
	assertNoPageErrors(t, b)
}

// A person already signed in as the invitee joins with one button; one
// signed in as someone else is told so, signs out and signs in as the
// invitee on the same page.
func TestBrowserAcceptInviteWhenSignedIn(t *testing.T) {
	t.Parallel()
	p := startAccounts(t)
	admin := newPerson(t, p)
	admin.login(t, adminEmail, adminPassword)
	for _, u := range []struct{ email, name string }{{"olga.old@example.com", "Olga Old"}, {"nora.new@example.com", "Nora New"}} {
		_, raw := admin.invite(t, u.email)
		status, out := newPerson(t, p).call(t, "POST", "/api/v1/invites/"+raw+"/accept",
			map[string]string{"name": u.name, "password": u.name + " password"})
		require.Equal(t, http.StatusOK, status, out)
	}
	status, out := admin.call(t, "POST", "/api/v1/orgs", map[string]string{"name": "Second Org"})
	require.Equal(t, http.StatusCreated, status, out)
	olgaLink, _ := admin.invite(t, "olga.old@example.com")
	noraLink, _ := admin.invite(t, "nora.new@example.com")

	b := browsertest.Start(t)
	b.Navigate(p.pageURL("/"))
	b.Fill("#login-email", "olga.old@example.com")
	b.Fill("#login-password", "Olga Old password")
	b.Click("#login-submit")
	b.WaitText("#whoami", "Signed in as Olga Old")

	b.Navigate(p.pageURL(olgaLink))
	b.WaitText("#join-button", "Join Second Org")
	b.WaitText("#join-email", "olga.old@example.com")
	b.Click("#join-button")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, p.addr+"/") })
	visit(b, p, "org", "Organization")
	b.WaitText("#org-list li[aria-current]", "Second Org")

	b.Navigate(p.pageURL(noraLink))
	b.WaitText("#other-user-title", "signed in as someone else")
	b.WaitText("#other-user", "You are signed in as olga.old@example.com, but this invitation is for nora.new@example.com")
	b.Click("#sign-out")
	b.WaitText("#sign-in-title", "Sign in to accept")
	b.WaitText("#status", "Signed out")
	assert.Equal(t, "nora.new@example.com", b.Value("#sign-in-email"))
	b.Fill("#sign-in-password", "Nora New password")
	b.Click("#sign-in-submit")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, p.addr+"/") })
	b.WaitText("#whoami", "Signed in as Nora New (nora.new@example.com)")
	visit(b, p, "org", "Organization")
	b.WaitText("#org-list li[aria-current]", "Second Org")
	assertNoPageErrors(t, b)
}

// The admin loads the demo from the console's getting-started page and
// dismisses it.
func TestBrowserDashboardOnboarding(t *testing.T) {
	t.Parallel()
	p := startAccounts(t)
	b := browsertest.Start(t)
	b.Navigate(p.pageURL("/"))
	b.Fill("#login-email", adminEmail)
	b.Fill("#login-password", adminPassword)
	b.Click("#login-submit")
	b.WaitText("#whoami", "Signed in as")
	visit(b, p, "org", "Organization")
	b.WaitText("#org-list li[aria-current]", "Default")
	visit(b, p, "start", "Get started")
	b.WaitText("#onboarding-state", "This organization has")

	b.Click("#seed-demo")
	b.WaitText("#status", "The demo workflow and agent are loaded")
	b.WaitText("#onboarding-state", "1 workflow and 1 agent")
	onboarding := b.Fetch("GET", "/api/v1/orgs/active/onboarding")
	require.Equal(t, http.StatusOK, onboarding.Status, onboarding.Body)
	assert.InDelta(t, 1, onboarding.Body["workflowCount"], 0)
	assert.InDelta(t, 1, onboarding.Body["agentCount"], 0)

	b.Click("#dismiss-onboarding")
	b.WaitText("#status", "Onboarding dismissed")
	assert.True(t, b.Hidden("#onboarding"))
	assert.Equal(t, true, b.Fetch("GET", "/api/v1/orgs/active/onboarding").Body["dismissed"])
	assertNoPageErrors(t, b)
}

// A person who forgot their password asks for a link on the page, follows
// the link from the email, sets a new password and signs in with it.
func TestBrowserResetPassword(t *testing.T) {
	t.Parallel()
	p := startAccounts(t)
	b := browsertest.Start(t)

	b.Navigate(p.pageURL("/"))
	b.WaitText("#sign-in-title", "Sign in")
	b.Click("#forgot")
	b.WaitText("#request-title", "Get a reset link")
	b.Fill("#request-email", adminEmail)
	b.Click("#request-submit")
	b.WaitText("#requested", "If an account exists for "+adminEmail)

	link := p.waitEmail(t, adminEmail, "password", "/reset-password")
	b.Navigate(p.pageURL(link))
	b.WaitText("#choose-title", "Choose a new password")
	b.Fill("#choose-password", "brand-new-password")
	b.Fill("#choose-confirm", "brand-new-password")
	b.Click("#choose-submit")
	b.WaitText("#done-title", "Your password is changed")

	b.Click("#done-sign-in")
	b.WaitText("#sign-in-title", "Sign in")
	b.Fill("#login-email", adminEmail)
	b.Fill("#login-password", "brand-new-password")
	b.Click("#login-submit")
	b.WaitText("#whoami", "Signed in as")
	b.WaitText("#whoami", adminEmail)

	status, _ := newPerson(t, p).call(t, "POST", "/api/v1/auth/login", map[string]string{"email": adminEmail, "password": adminPassword})
	assert.Equal(t, http.StatusUnauthorized, status, "the old password is gone")

	// The link works once.
	b.Navigate(p.pageURL(link))
	b.Fill("#choose-password", "another-password-1")
	b.Fill("#choose-confirm", "another-password-1")
	b.Click("#choose-submit")
	b.WaitText("#status", "not valid")

	assertNoPageErrors(t, b)
	raw, _ := url.Parse(link)
	p.assertTokenNotInRequestLog(t, raw.Query().Get("token"))
}

// With public signup on, a visitor signs up on the dashboard, sees the
// verify-your-email banner, follows the emailed link and is verified.
func TestBrowserSignupAndVerifyEmail(t *testing.T) {
	t.Parallel()
	p := startAccounts(t, "SVC_ALLOW_PUBLIC_SIGNUP=true")
	b := browsertest.Start(t)
	const email = "sam@acme-widgets.example"

	b.Navigate(p.pageURL("/"))
	b.WaitText("#signup-title", "Create an account")
	b.Fill("#signup-name", "Sam Signup")
	b.Fill("#signup-email", email)
	b.Fill("#signup-password", "sam-password-1")
	b.Fill("#signup-confirm", "sam-password-1")
	b.Click("#signup-submit")
	b.WaitText("#whoami", "Signed in as Sam Signup ("+email+")")
	b.WaitText("#verify-banner", "Please verify your email address")

	link := p.waitEmail(t, email, "verify", "/verify-email")
	b.Navigate(p.pageURL(link))
	b.WaitText("#verified-title", "Your address is verified")
	b.WaitText("#verified-email", email)

	b.Navigate(p.pageURL("/"))
	b.WaitText("#whoami", "Signed in as Sam Signup")
	me := b.Fetch("GET", "/api/v1/auth/me")
	require.Equal(t, http.StatusOK, me.Status, me.Body)
	assert.Equal(t, true, me.Body["user"].(map[string]any)["emailVerified"])
	assert.True(t, b.Hidden("#verify-banner"), "the banner is gone once verified")

	// Signing out shows the sign-in form again.
	b.Click("#sign-out")
	b.WaitText("#sign-in-title", "Sign in")
	assert.Equal(t, http.StatusUnauthorized, b.Fetch("GET", "/api/v1/auth/me").Status)

	// The link works once.
	b.Navigate(p.pageURL(link))
	b.WaitText("#failed-title", "did not verify")
	assertNoPageErrors(t, b)
}
