package main_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browsertest"
)

// The governance views of the console: approvals, policies, learning,
// caches, agents and web, driven in headless Chromium against the real svc
// with data made through the API.

// govRules hold requests that speak of a wire transfer for a person and
// deny the support app the big model.
const govRules = `policies:
  - id: wire-transfers
    description: money moves only with a person's approval
    target: chat
    when: request.messages.exists(m, m.content.lowerAscii().contains("wire transfer"))
    effect: require_approval
    reason: moving money needs a person
  - id: no-big-models
    target: chat
    when: request.app == "support" && request.model == "gpt-4o"
    effect: deny
    reason: support uses gpt-4o-mini
`

// govPolicyDir writes govRules to a fresh folder and returns its file.
func govPolicyDir(t *testing.T) (dir, file string) {
	dir = t.TempDir()
	file = filepath.Join(dir, "chat.yaml")
	require.NoError(t, os.WriteFile(file, []byte(govRules), 0o600))
	return dir, file
}

// shop is a local web site whose product page can change between fetches.
type shop struct {
	*httptest.Server
	mu    sync.Mutex
	price string
}

func newShop(t *testing.T) *shop {
	s := &shop{price: "129.00"}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		price := s.price
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>Trail shop %s</title><header><nav><a href="/boots">Boots</a><a href="/tents">Tents</a></nav></header>
<main><h1>Trail boots</h1><p>Waterproof boots for long walks.</p><p>Price: $%s</p>
<form action="/cart" method="post"><label>Size <input name="size" required></label><button type="submit">Add to cart</button></form></main>`, r.URL.Path, price)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *shop) setPrice(p string) {
	s.mu.Lock()
	s.price = p
	s.mu.Unlock()
}

// held sends a request the wire-transfers rule holds and returns its
// approval's id.
func held(t *testing.T, p *proc, token, agent, text string) string {
	t.Helper()
	status, out, _ := gatewayChat(t, p, token, "payments", agent,
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`+text+`"}]}`)
	require.Equal(t, http.StatusForbidden, status, out)
	id, _ := out["verdict"].(map[string]any)["approvalId"].(string)
	require.NotEmpty(t, id, out)
	return id
}

// approvalStatus reads one approval from the list of the caller's tenant.
func approvalStatus(t *testing.T, b *browsertest.Browser, id string) map[string]any {
	t.Helper()
	res := b.Fetch("GET", "/api/v1/approvals?limit=500")
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	for _, a := range res.Body["approvals"].([]any) {
		if m := a.(map[string]any); m["id"] == id {
			return m
		}
	}
	t.Fatalf("no approval %s", id)
	return nil
}

