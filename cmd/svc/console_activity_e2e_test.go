package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browsertest"
)

// The activity views: the overview, the runs list and a run's page.

// chat sends one chat request for gpt-4o-mini through the gateway with
// token (none in open dev mode) and returns the run id svc answered with.
func chat(t *testing.T, p *proc, token, app, agent, text string) string {
	t.Helper()
	status, id := send(t, p, token, "gpt-4o-mini", app, agent, text)
	require.Equal(t, http.StatusOK, status)
	return id
}

// send sends one chat request and returns svc's status and the run's id.
func send(t *testing.T, p *proc, token, model, app, agent, text string) (int, string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"model": model, "temperature": 0,
		"messages": []map[string]string{{"role": "user", "content": text}},
	})
	require.NoError(t, err)
	status, _, id := gatewayChat(t, p, token, app, agent, string(body))
	require.NotEmpty(t, id, "the gateway names the run")
	return status, id
}

// waitRows waits until the list shows exactly the runs ids, in any order.
func waitRows(t *testing.T, b *browsertest.Browser, ids ...string) {
	t.Helper()
	want, _ := json.Marshal(ids)
	expr := fmt.Sprintf(`(() => {
		const want = %s;
		const got = [...document.querySelectorAll('#runs-body tr')].map((r) => r.dataset.run);
		return got.length === want.length && want.every((id) => got.includes(id)) ? 'ok' : null;
	})()`, want)
	browsertest.Run(b, chromedp.Poll[string](expr, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(browsertest.Timeout-time.Second)))
}

// accountsWithTwoOrgs starts svc in account mode with Default (the owner,
// an admin and a member) and a second org of the owner's, each with runs
// made through its own API key. It returns the runs of Default (a first
// answer, its cache hit, and a run of app "shop") and of the second org,
// and the two orgs' API keys.
func accountsWithTwoOrgs(t *testing.T) (p *proc, keys [2]string, mine []string, theirs string) {
	t.Helper()
	p = startAccounts(t)
	owner := newPerson(t, p)
	owner.login(t, adminEmail, adminPassword)
	for _, u := range []struct{ email, role string }{{"ada.admin@example.com", "admin"}, {"mo.member@example.com", "member"}} {
		status, out := owner.call(t, "POST", "/api/v1/orgs/active/invites", map[string]string{"email": u.email, "role": u.role})
		require.Equal(t, http.StatusCreated, status, out)
		link, err := url.Parse(out["acceptUrl"].(string))
		require.NoError(t, err)
		status, out = newPerson(t, p).call(t, "POST", "/api/v1/invites/"+link.Query().Get("token")+"/accept",
			map[string]string{"name": u.role, "password": u.role + "-password-1"})
		require.Equal(t, http.StatusOK, status, out)
	}
	key := func() string {
		status, out := owner.call(t, "POST", "/api/v1/keys", map[string]any{"name": "e2e", "mode": "optimize"})
		require.Equal(t, http.StatusCreated, status, out)
		return out["token"].(string)
	}
	keys[0] = key()
	token := keys[0]
	first := chat(t, p, token, "", "helper", "What is the capital of France?")
	hit := chat(t, p, token, "", "helper", "What is the capital of France?")
	shop := chat(t, p, token, "shop", "", "Which size fits me?")
	mine = []string{first, hit, shop}

	status, out := owner.call(t, "POST", "/api/v1/orgs", map[string]string{"name": "Second Org"})
	require.Equal(t, http.StatusCreated, status, out)
	keys[1] = key()
	theirs = chat(t, p, keys[1], "", "", "Second org's private question")
	status, out = owner.call(t, "POST", "/api/v1/orgs/switch", map[string]string{"tenantId": defaultTenant(t, owner)})
	require.Equal(t, http.StatusOK, status, out)
	return p, keys, mine, theirs
}

