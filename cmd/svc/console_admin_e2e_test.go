package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browsertest"
)

// The admin views of the console: API keys, settings, the organization,
// the audit trail, jobs and getting started.

// pageText is what the page shows, as a person reads it.
func pageText(b *browsertest.Browser) string {
	return browsertest.Run(b, chromedp.Evaluate[string](`document.body.innerText`))
}

// disabled reports whether the control selector finds is disabled.
func disabled(b *browsertest.Browser, selector string) bool {
	sel, _ := json.Marshal(selector)
	return browsertest.Run(b, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%s).disabled`, sel)))
}

// count is how many elements selector finds.
func count(b *browsertest.Browser, selector string) int {
	sel, _ := json.Marshal(selector)
	return browsertest.Run(b, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, sel)))
}

// waitFor waits until the script expr, evaluated in the page, is true.
func waitFor(b *browsertest.Browser, expr string) {
	browsertest.Run(b, chromedp.Poll[bool](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(browsertest.Timeout-time.Second)))
}

// keyByName finds a key in a GET /api/v1/keys answer.
func keyByName(t *testing.T, body map[string]any, name string) map[string]any {
	t.Helper()
	for _, k := range body["keys"].([]any) {
		if key := k.(map[string]any); key["name"] == name {
			return key
		}
	}
	t.Fatalf("no key %q in %v", name, body)
	return nil
}

// createKeyInBrowser creates a key on the keys view and returns the token
// the page shows.
func createKeyInBrowser(t *testing.T, b *browsertest.Browser, name, mode, app string, admin bool) string {
	t.Helper()
	b.Fill("#key-name", name)
	b.Choose("#key-mode", map[string]string{
		"optimize": "optimize: caches, artifacts and policies apply",
		"observe":  "observe: record what svc would do, never block or serve from a cache",
	}[mode])
	b.Fill("#key-app", app)
	if admin {
		b.Click("#key-admin")
	}
	b.Click("#create-key-submit")
	b.WaitText("#status", "Key “"+name+"” created")
	b.WaitText("#new-key-title", name)
	token := b.Value("#new-key-token")
	require.True(t, strings.HasPrefix(token, "svc_"), token)
	b.WaitText("#copy-token", "Copy token")
	return token
}

// In open dev mode the console acts as the admin of the default
// organization: keys are created (the token shown once) and revoked,
// settings saved and refused in the API's words, the audit trail filtered,
// jobs listed by state, and the demo loaded leads to its runs, its cache
// hit, its pattern and, after a learning pass, a candidate artifact.
func TestBrowserConsoleAdminInOpenDevMode(t *testing.T) {
	t.Parallel()
	// A webhook receiver that is down: its deliveries fail and are retried.
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "receiver is down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(receiver.Close)
	hook, err := url.Parse(receiver.URL)
	require.NoError(t, err)
	p := start(t, "SVC_LEARNING_INTERVAL=1s", "SVC_WEB_ALLOW_PRIVATE="+hook.Host)
	b := browsertest.Start(t)

	// Keys.
	visit(b, p, "keys", "API keys")
	b.WaitText("#key-list", "No keys yet")
	b.Click("#create-key-submit")
	b.WaitText("#key-name-problem", "name is required")
	token := createKeyInBrowser(t, b, "deploy bot", "observe", "billing", true)
	status, out := p.call(t, "GET", "/api/v1/keys", token, "")
	require.Equal(t, http.StatusOK, status, "the token the page showed is a working admin key: %v", out)
	key := keyByName(t, out, "deploy bot")
	assert.Equal(t, "observe", key["mode"])
	assert.Equal(t, "billing", key["appId"])
	assert.Equal(t, true, key["admin"])
	b.WaitText(`#key-list tr[data-key="`+key["id"].(string)+`"]`, "billing")
	b.Click("#copy-token")
	// Copied, or (where the clipboard is refused) selected for copying by hand.
	waitFor(b, `['Copied', 'Selected: press Ctrl+C'].includes(document.querySelector('#copy-token').textContent)`)
	// A failed creation does not leave the last key's success in the status line.
	b.Click("#create-key-submit")
	b.WaitText("#key-name-problem", "name is required")
	assert.NotContains(t, browsertest.Run(b, chromedp.Evaluate[string](`document.querySelector('#status').textContent`)), "created")
	shoot(t, b, "keys")

	// The token lives only in the page that created the key.
	b.Navigate(p.pageURL("/"))
	visit(b, p, "keys", "API keys")
	b.WaitText("#key-list", "deploy bot")
	assert.True(t, b.Hidden("#new-key-token"), "a reload does not show the token again")
	assert.NotContains(t, pageText(b), token)

	// Revoking asks first.
	id := key["id"].(string)
	b.Click(`[data-revoke="` + id + `"]`)
	b.WaitText(`tr[data-key="`+id+`"] .confirm-text`, "Revoke “deploy bot”?")
	b.Click(`[data-confirm-revoke="` + id + `"]`)
	b.WaitText("#status", "Key “deploy bot” revoked.")
	b.WaitText(`tr[data-key="`+id+`"]`, "revoked")
	status, _ = p.call(t, "GET", "/api/v1/keys", token, "")
	assert.Equal(t, http.StatusUnauthorized, status, "the revoked key is refused")
	keys := b.Fetch("GET", "/api/v1/keys")
	assert.NotNil(t, keyByName(t, keys.Body, "deploy bot")["revokedAt"])

	// Settings: the API's refusal under the field, then a good value.
	visit(b, p, "settings", "Settings")
	b.Fill("#setting-retention_days", "-3")
	b.Click("#setting-retention_days-save")
	b.WaitText("#setting-retention_days-problem", "retention_days: must be a positive number no larger than 1000000")
	b.Fill("#setting-approval_pending_limit", "2.5")
	b.Click("#setting-approval_pending_limit-save")
	b.WaitText("#setting-approval_pending_limit-problem", "must be a whole number from 1 to 10000")
	b.Fill("#setting-webhook_url", "http://10.1.2.3/hook")
	b.Click("#setting-webhook_url-save")
	b.WaitText("#setting-webhook_url-problem", "webhook_url: must point to a public address")
	b.Fill("#setting-webhook_url", receiver.URL+"/hook")
	b.Click("#setting-webhook_url-save")
	b.WaitText("#status", "Webhook URL saved.")
	b.Fill("#setting-retention_days", "45")
	b.Click("#setting-retention_days-save")
	b.WaitText("#status", "Retention saved.")
	b.Click("#setting-redaction")
	b.Click("#setting-redaction-save")
	b.WaitText("#status", "Redaction saved.")
	const secret = "whisper-0123456789"
	b.Fill("#setting-retention_days", "77") // an edit not saved yet
	b.Fill("#setting-webhook_secret", secret)
	b.Click("#setting-webhook_secret-save")
	b.WaitText("#setting-webhook_secret-value", "[set]")
	assert.Equal(t, "77", b.Value("#setting-retention_days"), "saving one setting keeps unsaved edits in the others")
	// An empty save is refused in the page; only Clear secret clears it.
	b.Click("#setting-webhook_secret-save")
	b.WaitText("#setting-webhook_secret-problem", "Type a secret, or use Clear secret")
	assert.Equal(t, "[set]", b.Fetch("GET", "/api/v1/settings").Body["settings"].(map[string]any)["webhook_secret"], "an empty save keeps the secret")
	b.WaitText("#setting-webhook_secret-value", "[set]")
	settings := b.Fetch("GET", "/api/v1/settings").Body["settings"].(map[string]any)
	assert.InDelta(t, 45, settings["retention_days"], 0)
	assert.Equal(t, true, settings["redaction"])
	assert.Equal(t, receiver.URL+"/hook", settings["webhook_url"])
	assert.Equal(t, "[set]", settings["webhook_secret"])
	assert.Empty(t, b.Value("#setting-webhook_secret"), "the secret is never written back into the page")
	assert.NotContains(t, pageText(b), secret)
	shoot(t, b, "settings")
	b.Click("#setting-webhook_secret-clear")
	b.WaitText("#setting-webhook_secret-value", "not set")
	assert.Nil(t, b.Fetch("GET", "/api/v1/settings").Body["settings"].(map[string]any)["webhook_secret"])

	// Getting started: the demo's requests go through the gateway, and the
	// page walks to what they left; then a learning pass.
	visit(b, p, "start", "Get started")
	b.WaitText("#onboarding-state", "no runs yet")
	b.Click("#seed-demo")
	b.WaitText("#status", "sample requests went through the gateway")
	b.WaitText("#onboarding-state", "1 workflow and 1 agent, and has recorded runs")
	b.WaitText("#demo-runs", "gpt")
	links := browsertest.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#demo-runs a')].map((a) => a.getAttribute('href'))`))
	require.NotEmpty(t, links)
	assert.LessOrEqual(t, len(links), 5)
	for _, l := range links {
		require.True(t, strings.HasPrefix(l, "#/runs/run_"), l)
		assert.Equal(t, http.StatusOK, b.Fetch("GET", "/api/v1/runs/"+strings.TrimPrefix(l, "#/runs/")).Status, "the walk-through links runs that exist: %s", l)
	}
	b.WaitText("#demo-cache-hit", "exact_cache")
	hit := strings.TrimPrefix(browsertest.Run(b, chromedp.Evaluate[string](`document.querySelector('#demo-cache-hit').getAttribute('href')`)), "#/runs/")
	assert.Equal(t, "exact_cache", b.Fetch("GET", "/api/v1/runs/"+hit).Body["run"].(map[string]any)["route"])
	b.WaitText("#demo-verdict", "gpt")
	b.Click("#run-learning")
	b.WaitText("#status", "The learning pass looked at")
	b.WaitText("#demo-artifact", "The candidate artifact")
	b.WaitText("#demo-pattern", "Pattern")
	artifactID := strings.TrimPrefix(browsertest.Run(b, chromedp.Evaluate[string](`document.querySelector('#demo-artifact').getAttribute('href')`)), "#/artifacts/")
	artifact := b.Fetch("GET", "/api/v1/artifacts/"+artifactID)
	require.Equal(t, http.StatusOK, artifact.Status, artifact.Body)
	assert.Equal(t, "shadow", artifact.Body["artifact"].(map[string]any)["state"], "a candidate: learnt, not yet serving")
	b.WaitText("#demo-artifact", artifactID)
	// Loading it again adds no second workflow or agent.
	b.Click("#seed-demo")
	b.WaitText("#status", "sample requests went through the gateway")
	b.WaitText("#onboarding-state", "1 workflow and 1 agent")
	shoot(t, b, "start")
	b.Click("#demo-artifact")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, "#/artifacts/"+artifactID) })
	visit(b, p, "start", "Get started")
	b.Click("#dismiss-onboarding")
	b.WaitText("#status", "Onboarding dismissed.")
	assert.True(t, b.Hidden("#onboarding"))
	b.WaitText("#onboarding-dismissed", "You dismissed this guide")

	// Audit: filtered by action, in the address.
	visit(b, p, "audit", "Audit")
	b.WaitText("#audit-events", "key.create")
	b.Fill("#audit-action", "key.revoke")
	b.Click("#audit-apply")
	b.WaitURL(func(u string) bool { return strings.Contains(u, "#/audit?action=key.revoke") })
	b.WaitText("#audit-events", "key.revoke")
	b.WaitGone(`#audit-events tr[data-action="key.create"]`)
	assert.Equal(t, 1, count(b, `#audit-events tbody tr`))
	b.Choose("#audit-decision", "deny")
	b.Click("#audit-apply")
	b.WaitText("#audit-events", "No events match these filters.")
	visit(b, p, "audit?decision=allow", "Audit")
	b.WaitText(`#audit-events tr[data-action="settings.update"]`, "allow")
	shoot(t, b, "audit")

	// Paged: fifty events at a time, older ones on request, none twice.
	for i := range 60 {
		status, out := p.call(t, "PUT", "/api/v1/settings", "", fmt.Sprintf(`{"key":"approval_pending_limit","value":%d}`, i+1))
		require.Equal(t, http.StatusOK, status, out)
	}
	updates := b.Fetch("GET", "/api/v1/audit?action=settings.update&limit=1000")
	require.Equal(t, http.StatusOK, updates.Status)
	total := len(updates.Body["events"].([]any))
	require.Greater(t, total, 60)
	visit(b, p, "audit?action=settings.update", "Audit")
	b.WaitText("#audit-more", "Older events")
	assert.Equal(t, 50, count(b, "#audit-events tbody tr"))
	b.Click("#audit-more")
	b.WaitText("#audit-events + .toolbar", "That is the whole trail for these filters.")
	assert.Equal(t, total, count(b, "#audit-events tbody tr"), "every event, once")
	shown := browsertest.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#audit-events tbody tr')].map((tr) => tr.dataset.event)`))
	want := make([]string, total)
	for i, e := range updates.Body["events"].([]any) {
		want[i] = e.(map[string]any)["id"].(string)
	}
	assert.Equal(t, want, shown, "newest first, as the API lists them")
	waitFor(b, `document.activeElement && document.activeElement.dataset.event === '`+want[50]+`'`) // the first older event takes focus

	// Jobs, by state: the learning timer queues a pass every second, and
	// the new artifact's webhook fails at the receiver and waits for its
	// retry, its error shown.
	visit(b, p, "jobs", "Jobs")
	b.WaitText("#job-list", "learning.pass")
	b.WaitText("#job-list", "webhook.deliver")
	b.WaitText("#job-list .job-error", "503")
	b.WaitText("#job-list .job-error", "receiver is down for maintenance")
	b.Click(`#job-states a[data-status="succeeded"]`)
	b.WaitText(`#job-states a[aria-current="page"]`, "Succeeded")
	b.WaitText("#job-list", "succeeded")
	b.Click(`#job-states a[data-status="failed"]`)
	b.WaitText("#job-list", "No failed jobs.")
	visit(b, p, "jobs", "Jobs")
	b.WaitText("#job-list", "learning.pass")
	shoot(t, b, "jobs")
	assertNoPageErrors(t, b)
}