// In open dev mode (the admin of the default tenant): a held request is
// approved and another denied, each with a reason; the rule that held them
// has its page; the policy files reload; a cache tier is emptied; an
// agent's decisions are listed; a page is fetched, changes, and is fetched
// again with its diff; a web session is closed.
func TestBrowserConsoleGovernanceDecisions(t *testing.T) {
	t.Parallel()
	dir, file := govPolicyDir(t)
	site := newShop(t)
	p := start(t, "SVC_POLICY_DIR="+dir, "SVC_WEB_ALLOW_PRIVATE="+strings.TrimPrefix(site.URL, "http://"))

	wire := held(t, p, "", "treasurer", "Please make a wire transfer of $9,000 to ACME Ltd.")
	other := held(t, p, "", "treasurer", "Another wire transfer of $50 to Bob.")
	status, out, deniedRun := gatewayChat(t, p, "", "support", "helper", `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`)
	require.Equal(t, http.StatusForbidden, status, out)
	faq := `{"model":"gpt-4o-mini","temperature":0,"messages":[{"role":"user","content":"What are your opening hours?"}]}`
	for range 2 {
		status, out, _ = gatewayChat(t, p, "", "faq", "helper", faq)
		require.Equal(t, http.StatusOK, status, out)
	}
	status, opened := p.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/session"}`)
	require.Equal(t, http.StatusCreated, status, opened)
	sessionID := opened["session"].(map[string]any)["id"].(string)

	b := browsertest.Start(t)

	// Approvals: the queue shows what each asked and the rule that held it.
	visit(b, p, "approvals", "Approvals")
	b.WaitText("#queue-title", "Pending: 2 requests")
	card := fmt.Sprintf(`article[data-id=%q]`, wire)
	b.WaitText(card, "wire transfer of $9,000 to ACME Ltd.")
	b.WaitText(card+" .held-by", "wire-transfers: moving money needs a person")
	b.WaitText(card, "agent treasurer")
	shoot(t, b, "approvals")

	// A decision needs a reason: the API says so, in its words.
	b.Click(card + " button.approve")
	b.WaitText(card+" .decision-problem", "reason must be text")
	assert.Equal(t, "pending", approvalStatus(t, b, wire)["status"])
	b.Fill(card+" textarea", "the customer confirmed by phone")
	b.Click(card + " button.approve")
	b.WaitText("#status", "Approved "+wire)
	b.WaitText("#queue-title", "Pending: 1 request")
	a := approvalStatus(t, b, wire)
	assert.Equal(t, "approved", a["status"])
	assert.Equal(t, "the customer confirmed by phone", a["reason"])
	require.NotNil(t, a["expiresAt"], "an approval grants an exception")

	otherCard := fmt.Sprintf(`article[data-id=%q]`, other)
	b.Fill(otherCard+" textarea", "Bob is not a customer")
	b.Click(otherCard + " button.deny")
	b.WaitText("#status", "Denied "+other)
	b.WaitText("#queue-title", "Pending: 0 requests")
	assert.Equal(t, "rejected", approvalStatus(t, b, other)["status"])

	// The approved tab shows the exception and when it ends.
	visit(b, p, "approvals?status=approved", "Approvals")
	b.WaitText(card+" .exception", "Exception in force")
	b.WaitText(card, "the customer confirmed by phone")
	visit(b, p, "approvals?status=rejected", "Approvals")
	b.WaitText(otherCard, "Bob is not a customer")

	// The rule that held it has its page, with its condition.
	b.Click(otherCard + " a.rule-link")
	b.WaitText("#view h1", "Rule wire-transfers")
	b.WaitGone("#view[aria-busy]")
	b.WaitText("#view pre.cel", `m.content.lowerAscii().contains("wire transfer")`)
	b.WaitText("#view", "moving money needs a person")
	b.WaitText(".verdicts", wire)
	shoot(t, b, "policy")

	// Policies: the rules by target; a reload with a broken file keeps the
	// last good set and says why.
	visit(b, p, "policies", "Policies")
	b.WaitText(`section[data-target="chat"]`, "wire-transfers")
	b.WaitText(`section[data-target="chat"]`, "no-big-models")
	require.NoError(t, os.WriteFile(file, []byte("policies:\n  - id: broken\n    target: chat\n    when: \"(\"\n    effect: deny\n"), 0o600))
	b.Click("button.reload")
	b.WaitText(".reload-result", `rule "broken"`)
	b.WaitText(".reload-failed", "last good set stays in force")
	b.WaitText(`section[data-target="chat"]`, "wire-transfers")
	require.NoError(t, os.WriteFile(file, []byte(govRules), 0o600))
	b.Click("button.reload")
	b.WaitText("#status", "Reloaded: 2 rules")
	b.WaitText(".reload-ok", "Loaded 2 rules")
	shoot(t, b, "policies")

	// Caches: the exact tier holds the answer that was served twice; an
	// admin empties it.
	visit(b, p, "caches", "Caches")
	b.WaitText(".cache-tiers tbody tr:first-child", "exact_response")
	b.WaitText(".cache-tiers tbody tr:first-child td:nth-child(3)", "1")
	shoot(t, b, "caches")
	b.Click(".cache-tiers tbody tr:first-child .confirm button")
	b.WaitText(".cache-tiers tbody tr:first-child .confirm-question", "Empty the exact responses cache?")
	b.Click(".cache-tiers tbody tr:first-child .confirm button.confirm-yes")
	b.WaitText("#status", "Emptied the exact responses cache")
	stats := b.Fetch("GET", "/api/v1/cache/stats")
	for _, s := range stats.Body["stats"].([]any) {
		if st := s.(map[string]any); st["cacheType"] == "exact_response" {
			assert.InDelta(t, 0, st["entries"], 0, "the tier is empty")
		}
	}

	// Agents: their standing and their recent decisions.
	visit(b, p, "agents", "Agents")
	b.WaitText("#view", "treasurer")
	b.Navigate(p.pageURL("/#/agents?agent=helper"))
	b.WaitText(".agent-runs h2", "Recent decisions of helper")
	b.WaitText(".agent-runs", deniedRun)
	b.WaitText(".agent-runs", "deny")
	shoot(t, b, "agents")

	// Web: fetch a page and read its SOM; it changes; fetch it again past
	// the cache and see the diff.
	visit(b, p, "web", "Web")
	b.Fill(".fetch-form input[name=url]", site.URL+"/boots")
	b.Click(".fetch-form button.fetch")
	b.WaitText(".fetched h2", "Trail shop /boots")
	b.WaitText(".fetched .som", "Trail boots")
	b.WaitText(".fetched .som", "e_")
	b.WaitText(".fetched", "No earlier snapshot")
	site.setPrice("119.00")
	b.Fill(".fetch-form input[name=url]", site.URL+"/boots")
	b.Click(".fetch-form input[name=bypassCache]")
	b.Click(".fetch-form button.fetch")
	b.WaitText(".fetched .diff", "Significance high")
	b.WaitText(".fetched .diff .before", "$129.00")
	b.WaitText(".fetched .diff .after", "$119.00")
	b.WaitText(".fetched .diff .drift", "0.")
	b.WaitText(".snapshots", site.URL+"/boots")
	b.WaitText(".sessions", sessionID)
	shoot(t, b, "web")
	b.Click(".sessions .confirm button")
	b.Click(".sessions .confirm button.confirm-yes")
	b.WaitText("#status", "Closed session "+sessionID)
	b.WaitText(".sessions", "No web session is open.")
	sessions := b.Fetch("GET", "/api/v1/web/sessions")
	assert.Empty(t, sessions.Body["sessions"], "the session is closed")

	assertNoPageErrors(t, b)
}