func defaultTenant(t *testing.T, c *person) string {
	t.Helper()
	status, out := c.call(t, "GET", "/api/v1/orgs", nil)
	require.Equal(t, http.StatusOK, status, out)
	for _, o := range out["orgs"].([]any) {
		if org := o.(map[string]any); org["name"] == "Default" {
			return org["tenantId"].(string)
		}
	}
	t.Fatal("no Default org")
	return ""
}

// An admin of Default sees its figures and runs, filters them, reads a run
// explained in words with its ledger verified, rates it and takes its
// replay bundle; the second org's run never shows. A member rates a run
// too, as the API lets members do.
func TestBrowserConsoleActivityAccounts(t *testing.T) {
	t.Parallel()
	p, keys, mine, theirs := accountsWithTwoOrgs(t)
	b := browsertest.Start(t)
	signIn(b, p, "ada.admin@example.com", "admin-password-1")

	// The overview's figures are the API's.
	visit(b, p, "overview", "Overview")
	savings := b.Fetch("GET", "/api/v1/savings")
	require.Equal(t, http.StatusOK, savings.Status, savings.Body)
	assert.InDelta(t, 3, savings.Body["totalRuns"], 0, "the second org's run is not counted")
	b.WaitText(`[data-card="runs"] .value`, "3")
	b.WaitText(`[data-card="runs"] .detail`, "2 live · 1 optimized · 0 blocked")
	b.WaitText(`[data-card="cache-rate"] .value`, "33.3%")
	b.WaitText(`[data-card="saved"] .value`, "$")
	b.WaitText(`#route-links a[data-route="exact_cache"]`, "Exact cache: 1 run")
	b.WaitText(`#route-links a[data-route="live"]`, "Live: 2 runs")
	b.WaitText(`#attention [data-item="approvals"]`, "0 approvals pending")
	b.WaitText(`#attention [data-item="failed-jobs"]`, "0 jobs failed")
	assert.True(t, b.Hidden("#get-started"), "an org with runs is past getting started")
	b.WaitText("#view", "Cost and savings per day")
	// Every axis label fits in its chart (a cost below a cent is long), and
	// the runs chart counts in whole numbers.
	axes := browsertest.Run(b, chromedp.Evaluate[map[string]any](`(() => {
		const out = {cut: [], runs: []};
		for (const fig of document.querySelectorAll('figure.chart-figure')) {
			for (const t of fig.querySelectorAll('svg.chart text.axis')) {
				if (t.getBBox().x < 0) out.cut.push(t.textContent);
				if (fig.querySelector('figcaption').textContent.startsWith('Runs per day') && !/\d{4}-\d\d-\d\d/.test(t.textContent)) out.runs.push(t.textContent);
			}
		}
		return out;
	})()`))
	assert.Empty(t, axes["cut"], "an axis label is cut off")
	require.Len(t, axes["runs"], 3, "the runs chart has three axis labels")
	for _, label := range axes["runs"].([]any) {
		assert.Regexp(t, `^[0-9][0-9,]*$`, label, "the runs chart counts whole runs")
	}
	shoot(t, b, "overview")

	// The link of a route opens the runs list filtered to it.
	b.Click(`#route-links a[data-route="exact_cache"]`)
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, "#/runs?route=exact_cache") })
	waitRows(t, b, mine[1])
	assert.Equal(t, "exact_cache", b.Value(`#runs-filters select[name="route"]`))

	// The whole list: Default's runs, never the other org's.
	visit(b, p, "runs", "Runs")
	waitRows(t, b, mine...)
	assert.NotContains(t, browsertest.Run(b, chromedp.Evaluate[string](`document.querySelector('#view').innerHTML`)), theirs)
	b.WaitText("#runs-summary", "Showing 1–3 of 3")
	shoot(t, b, "runs")

	// The filter form narrows the list and keeps the filter in the address.
	b.Choose(`#runs-filters select[name="route"]`, "Live")
	b.Click("#runs-filters button.secondary")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, "#/runs?route=live") })
	waitRows(t, b, mine[0], mine[2])
	b.Click("#runs-clear")
	waitRows(t, b, mine...)

	// The search and the other filters narrow it too.
	b.Fill("#runs-q", "size fits")
	b.Click("#runs-apply")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, "#/runs?q=size+fits") })
	waitRows(t, b, mine[2])
	b.Click("#runs-clear")
	b.Fill(`#runs-filters input[name="agent"]`, "helper")
	b.Click("#runs-filters button.secondary")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, "#/runs?agent=helper") })
	waitRows(t, b, mine[0], mine[1])

	// A run recorded while the list is open comes to its top, marked new;
	// the other org's run does not.
	b.Click("#runs-clear")
	waitRows(t, b, mine...)
	b.WaitText("#live-state", "Live")
	chat(t, p, keys[1], "", "", "Another private question")
	live := chat(t, p, keys[0], "", "", "A question asked while the list is open")
	waitRows(t, b, append([]string{live}, mine...)...)
	b.WaitText(fmt.Sprintf(`#runs-body tr.new[data-run=%q]`, live), "new")
	assert.Equal(t, live, browsertest.Run(b, chromedp.Evaluate[string](`document.querySelector('#runs-body tr').dataset.run`)))
	b.WaitText("#runs-summary", "of 4")
	// The relative times are written again as they age (the list does it
	// every 30 s through refreshTimes).
	aged := browsertest.Run(b, chromedp.Evaluate[string](`import('/console/lib/format.js').then((f) => {
		const el = document.querySelector('#runs-body tr time[data-ago]');
		el.dateTime = new Date(Date.now() - 2 * 3600 * 1000).toISOString();
		f.refreshTimes(document.querySelector('#runs-body'));
		return el.textContent;
	})`, chromedp.EvalAwaitPromise))
	assert.Equal(t, "2 hours ago", aged)

	// A run's page: the route in words, the ledger verified.
	b.Click(fmt.Sprintf(`#runs-body tr[data-run=%q] a`, mine[1]))
	b.WaitText("#view h1", "Run")
	b.WaitText("#run-explanation", "This run was answered from the exact cache")
	b.WaitText("#run-explanation", "first answered by run "+mine[0])
	b.WaitText("#run-explanation", "Not sent to the provider: a fresh cached answer")
	b.WaitText("#run-explanation", "No policy rule matched; the request was allowed.")
	b.WaitText("#run-explanation", "It saved $")
	before := b.Fetch("GET", "/api/v1/runs/"+mine[1])
	require.Equal(t, http.StatusOK, before.Status, before.Body)
	answer := before.Body["run"].(map[string]any)["response"].(map[string]any)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	require.NotEmpty(t, answer)
	b.WaitText("#run-answer", strings.Join(strings.Fields(answer), " "))
	b.WaitText("#run-integrity", "Verified")
	b.WaitText("#run-integrity", "3 events is intact")
	assert.True(t, b.Hidden("#run-redacted"), "redaction is off")

	// Feedback from the page is saved.
	b.Click("#feedback-bad")
	b.Fill("#feedback-correction", "Paris, the capital of France.")
	b.Click("#feedback-submit")
	b.WaitText("#status", "your feedback is saved")
	b.WaitText("#run-feedback", "Correction: Paris, the capital of France.")
	// The ledger is read again: its table and its check count the feedback.
	b.WaitText("#run-integrity", "4 events is intact")
	b.WaitText("#run-ledger tbody tr:nth-child(4)", "feedback")
	detail := b.Fetch("GET", "/api/v1/runs/"+mine[1])
	require.Equal(t, http.StatusOK, detail.Status, detail.Body)
	events := detail.Body["events"].([]any)
	last := events[len(events)-1].(map[string]any)
	assert.Equal(t, "feedback", last["type"])
	assert.Equal(t, map[string]any{"rating": -1.0, "correction": "Paris, the capital of France."},
		map[string]any{"rating": last["payload"].(map[string]any)["rating"], "correction": last["payload"].(map[string]any)["correction"]})

	// The replay bundle is a file to save, from a Blob URL.
	b.Click("#bundle-prepare")
	b.WaitText("#bundle-download", "Download the replay bundle")
	// (The page's policy keeps scripts from reading a blob: URL back, so
	// the file is checked by its link, and its content through the API.)
	bundle := browsertest.Run(b, chromedp.Evaluate[[]byte](`(() => {
		const a = document.querySelector('#bundle-download');
		return {href: a.href.slice(0, 5), download: a.download};
	})()`))
	var got map[string]any
	require.NoError(t, json.Unmarshal(bundle, &got))
	assert.Equal(t, map[string]any{"href": "blob:", "download": mine[1] + ".replay.json"}, got)
	replay := b.Fetch("GET", "/api/v1/runs/"+mine[1]+"/replay-bundle")
	require.Equal(t, http.StatusOK, replay.Status, replay.Body)
	assert.Equal(t, true, replay.Body["integrity"].(map[string]any)["ok"])
	shoot(t, b, "run")

	// Another org's run is not found, in the API's words.
	visit(b, p, "runs/"+theirs, "Run")
	b.WaitText("#view", "This run could not be loaded: run not found")

	// A malformed address is a page not found, not a script error.
	visit(b, p, "runs/%E0", "Not found")
	b.WaitText("#view", "The console has no page at this address.")

	// A member reads, and may rate a run: the API lets members give feedback.
	b.Click("#sign-out")
	signIn(b, p, "mo.member@example.com", "member-password-1")
	visit(b, p, "runs/"+mine[0], "Run")
	b.WaitText("#run-integrity", "Verified")
	b.Click("#feedback-submit")
	b.WaitText("#status", "your feedback is saved")
	b.WaitText("#run-feedback", "Good")
	assertNoPageErrors(t, b)
}