// addMember invites email into the caller's active org with role and
// accepts as a new person, returning the new person's user id.
func addMember(t *testing.T, owner *person, email, name, password, role string) string {
	t.Helper()
	status, out := owner.call(t, "POST", "/api/v1/orgs/active/invites", map[string]string{"email": email, "role": role})
	require.Equal(t, http.StatusCreated, status, out)
	u, err := url.Parse(out["acceptUrl"].(string))
	require.NoError(t, err)
	status, out = newPerson(t, owner.p).call(t, "POST", "/api/v1/invites/"+u.Query().Get("token")+"/accept",
		map[string]string{"name": name, "password": password})
	require.Equal(t, http.StatusOK, status, out)
	return out["user"].(map[string]any)["id"].(string)
}

// members maps the active org's members' emails to their roles.
func members(t *testing.T, c *person) map[string]string {
	t.Helper()
	status, out := c.call(t, "GET", "/api/v1/orgs/active", nil)
	require.Equal(t, http.StatusOK, status, out)
	roles := map[string]string{}
	for _, m := range out["members"].([]any) {
		member := m.(map[string]any)
		roles[member["email"].(string)] = member["role"].(string)
	}
	return roles
}

// resend asks for the verification email again from the banner and waits
// for the page to say want.
func resend(b *browsertest.Browser, want string) {
	b.Click("#resend-verification")
	b.WaitText("#status", want)
}