// Learning from the page: a pass run from the console learns an artifact
// from the triage traffic; the pattern and the artifact have their pages;
// the promotion gate's refusal is shown in its words; a replay adds
// evidence; the artifact is quarantined and the pattern ignored.
func TestBrowserConsoleGovernanceLearning(t *testing.T) {
	t.Parallel()
	p := start(t, "SVC_LEARNING_INTERVAL=0")
	rng := rand.New(rand.NewPCG(24, 25))
	routes, _ := p.tickets(t, rng, 0, 400)
	require.Equal(t, map[string]int{"live": 400}, routes)

	b := browsertest.Start(t)
	visit(b, p, "learning", "Learning")
	b.WaitText(".report", "No learning pass has run yet.")
	b.WaitText(".patterns", "No pattern yet")
	b.Click("button.run-pass")
	b.WaitText("#status", "Learning pass done: 1 artifact synthesized")
	b.WaitText(".report", "synthesized 1 artifact")
	b.WaitText(`.patterns .by-state[data-state="shadow"]`, "support-triage")
	b.WaitText(`.artifacts .by-state[data-state="shadow"]`, "classifier")
	shoot(t, b, "learning")

	arts := b.Fetch("GET", "/api/v1/artifacts")
	require.Len(t, arts.Body["artifacts"], 1)
	art := arts.Body["artifacts"].([]any)[0].(map[string]any)
	artID, patternID := art["id"].(string), art["patternId"].(string)

	// The pattern: what it is, its scores, its example runs.
	b.Click(".patterns a.pattern-link")
	b.WaitText("#view h1", "Pattern "+patternID)
	b.WaitGone("#view[aria-busy]")
	b.WaitText("#view pre.code", "Subject: {{subject}}")
	b.WaitText("#view", "Example runs")
	b.WaitText("#view", "run_")
	shoot(t, b, "pattern")

	// The artifact: its labels, posterior, provenance and evaluations.
	visit(b, p, "artifacts/"+artID, "Artifact "+artID)
	b.WaitText(".rep.classifier", "Words that speak for it")
	b.WaitText("#view", "Beta(α")
	b.WaitText("#view", "Holdout replay at synthesis")
	b.WaitText(".evaluations-table", "replay")

	// The gate refuses a promotion without shadow evidence, in its words.
	b.Click("button.promote")
	b.WaitText(".action-result", "The promotion gate refused:")
	b.WaitText(".action-result", "shadow evidence")
	b.WaitText(".action-result", "gate_failed")
	shoot(t, b, "artifact")
	d := b.Fetch("GET", "/api/v1/artifacts/"+artID)
	assert.Equal(t, "shadow", d.Body["artifact"].(map[string]any)["state"], "the refused promotion changed nothing")
	newest := d.Body["evaluations"].([]any)[0].(map[string]any)["id"]

	b.Click("button.replay")
	b.WaitText("#status", "Replayed:")
	d = b.Fetch("GET", "/api/v1/artifacts/"+artID)
	assert.NotEqual(t, newest, d.Body["evaluations"].([]any)[0].(map[string]any)["id"], "the replay added evidence")

	b.Click(".confirm button")
	b.WaitText(".confirm-question", "Quarantine it?")
	b.Click(".confirm button.confirm-yes")
	b.WaitText("#status", "Quarantined "+artID)
	b.WaitText(".artifact-state", "quarantined")
	assert.Equal(t, "h1", focused(b), "after the redraw the focus is on the page's heading")
	d = b.Fetch("GET", "/api/v1/artifacts/"+artID)
	assert.Equal(t, "quarantined", d.Body["artifact"].(map[string]any)["state"])

	// Ignoring the pattern is for good.
	visit(b, p, "patterns/"+patternID, "Pattern "+patternID)
	b.Click(".confirm button")
	b.Click(".confirm button.confirm-yes")
	b.WaitText("#status", "The pattern is ignored.")
	pat := b.Fetch("GET", "/api/v1/patterns/"+patternID)
	assert.Equal(t, "negative", pat.Body["state"])

	assertNoPageErrors(t, b)
}