// In open dev mode an empty overview leads to getting started; a run
// recorded later shows in the figures and the list; a blocked run's page
// names the rule that blocked it (the example policies of docs/policies).
func TestBrowserConsoleActivityOpenDevMode(t *testing.T) {
	t.Parallel()
	p := start(t, "SVC_POLICY_DIR=../../docs/policies")
	b := browsertest.Start(t)
	visit(b, p, "overview", "Overview")
	b.WaitText("#get-started", "No runs yet")
	b.Click(`#get-started a[href="#/start"]`)
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, "#/start") })

	visit(b, p, "runs", "Runs")
	b.WaitText("#runs-empty", "No runs yet")

	id := chat(t, p, "", "", "", "Hello from open dev mode")
	visit(b, p, "overview", "Overview")
	b.WaitText(`[data-card="runs"] .value`, "1")
	assert.True(t, b.Hidden("#get-started"))
	visit(b, p, "runs", "Runs")
	waitRows(t, b, id)

	// With redaction on, the run's page says its text was masked, and it is.
	status, out := p.call(t, "PUT", "/api/v1/settings", "", `{"key":"redaction","value":true}`)
	require.Equal(t, http.StatusOK, status, out)
	masked := chat(t, p, "", "", "", "Write to jo@example.com please")
	visit(b, p, "runs/"+masked, "Run")
	b.WaitText("#run-redacted", "Redaction is on for this organization")
	b.WaitText("#view pre.code", "Write to [email] please")

	// Past a page, the list pages; older pages do not follow the stream.
	ids := []string{id, masked} // oldest first
	for i := 0; i < 24; i++ {
		ids = append(ids, chat(t, p, "", "", "", fmt.Sprintf("Question number %d", i)))
	}
	visit(b, p, "runs", "Runs")
	waitRows(t, b, ids[1:]...)
	b.WaitText("#runs-summary", "Showing 1–25 of 26")
	b.Click("#runs-next")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, "#/runs?offset=25") })
	waitRows(t, b, ids[0])
	b.WaitText("#live-state", "Live updates are paused on older pages")
	b.Click("#runs-prev")
	b.WaitURL(func(u string) bool { return strings.HasSuffix(u, "#/runs") })
	waitRows(t, b, ids[1:]...)

	status, blocked := send(t, p, "", "gpt-4o", "intern-tools", "", "Hello from the interns")
	require.Equal(t, http.StatusForbidden, status)
	visit(b, p, "runs/"+blocked, "Run")
	b.WaitText("#run-explanation", "This run was refused by a policy: blocked by policy: interns-use-small-models.")
	b.WaitText("#run-explanation", "The policy verdict: denied, and enforced.")
	b.WaitText(`#run-explanation a[href="#/policies/interns-use-small-models"]`, "See the rule")
	b.WaitText("#run-explanation", "It saved nothing: the request was refused before any call.")
	b.WaitText("#run-integrity", "Verified")

	// The examples' provider rules are listed under their own target.
	visit(b, p, "policies", "Policies")
	b.WaitText(`section[data-target="provider"] h2`, "Candidate providers (2)")
	b.WaitText(`section[data-target="provider"]`, "eu-portal-stays-off-us")

	// The sentences of a route explanation, from the function the run's
	// page uses, for a verdict with rules, an artifact and a fallback.
	raw := browsertest.Run(b, chromedp.Evaluate[[]byte](`import('/console/views/run.js').then((m) => m.explain({
		route: 'live', savedUsd: 0, savedMs: 0, ghostSavedUsd: 0.004217,
		routeExplanation: {
			route: 'live', reason: 'the artifact abstained',
			rejected: [{route: 'artifact', reason: 'its confidence is too low'}],
			policy: {decision: 'deny', enforced: false, rules: [{id: 'no-pii', effect: 'deny', reason: 'the prompt holds an email address'}]},
			cache: {tier: 'exact_response', cacheable: false, lookup: 'skipped', served: false},
			artifact: {id: 'art_1', state: 'shadow', served: false, abstained: true, reason: 'below its threshold'},
			fallback: {used: true, reason: 'the provider timed out', tier: 'exact_response', stale: true},
		},
	}))`, chromedp.EvalAwaitPromise))
	var sentences []map[string]any
	require.NoError(t, json.Unmarshal(raw, &sentences))
	var texts []string
	rule := ""
	for _, s := range sentences {
		texts = append(texts, s["text"].(string))
		if id, ok := s["ruleId"].(string); ok {
			rule = id
		}
	}
	assert.Equal(t, []string{
		"This run was answered from the provider, live: the artifact abstained.",
		"Not from an artifact: its confidence is too low.",
		"The policy verdict: denied, but not enforced (observe mode records what would have happened).",
		"Rule no-pii matched (denied): the prompt holds an email address.",
		"The exact cache was not consulted: the request is not cacheable.",
		"Artifact art_1 (shadow) abstained: below its threshold.",
		"In optimize mode it would have saved $0.004217 (ghost savings).",
		"The provider failed, so a cached answer stood in (a stale one): the provider timed out.",
	}, texts)
	assert.Equal(t, "no-pii", rule, "a matched rule links to its page")

	// A broken ledger is said in words, not by its code.
	broken := browsertest.Run(b, chromedp.Evaluate[string](`import('/console/views/run.js').then((m) =>
		m.integrityBadge({ok: false, events: 3, brokenAt: 1, reason: 'prev_link_mismatch'}).textContent)`, chromedp.EvalAwaitPromise))
	assert.Equal(t, "Broken The chain breaks at event 1: an event’s link to the event before it was changed.", broken)

	// A run's page names the trace its call was part of.
	req, err := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", strings.NewReader(chatBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	visit(b, p, "runs/"+res.Header.Get("x-svc-run-id"), "Run")
	b.WaitText("#run-facts", "Trace id")
	b.WaitText("#run-facts", callerTrace)
	assertNoPageErrors(t, b)
}