func signOut(b *browsertest.Browser) {
	b.Click("#sign-out")
	b.WaitText("#sign-in-title", "Sign in")
}

// In account mode with an owner, an admin and a member, and a second org
// whose data never shows: a member sees no admin action; the owner changes
// a member's role, removes a member, invites and revokes, creates and
// deletes an org after typing its name, and cannot leave as the last
// owner; the admin leaves; an unverified person asks for the link again.
func TestBrowserConsoleAdminAccountMode(t *testing.T) {
	t.Parallel()
	p := startAccounts(t, "SVC_ALLOW_PUBLIC_SIGNUP=true")
	owner := newPerson(t, p)
	owner.login(t, adminEmail, adminPassword)
	const (
		adaEmail, adaPassword = "ada.admin@example.com", "ada-password-1"
		melEmail, melPassword = "mel.member@example.com", "mel-password-1"
		rexEmail              = "rex.removed@example.com"
	)
	addMember(t, owner, adaEmail, "Ada Admin", adaPassword, "admin")
	addMember(t, owner, melEmail, "Mel Member", melPassword, "member")
	addMember(t, owner, rexEmail, "Rex Removed", "rex-password-1", "member")
	status, out := owner.call(t, "POST", "/api/v1/keys", map[string]any{"name": "default-org-key", "mode": "optimize"})
	require.Equal(t, http.StatusCreated, status, out)

	// Another org, with data of its own, that nobody here but the owner belongs to.
	other := newPerson(t, p)
	other.login(t, adminEmail, adminPassword)
	status, out = other.call(t, "POST", "/api/v1/orgs", map[string]string{"name": "Other Org"})
	require.Equal(t, http.StatusCreated, status, out)
	status, out = other.call(t, "POST", "/api/v1/keys", map[string]any{"name": "other-org-secret-key", "mode": "observe"})
	require.Equal(t, http.StatusCreated, status, out)
	status, out = other.call(t, "PUT", "/api/v1/settings", map[string]any{"key": "retention_days", "value": 7})
	require.Equal(t, http.StatusOK, status, out)
	addMember(t, other, "olly.other@example.com", "Olly Other", "olly-password-1", "member")

	b := browsertest.Start(t)

	// The member reads and sees no admin action.
	signIn(b, p, melEmail, melPassword)
	visit(b, p, "keys", "API keys")
	b.WaitText("#keys-members", "Only the organization’s owners and admins manage API keys")
	assert.True(t, b.Hidden("#create-key"))
	visit(b, p, "settings", "Settings")
	b.WaitText("#setting-retention_days-value", "30 days")
	assert.Zero(t, count(b, "#settings form, #settings input, #settings button"), "a member gets no settings form")
	visit(b, p, "org", "Organization")
	b.WaitText("#org-list li[aria-current]", "Default")
	b.WaitText("#members", "Ada Admin")
	b.WaitText("#leave-org", "Leave this organization")
	assert.Equal(t, []string{"create-org-submit", "leave-org"},
		browsertest.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#view button')].map((el) => el.id)`)),
		"a member may create an org of their own and leave this one, nothing more")
	assert.Zero(t, count(b, "#view form:not(#create-org), #view select"), "a member gets no admin form or role menu")
	visit(b, p, "start", "Get started")
	b.WaitText("#onboarding-state", "This organization has")
	assert.True(t, b.Hidden("#seed-demo"), "loading the demo is for owners and admins")
	visit(b, p, "audit", "Audit")
	b.WaitText(`#audit-events tr[data-action="key.create"]`, "admin (admin@example.com)")
	assert.NotContains(t, pageText(b), "other-org-secret-key", "another org's audit trail never shows")
	visit(b, p, "jobs", "Jobs")
	b.WaitText("#jobs-updated", "Updated")
	assert.Equal(t, 1, count(b, "#job-list table, #job-list p.empty"), "the jobs list, or the sentence that there are none")
	assert.NotContains(t, pageText(b), "Olly Other")
	signOut(b)

	// The owner.
	signIn(b, p, adminEmail, adminPassword)
	visit(b, p, "keys", "API keys")
	b.WaitText("#key-list", "default-org-key")
	assert.NotContains(t, pageText(b), "other-org-secret-key", "another org's keys never show")
	visit(b, p, "settings", "Settings")
	assert.Equal(t, "30", b.Value("#setting-retention_days"), "the active org's settings, not the other org's")

	visit(b, p, "org", "Organization")
	b.WaitText("#org-list li[aria-current]", "Default")
	b.WaitText("#org-list", "Other Org")
	b.WaitText("#members", "Rex Removed")
	assert.NotContains(t, pageText(b), "olly.other@example.com", "another org's members never show")
	for _, sel := range []string{"#rename-org", "#invite-form", `[data-change-role="` + melEmail + `"]`, `[data-remove="` + melEmail + `"]`} {
		assert.False(t, b.Hidden(sel), "the owner sees %s", sel)
	}
	assert.Equal(t, []string{"owner", "admin", "member"},
		browsertest.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('select[data-role-of="`+melEmail+`"] option')].map((o) => o.value)`)),
		"an owner may grant the owner role")
	assert.Equal(t, "Change the role of Mel Member",
		browsertest.Run(b, chromedp.Evaluate[string](`document.querySelector('[data-change-role="`+melEmail+`"]').getAttribute('aria-label')`)))
	// The only owner may neither leave nor demote themselves.
	b.WaitText("#leave-blocked", "You are the only owner")
	assert.True(t, b.Hidden("#leave-org"))
	assert.True(t, b.Hidden(`[data-change-role="`+adminEmail+`"]`))
	assert.True(t, b.Hidden(`[data-remove="`+adminEmail+`"]`))
	b.WaitText("#delete-default", "cannot be deleted")
	assert.True(t, b.Hidden("#delete-org"), "the default organization is not offered for deletion")

	// A member becomes an admin.
	b.Choose(`select[data-role-of="`+melEmail+`"]`, "admin")
	b.Click(`[data-change-role="` + melEmail + `"]`)
	b.WaitText("#status", "Mel Member is now admin.")
	assert.Equal(t, "admin", members(t, owner)[melEmail])
	b.WaitText(`tr[data-member="`+melEmail+`"]`, "admin")
	waitFor(b, `document.activeElement && document.activeElement.dataset.member === '`+melEmail+`'`) // their row, not the heading

	// A member is removed, after a second question.
	b.Click(`[data-remove="` + rexEmail + `"]`)
	b.WaitText(`tr[data-member="`+rexEmail+`"] .confirm-text`, "Remove Rex Removed?")
	b.Click(`[data-confirm-remove="` + rexEmail + `"]`)
	b.WaitText("#status", "Rex Removed is removed from the organization.")
	b.WaitGone(`tr[data-member="` + rexEmail + `"]`)
	assert.NotContains(t, members(t, owner), rexEmail)

	// An invitation shows its link and is revoked.
	b.Fill("#invite-email", "ivy.invited@example.com")
	b.Click("#invite-submit")
	b.WaitText("#status", "Invited ivy.invited@example.com as member.")
	assert.Contains(t, b.Value("#invite-link"), "/accept-invite?token=")
	b.Click(`[data-revoke-invite="ivy.invited@example.com"]`)
	b.WaitText("#status", "The invitation of ivy.invited@example.com is revoked.")
	b.WaitText("#invite-list", "revoked")
	shoot(t, b, "org")

	// A new org, deleted once its name is typed.
	b.Fill("#new-org-name", "Side Project")
	b.Click("#create-org-submit")
	b.WaitText("#org-list li[aria-current]", "Side Project")
	b.WaitText("#status", "Side Project is created")
	// The view draws itself again for the new org: wait for its deletion form.
	b.WaitGone("#view[aria-busy]")
	b.WaitText("#delete-org", "Delete this organization")
	assert.True(t, disabled(b, "#delete-org"), "nothing typed yet")
	b.Fill("#delete-confirm", "Side Projec")
	assert.True(t, disabled(b, "#delete-org"), "the name does not match")
	b.Fill("#delete-confirm", "Side Project")
	assert.False(t, disabled(b, "#delete-org"))
	b.Click("#delete-org")
	b.WaitText("#status", "Side Project and all its data are deleted.")
	b.WaitText("#org-list li[aria-current]", "Default")
	b.WaitText("#members", "Ada Admin") // Default's members, not the deleted org's
	b.WaitText("#members", "Mel Member")
	status, out = owner.call(t, "GET", "/api/v1/orgs", nil)
	require.Equal(t, http.StatusOK, status, out)
	for _, o := range out["orgs"].([]any) {
		assert.NotEqual(t, "Side Project", o.(map[string]any)["name"])
	}

	// The audit trail names the people who acted, and filters by one of them.
	b.Choose("#org-select", "Default")
	b.Click("#switch-submit")
	b.WaitText("#status", "Switched to Default")
	visit(b, p, "audit", "Audit")
	b.WaitText(`#audit-events tr[data-action="key.create"]`, "admin (admin@example.com)")
	assert.NotContains(t, pageText(b), "other-org-secret-key", "another org's audit trail never shows")
	b.Click(`#audit-events tr[data-action="key.create"] a.actor`)
	b.WaitURL(func(u string) bool { return strings.Contains(u, "#/audit?actor=user%3A") })
	b.WaitText("#audit-events", "key.create")
	assert.True(t, strings.HasPrefix(b.Value("#audit-actor"), "user:"), "the filter shows the actor")
	assert.Zero(t, count(b, `#audit-events tr[data-action="invite.accepted"]`), "the new members' own acceptances are theirs, not the owner's")
	// Signing out leaves nothing of the owner's page behind, and says so.
	visit(b, p, "keys", "API keys")
	createKeyInBrowser(t, b, "laptop", "optimize", "", false)
	signOut(b)
	b.WaitText("#status", "You are signed out.")
	assert.Zero(t, count(b, "#new-key-token"), "the key's token does not stay in the hidden page")
	assert.Zero(t, count(b, "#view *"))

	// The admin sees the admin actions, then leaves.
	signIn(b, p, adaEmail, adaPassword)
	visit(b, p, "org", "Organization")
	b.WaitText("#org-list li[aria-current]", "Default")
	assert.False(t, b.Hidden("#invite-form"), "an admin invites")
	assert.True(t, b.Hidden("#delete-org"), "only an owner deletes the org")
	assert.True(t, b.Hidden(`[data-change-role="`+adminEmail+`"]`), "an admin does not change an owner's role")
	assert.True(t, b.Hidden(`[data-remove="`+adminEmail+`"]`), "an admin does not remove an owner")
	b.WaitText(`[data-change-role="`+melEmail+`"]`, "Change role")
	assert.Equal(t, 2, count(b, `select[data-role-of="`+melEmail+`"] option`), "an admin grants admin or member, not owner")
	// Demoting oneself asks first and says what is lost.
	b.Choose(`select[data-role-of="`+adaEmail+`"]`, "member")
	b.Click(`[data-change-role="` + adaEmail + `"]`)
	b.WaitText(`tr[data-member="`+adaEmail+`"] .confirm-text`, "Make yourself a member? You lose changing keys, settings, members and invitations")
	assert.Equal(t, "admin", members(t, owner)[adaEmail], "nothing changed before the second click")
	b.Click(`[data-confirm-role="` + adaEmail + `"]`)
	b.WaitText("#status", "You are now member.")
	assert.Equal(t, "member", members(t, owner)[adaEmail])
	b.WaitGone("#invite-form")
	waitFor(b, `document.activeElement && document.activeElement.dataset.member === '`+adaEmail+`'`)
	b.Click("#leave-org")
	b.Click("#leave-confirm")
	b.WaitText("#sign-in-title", "Sign in") // Ada had no other org: her session ended
	assert.NotContains(t, members(t, owner), adaEmail)

	// A person whose address is unverified asks for the link again.
	const samEmail = "sam@acme-widgets.example"
	status, out = newPerson(t, p).call(t, "POST", "/api/v1/auth/signup",
		map[string]string{"email": samEmail, "name": "Sam Signup", "password": "sam-password-1"})
	require.Equal(t, http.StatusCreated, status, out)
	p.waitEmail(t, samEmail, "verify", "/verify-email")
	signIn(b, p, samEmail, "sam-password-1")
	b.WaitText("#verify-banner", "Please verify your email address")
	resend(b, "We sent the link again.")
	assert.True(t, disabled(b, "#resend-verification"), "one click sends one mail")
	link := p.waitEmail(t, samEmail, "verify", "/verify-email")
	// Verified elsewhere meanwhile, the banner goes at the next try (the
	// test turns the button on again to make that try).
	u, err := url.Parse(link)
	require.NoError(t, err)
	status, out = newPerson(t, p).call(t, "GET", "/api/v1/auth/verify/"+u.Query().Get("token"), nil)
	require.Equal(t, http.StatusOK, status, out)
	browsertest.Run(b, chromedp.Evaluate[bool](`document.querySelector('#resend-verification').disabled = false`))
	resend(b, "already verified")
	assert.True(t, b.Hidden("#verify-banner"))
	assertNoPageErrors(t, b)
}