// In account mode: an admin decides in the console; a member of the same
// organization reads every governance view with no action in it; another
// organization's approvals, agents and snapshots never appear.
func TestBrowserConsoleGovernanceRoles(t *testing.T) {
	t.Parallel()
	dir, _ := govPolicyDir(t)
	site := newShop(t)
	p := startAccounts(t, "SVC_POLICY_DIR="+dir, "SVC_WEB_ALLOW_PRIVATE="+strings.TrimPrefix(site.URL, "http://"))
	owner := newPerson(t, p)
	owner.login(t, adminEmail, adminPassword)
	_, me := owner.call(t, "GET", "/api/v1/orgs/active", nil)
	home := me["tenantId"].(string)

	// The other organization: its own key, held request, agent and page.
	status, created := owner.call(t, "POST", "/api/v1/orgs", map[string]string{"name": "Elsewhere"})
	require.Equal(t, http.StatusCreated, status, created)
	status, key := owner.call(t, "POST", "/api/v1/keys", map[string]string{"name": "elsewhere", "mode": "optimize"})
	require.Equal(t, http.StatusCreated, status, key)
	foreign := held(t, p, key["token"].(string), "foreign-agent", "A wire transfer for the elsewhere-secret account.")
	status, out := owner.call(t, "POST", "/api/v1/web/fetch", map[string]string{"url": site.URL + "/elsewhere-page"})
	require.Equal(t, http.StatusOK, status, out)
	status, out = owner.call(t, "POST", "/api/v1/orgs/switch", map[string]string{"tenantId": home})
	require.Equal(t, http.StatusOK, status, out)

	// The home organization.
	status, key = owner.call(t, "POST", "/api/v1/keys", map[string]string{"name": "ops", "mode": "optimize"})
	require.Equal(t, http.StatusCreated, status, key)
	token := key["token"].(string)
	mine := held(t, p, token, "home-agent", "Please make a wire transfer of $300 to the landlord.")
	status, out = owner.call(t, "POST", "/api/v1/web/fetch", map[string]string{"url": site.URL + "/home-page"})
	require.Equal(t, http.StatusOK, status, out)

	join := func(email, role, name, password string) {
		status, inv := owner.call(t, "POST", "/api/v1/orgs/active/invites", map[string]string{"email": email, "role": role})
		require.Equal(t, http.StatusCreated, status, inv)
		raw := inv["acceptUrl"].(string)[strings.Index(inv["acceptUrl"].(string), "token=")+len("token="):]
		status, out := newPerson(t, p).call(t, "POST", "/api/v1/invites/"+raw+"/accept", map[string]string{"name": name, "password": password})
		require.Equal(t, http.StatusOK, status, out)
	}
	join("ada.admin@example.com", "admin", "Ada Admin", "ada-password-1")
	join("max.member@example.com", "member", "Max Member", "max-password-1")

	b := browsertest.Start(t)

	// The member reads: the queue, with no decision to make.
	signIn(b, p, "max.member@example.com", "max-password-1")
	visit(b, p, "approvals", "Approvals")
	card := fmt.Sprintf(`article[data-id=%q]`, mine)
	b.WaitText(card, "wire transfer of $300 to the landlord")
	b.WaitText(card, "Waiting for an owner or admin to decide.")
	assert.True(t, b.Hidden(card+" textarea"), "a member has no reason to give")
	assert.True(t, b.Hidden("button.approve"), "a member cannot approve")
	assert.True(t, b.Hidden("button.deny"), "a member cannot deny")
	visit(b, p, "approvals?status=all", "Approvals")
	b.WaitText("#queue-title", "All: 1 request")
	assert.True(t, b.Hidden(fmt.Sprintf(`article[data-id=%q]`, foreign)), "another organization's approval never appears")
	// A linked approval (from a rule's verdicts) is the one focused.
	visit(b, p, "approvals?status=all&id="+mine, "Approvals")
	b.WaitText(card+".focused", "wire transfer")
	assert.Equal(t, "article "+mine, focused(b), "the linked approval has the focus")

	visit(b, p, "policies", "Policies")
	b.WaitText(`section[data-target="chat"]`, "wire-transfers")
	assert.True(t, b.Hidden("button.reload"), "a member cannot reload the policies")
	assert.True(t, b.Hidden(".reload-who"), "a member is not told who reloads")
	// A rule not in force has no verdicts to show, and says so.
	visit(b, p, "policies/no-such-rule", "Rule no-such-rule")
	b.WaitText(".rule-gone", "No rule no-such-rule is in force")
	assert.True(t, b.Hidden(".verdicts"), "no verdicts are read for a rule not in force")
	visit(b, p, "learning", "Learning")
	b.WaitText(".patterns", "No pattern yet")
	assert.True(t, b.Hidden("button.run-pass"), "a member cannot run a learning pass")
	visit(b, p, "caches", "Caches")
	b.WaitText(".cache-tiers", "exact_response")
	assert.True(t, b.Hidden(".cache-tiers button"), "a member cannot empty a cache")
	visit(b, p, "agents", "Agents")
	b.WaitText("#view", "home-agent")
	b.WaitText(".agent-runs h2", "Recent decisions of home-agent")
	visit(b, p, "web", "Web")
	b.WaitText(".snapshots", site.URL+"/home-page")
	assert.True(t, b.Hidden(".fetch-form"), "a member does not fetch")
	for _, v := range []struct{ route, heading, ready, want string }{
		{"approvals?status=all", "Approvals", card, "wire transfer"},
		{"agents", "Agents", ".agent-runs h2", "home-agent"},
		{"web", "Web", ".snapshots", "home-page"},
	} {
		visit(b, p, v.route, v.heading)
		b.WaitText(v.ready, v.want)
		text := b.WaitText("#view", v.want)
		assert.NotContains(t, text, "elsewhere", "%s shows another organization's data", v.route)
		assert.NotContains(t, text, "foreign-agent", "%s shows another organization's agent", v.route)
	}

	// The admin decides, from the same queue.
	b.Click("#sign-out")
	b.WaitText("#sign-in-title", "Sign in")
	signIn(b, p, "ada.admin@example.com", "ada-password-1")
	visit(b, p, "approvals", "Approvals")
	b.Fill(card+" textarea", "the landlord is on file")
	b.Click(card + " button.approve")
	b.WaitText("#status", "Approved "+mine)
	b.WaitText(card+`[data-status="approved"]`, "Decision")
	b.WaitText("#queue-title", "Pending: 0 requests")
	assert.Equal(t, "article "+mine, focused(b), "the decided approval keeps the focus")
	res := b.Fetch("GET", "/api/v1/approvals?status=approved")
	require.Len(t, res.Body["approvals"], 1)
	assert.Equal(t, "user:"+b.Fetch("GET", "/api/v1/auth/me").Body["user"].(map[string]any)["id"].(string),
		res.Body["approvals"].([]any)[0].(map[string]any)["decidedBy"], "the admin decided")
	assert.True(t, b.Hidden(fmt.Sprintf(`article[data-id=%q]`, foreign)))

	// An admin of the default organization reloads the policy files, which
	// govern every organization.
	visit(b, p, "policies", "Policies")
	b.WaitText("button.reload", "Reload the policy files")
	assert.True(t, b.Hidden(".reload-who"))

	// An owner of the other organization acts there, but the API refuses
	// them a reload: they see no button, and who reloads instead.
	b.Click("#sign-out")
	b.WaitText("#sign-in-title", "Sign in")
	signIn(b, p, adminEmail, adminPassword)
	b.Choose("#org-select", "Elsewhere")
	b.Click("#switch-submit")
	b.WaitText("#status", "Switched to Elsewhere.")
	visit(b, p, "policies", "Policies")
	b.WaitText(".reload-who", "the admins of the operator’s default organization reload them")
	assert.True(t, b.Hidden("button.reload"), "only the default organization's admins may reload")

	assertNoPageErrors(t, b)
}

// focused names the focused element: its tag, and an article's data-id.
func focused(b *browsertest.Browser) string {
	return browsertest.Run(b, chromedp.Evaluate[string](`(() => {
		const el = document.activeElement;
		if (!el) return '';
		const tag = el.tagName.toLowerCase();
		return el.dataset.id ? tag + ' ' + el.dataset.id : tag;
	})()`))
}
