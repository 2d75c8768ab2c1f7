package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/store/storetest"
)

// shop is a small site for agents: a product page with a price (also in
// JSON-LD), a link, and an order form whose submissions it records.
type shop struct {
	*httptest.Server
	price  atomic.Value // string
	mu     sync.Mutex
	orders []url.Values
	cookie string // the cookie the order form saw
}

func newShop(t *testing.T) *shop {
	s := &shop{}
	s.price.Store("19.99")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "cart", Value: "c-42", Path: "/"})
		price := s.price.Load().(string)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><title>Acme Widget</title>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Product","name":"Widget","sku":"W-1",
"offers":{"@type":"Offer","price":"%[1]s","priceCurrency":"USD","availability":"https://schema.org/InStock"}}</script>
<style>body{font-family:sans-serif}</style></head><body>
<header><nav aria-label="Main"><a href="/about">About us</a> <a href="/help">Help</a></nav></header>
<main><h1>Widget</h1><p class="price">$%[1]s</p><p>%[2]s</p>
<form action="/order" method="post" aria-label="Order">
<label for="qty">Quantity</label><input id="qty" name="quantity" value="1">
<label for="colour">Colour</label><select id="colour" name="colour"><option value="red">Red</option><option value="blue">Blue</option></select>
<label><input type="checkbox" name="gift"> Gift wrap</label>
<input type="hidden" name="token" value="t-123">
<button type="submit">Place order</button>
</form></main>
<footer><p>Page generated at 10:00:00</p></footer></body></html>`, price, strings.Repeat("A fine widget for every workshop. ", 40))
	})
	mux.HandleFunc("GET /about", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>About Acme</title><main><h1>About us</h1><p>We make widgets.</p><a href="/">Back to the widget</a></main>`)
	})
	mux.HandleFunc("POST /order", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		s.orders = append(s.orders, r.PostForm)
		if c, err := r.Cookie("cart"); err == nil {
			s.cookie = c.Value
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>Thank you</title><main><h1>Order received</h1></main>`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *shop) lastOrder() (url.Values, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.orders) == 0 {
		return nil, ""
	}
	return s.orders[len(s.orders)-1], s.cookie
}

// elementID finds the id of the first element of kind whose name or text
// contains name, in a SOM as the API returns it.
func elementID(t testing.TB, som any, kind, name string) string {
	t.Helper()
	for _, e := range som.(map[string]any)["elements"].([]any) {
		el := e.(map[string]any)
		n, _ := el["name"].(string)
		txt, _ := el["text"].(string)
		if el["kind"] == kind && (strings.Contains(n, name) || strings.Contains(txt, name)) {
			return el["id"].(string)
		}
	}
	t.Fatalf("no %s named %q in the SOM", kind, name)
	return ""
}

func formID(t testing.TB, som any) string {
	t.Helper()
	for _, r := range som.(map[string]any)["regions"].([]any) {
		if id := r.(map[string]any)["id"].(string); strings.HasPrefix(id, "r_form") {
			return id
		}
	}
	t.Fatal("no form region in the SOM")
	return ""
}

func TestWebFetchCompilesCachesAndDiffs(t *testing.T) {
	ts := newServer(t, "", nil)
	site := newShop(t)
	body := `{"url":"` + site.URL + `/"}`

	res := ts.call(t, "POST", "/api/v1/web/fetch", "", body)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "builtin", res.json["source"])
	assert.Equal(t, false, res.json["cached"])
	html, somBytes := res.json["htmlBytes"].(float64), res.json["somBytes"].(float64)
	assert.Greater(t, html, somBytes, "the SOM is smaller than the page")
	assert.Positive(t, res.json["tokensSavedEstimate"])
	assert.NotContains(t, res.json, "diff", "no previous snapshot, no diff")
	assert.Contains(t, res.json["context"], "Widget")
	assert.True(t, strings.HasPrefix(elementID(t, res.json["som"], "link", "About us"), "e_"))
	assert.Contains(t, res.body, `"19.99"`, "the price read from structured data")

	again := ts.call(t, "POST", "/api/v1/web/fetch", "", body)
	require.Equal(t, http.StatusOK, again.status)
	assert.Equal(t, "cache", again.json["source"])
	assert.Equal(t, true, again.json["cached"])

	fresh := ts.call(t, "POST", "/api/v1/web/fetch", "", `{"url":"`+site.URL+`/","bypassCache":true}`)
	require.Equal(t, http.StatusOK, fresh.status)
	assert.Equal(t, "builtin", fresh.json["source"])
	assert.Equal(t, 0.0, field(t, fresh, "diff", "driftScore"), "the page did not change")
	assert.Equal(t, elementID(t, res.json["som"], "link", "About us"), elementID(t, fresh.json["som"], "link", "About us"), "ids are stable")

	site.price.Store("24.99")
	changed := ts.call(t, "POST", "/api/v1/web/fetch", "", `{"url":"`+site.URL+`/","bypassCache":true}`)
	require.Equal(t, http.StatusOK, changed.status)
	assert.Greater(t, field(t, changed, "diff", "driftScore").(float64), 0.3, "a price change drifts high")

	snaps := ts.call(t, "GET", "/api/v1/web/snapshots", "", "")
	require.Equal(t, http.StatusOK, snaps.status)
	assert.EqualValues(t, 3, snaps.json["total"], "three compiles; the cache hit stored nothing")
	assert.Len(t, ts.call(t, "GET", "/api/v1/web/snapshots?limit=2", "", "").json["snapshots"], 2)
	assert.Equal(t, http.StatusBadRequest, ts.call(t, "GET", "/api/v1/web/snapshots?limit=-1", "", "").status)
	first := snaps.json["snapshots"].([]any)[0].(map[string]any)
	assert.NotContains(t, first, "som", "the list leaves the SOM out")
	one := ts.call(t, "GET", "/api/v1/web/snapshots/"+first["id"].(string), "", "")
	require.Equal(t, http.StatusOK, one.status)
	assert.Contains(t, one.body, "24.99")

	savings := ts.call(t, "GET", "/api/v1/savings", "", "")
	assert.Positive(t, savings.json["somTokensSaved"], "fetches feed the savings")
	stats := ts.call(t, "GET", "/api/v1/cache/stats", "", "")
	assert.Contains(t, stats.body, `"cacheType":"som"`)
}

func TestWebFetchGuardsAndErrors(t *testing.T) {
	site := newShop(t)
	ts := newServer(t, bootstrap, nil)
	res := ts.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":"`+site.URL+`/"}`)
	assert.Equal(t, http.StatusForbidden, res.status, "a private address is refused outside open dev mode: %s", res.body)
	assert.Equal(t, http.StatusForbidden, ts.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":"file:///etc/passwd"}`).status)
	notURL := ts.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":"not a url"}`)
	assert.Equal(t, http.StatusBadRequest, notURL.status, notURL.body)
	assert.Equal(t, http.StatusBadRequest, ts.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":1}`).status)

	closed := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()
	opened := newServer(t, bootstrap, map[string]string{"SVC_WEB_ALLOW_PRIVATE": addr + "," + strings.TrimPrefix(site.URL, "http://")})
	assert.Equal(t, http.StatusOK, opened.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":"`+site.URL+`/"}`).status,
		"the operator's exception opens exactly that target")
	down := opened.call(t, "POST", "/api/v1/web/fetch", bootstrap, `{"url":"http://`+addr+`/"}`)
	assert.Equal(t, http.StatusBadGateway, down.status, "an upstream failure is 502: %s", down.body)
}

func TestWebSnapshotsAndSessionsAreTenantPrivate(t *testing.T) {
	site := newShop(t)
	ts := newServer(t, bootstrap, map[string]string{"SVC_WEB_ALLOW_PRIVATE": strings.TrimPrefix(site.URL, "http://")})
	_, tokenA := ts.createKey(t, bootstrap, `{"name":"a","mode":"optimize"}`)
	tenantB, err := ts.store.CreateTenant(t.Context(), "B")
	require.NoError(t, err)
	_, tokenB, err := ts.keys.Create(t.Context(), tenantB.ID, auth.NewKey{Name: "b", Mode: auth.Optimize})
	require.NoError(t, err)

	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/web/fetch", tokenA, `{"url":"`+site.URL+`/"}`).status)
	assert.EqualValues(t, 0, ts.call(t, "GET", "/api/v1/web/snapshots", tokenB, "").json["total"])
	list := ts.call(t, "GET", "/api/v1/web/snapshots", tokenA, "")
	id := list.json["snapshots"].([]any)[0].(map[string]any)["id"].(string)
	assert.Equal(t, http.StatusNotFound, ts.call(t, "GET", "/api/v1/web/snapshots/"+id, tokenB, "").status)
	fromB := ts.call(t, "POST", "/api/v1/web/fetch", tokenB, `{"url":"`+site.URL+`/"}`)
	assert.Equal(t, "builtin", fromB.json["source"], "another tenant never gets this tenant's cached page")

	opened := ts.call(t, "POST", "/api/v1/web/sessions", tokenA, `{"url":"`+site.URL+`/"}`)
	require.Equal(t, http.StatusCreated, opened.status, opened.body)
	sid := field(t, opened, "session", "id").(string)
	act := `{"action":"click","target":"` + elementID(t, opened.json["som"], "link", "About us") + `"}`
	assert.Equal(t, http.StatusNotFound, ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", tokenB, act).status)
	assert.Equal(t, http.StatusNotFound, ts.call(t, "DELETE", "/api/v1/web/sessions/"+sid, tokenB, "").status)
	assert.Empty(t, ts.call(t, "GET", "/api/v1/web/sessions", tokenB, "").json["sessions"])
	assert.Len(t, ts.call(t, "GET", "/api/v1/web/sessions", tokenA, "").json["sessions"], 1)
}

func TestWebSessionActs(t *testing.T) {
	ts := newServer(t, "", nil)
	site := newShop(t)
	opened := ts.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/"}`)
	require.Equal(t, http.StatusCreated, opened.status, opened.body)
	sid := field(t, opened, "session", "id").(string)
	assert.Equal(t, site.URL+"/", field(t, opened, "session", "url"))
	assert.NotEmpty(t, field(t, opened, "session", "createdAt"))
	assert.NotEmpty(t, opened.json["context"])
	page := opened.json["som"]
	act := func(action, target, value string) response {
		body := fmt.Sprintf(`{"action":%q,"target":%q,"value":%q}`, action, target, value)
		return ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", "", body)
	}

	qty := elementID(t, page, "input", "Quantity")
	res := act("type", qty, "3")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, true, field(t, res, "result", "ok"))
	assert.Equal(t, "type", field(t, res, "result", "action"))
	assert.Equal(t, qty, field(t, res, "result", "target"))
	assert.NotContains(t, res.json["result"], "navigated")

	colour := elementID(t, page, "select", "Colour")
	bad := act("select", colour, "green")
	assert.Equal(t, http.StatusBadRequest, bad.status, "only a listed option: %s", bad.body)
	require.Equal(t, http.StatusOK, act("select", colour, "blue").status)
	require.Equal(t, http.StatusOK, act("click", elementID(t, page, "checkbox", "Gift"), "").status)
	assert.Equal(t, http.StatusBadRequest, act("type", colour, "x").status, "type needs a text field")
	assert.Equal(t, http.StatusBadRequest, act("fly", qty, "").status)
	assert.Equal(t, http.StatusConflict, act("click", "e_doesnotexist", "").status)

	submitted := act("submit", formID(t, page), "")
	require.Equal(t, http.StatusOK, submitted.status, submitted.body)
	assert.Equal(t, true, field(t, submitted, "result", "navigated"))
	assert.Equal(t, site.URL+"/order", field(t, submitted, "result", "url"))
	assert.Contains(t, submitted.json["context"], "Order received")
	order, cookie := site.lastOrder()
	require.NotNil(t, order, "the site received the submission")
	assert.Equal(t, url.Values{"quantity": {"3"}, "colour": {"blue"}, "gift": {"on"}, "token": {"t-123"}}, order,
		"successful controls, the hidden input, typed and chosen values")
	assert.Equal(t, "c-42", cookie, "the session keeps the site's cookies")

	stale := act("type", qty, "1")
	assert.Equal(t, http.StatusConflict, stale.status, "an id from the page before is refused, not applied to this one")

	// Links are followed.
	back := ts.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/about"}`)
	require.Equal(t, http.StatusCreated, back.status)
	sid2 := field(t, back, "session", "id").(string)
	clicked := ts.call(t, "POST", "/api/v1/web/sessions/"+sid2+"/act", "", `{"action":"click","target":"`+elementID(t, back.json["som"], "link", "Back")+`"}`)
	require.Equal(t, http.StatusOK, clicked.status, clicked.body)
	assert.Equal(t, true, field(t, clicked, "result", "navigated"))
	assert.Equal(t, site.URL+"/", field(t, clicked, "result", "url"))

	audit := ts.call(t, "GET", "/api/v1/audit", "", "").body
	for _, a := range []string{"web.open", "web.type", "web.select", "web.submit", "web.click"} {
		assert.Contains(t, audit, `"`+a+`"`)
	}

	closed := ts.call(t, "DELETE", "/api/v1/web/sessions/"+sid, "", "")
	require.Equal(t, http.StatusOK, closed.status)
	assert.Equal(t, true, closed.json["ok"])
	assert.Equal(t, http.StatusNotFound, act("type", qty, "1").status)

	ts.clock.Advance(5 * time.Minute)
	assert.Empty(t, ts.call(t, "GET", "/api/v1/web/sessions", "", "").json["sessions"], "idle sessions close after 5 minutes")
}

func TestWebSessionGovernance(t *testing.T) {
	site := newShop(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`policies:
  - id: no-orders
    target: web
    when: web.action == "submit" && web.url.endsWith("/order") && web.fields["quantity"] == "99"
    effect: deny
    reason: bulk orders go through sales
  - id: no-intranet-open
    target: web
    when: web.action == "open" && web.url.endsWith("/about")
    effect: deny
    reason: sessions start on the shop
  - id: no-help
    target: web
    when: web.action == "click" && web.url.endsWith("/help")
    effect: deny
    reason: agents stay off the help desk
`), 0o600))
	// Keys never get open dev mode's private fetches: the operator opens
	// the test site.
	ts := newServer(t, "", map[string]string{"SVC_POLICY_DIR": dir, "SVC_WEB_ALLOW_PRIVATE": strings.TrimPrefix(site.URL, "http://")})
	_, observe := ts.createKey(t, "", `{"name":"watcher","mode":"observe"}`)

	open := func(token string) (string, any) {
		res := ts.call(t, "POST", "/api/v1/web/sessions", token, `{"url":"`+site.URL+`/"}`)
		require.Equal(t, http.StatusCreated, res.status, res.body)
		return field(t, res, "session", "id").(string), res.json["som"]
	}
	act := func(token, sid, action, target, value string) response {
		return ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", token, fmt.Sprintf(`{"action":%q,"target":%q,"value":%q}`, action, target, value))
	}

	sid, page := open("")
	require.Equal(t, http.StatusOK, act("", sid, "type", elementID(t, page, "input", "Quantity"), "99").status)
	denied := act("", sid, "submit", formID(t, page), "")
	require.Equal(t, http.StatusForbidden, denied.status, denied.body)
	assert.Equal(t, "deny", field(t, denied, "verdict", "decision"))
	assert.Contains(t, denied.body, "no-orders")
	order, _ := site.lastOrder()
	assert.Nil(t, order, "nothing was sent")
	help := act("", sid, "click", elementID(t, page, "link", "Help"), "")
	assert.Equal(t, http.StatusForbidden, help.status, "click rules apply too")

	osid, opage := open(observe)
	assert.Equal(t, http.StatusOK, act(observe, osid, "type", elementID(t, opage, "input", "Quantity"), "2").status, "reads and local actions run")
	refused := act(observe, osid, "submit", formID(t, opage), "")
	assert.Equal(t, http.StatusForbidden, refused.status)
	e, _ := refused.json["error"].(map[string]any)
	assert.Equal(t, "observe-mode keys cannot perform web writes", e["message"])
	viaButton := act(observe, osid, "click", elementID(t, opage, "button", "Place order"), "")
	assert.Equal(t, http.StatusForbidden, viaButton.status, "a click on a submit button is a submit")
	order, _ = site.lastOrder()
	assert.Nil(t, order)
	assert.Equal(t, http.StatusOK, act(observe, osid, "click", elementID(t, opage, "link", "About"), "").status)

	openDenied := ts.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/about"}`)
	assert.Equal(t, http.StatusForbidden, openDenied.status, "opening a session is judged too: %s", openDenied.body)
	assert.Contains(t, openDenied.body, "no-intranet-open")

	audit := ts.call(t, "GET", "/api/v1/audit?decision=deny", "", "").body
	assert.Contains(t, audit, `"web.submit"`)
	assert.Contains(t, audit, `"web.open"`)
}

// A redirect is judged as the action that met it, at the URL it leads to:
// a rule about a page cannot be passed by a link or a form that redirects
// there.
func TestWebSessionRedirectsAreJudged(t *testing.T) {
	var posted atomic.Int32
	mux := http.NewServeMux()
	page := func(title, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><title>%s</title><main>%s</main>`, title, body)
		}
	}
	mux.HandleFunc("GET /{$}", page("Start", `<a href="/moved">Moved page</a> <a href="/elsewhere">Other page</a>
<form action="/order" method="post" aria-label="Order"><label for="q">Quantity</label><input id="q" name="quantity" value="1"><button type="submit">Send</button></form>`))
	mux.Handle("GET /moved", http.RedirectHandler("/help", http.StatusFound))
	mux.Handle("GET /elsewhere", http.RedirectHandler("/about", http.StatusFound))
	mux.HandleFunc("POST /order", func(w http.ResponseWriter, r *http.Request) {
		posted.Add(1)
		http.Redirect(w, r, "/help", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /help", page("Help", "help desk"))
	mux.HandleFunc("GET /about", page("About", "about us"))
	site := httptest.NewServer(mux)
	defer site.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`policies:
  - id: no-help
    target: web
    when: web.url.endsWith("/help")
    effect: deny
    reason: agents stay off the help desk
`), 0o600))
	ts := newServer(t, "", map[string]string{"SVC_POLICY_DIR": dir, "SVC_WEB_ALLOW_PRIVATE": strings.TrimPrefix(site.URL, "http://")})
	opened := ts.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/"}`)
	require.Equal(t, http.StatusCreated, opened.status, opened.body)
	sid, som := field(t, opened, "session", "id").(string), opened.json["som"]
	act := func(action, target string) response {
		return ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", "", fmt.Sprintf(`{"action":%q,"target":%q}`, action, target))
	}

	moved := act("click", elementID(t, som, "link", "Moved"))
	require.Equal(t, http.StatusForbidden, moved.status, moved.body)
	assert.Equal(t, "policy_blocked", moved.errorCode())
	assert.Contains(t, moved.body, "no-help")
	assert.Contains(t, moved.body, "redirect")

	submitted := act("submit", formID(t, som))
	assert.Equal(t, http.StatusForbidden, submitted.status, submitted.body)
	assert.Contains(t, submitted.body, "no-help")
	assert.EqualValues(t, 1, posted.Load(), "the form went out; the redirect after it was refused")

	other := act("click", elementID(t, som, "link", "Other"))
	require.Equal(t, http.StatusOK, other.status, other.body)
	assert.Equal(t, site.URL+"/about", field(t, other, "result", "url"), "a redirect the rules allow is followed")

	assert.Equal(t, http.StatusForbidden, ts.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/moved"}`).status,
		"opening a session at a redirect is judged at each hop too")
}

func TestWebSessionNavigationIsGuarded(t *testing.T) {
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "internal")
	}))
	defer inside.Close()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>Links</title><main><a href="%s/secret">Internal report</a></main>`, inside.URL)
	}))
	defer site.Close()
	ts := newServer(t, bootstrap, map[string]string{"SVC_WEB_ALLOW_PRIVATE": strings.TrimPrefix(site.URL, "http://")})
	opened := ts.call(t, "POST", "/api/v1/web/sessions", bootstrap, `{"url":"`+site.URL+`/"}`)
	require.Equal(t, http.StatusCreated, opened.status, opened.body)
	sid := field(t, opened, "session", "id").(string)
	res := ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", bootstrap,
		`{"action":"click","target":"`+elementID(t, opened.json["som"], "link", "Internal")+`"}`)
	assert.Equal(t, http.StatusForbidden, res.status, "a link to a private address is refused: %s", res.body)
	assert.Equal(t, http.StatusForbidden, ts.call(t, "POST", "/api/v1/web/sessions", bootstrap, `{"url":"`+inside.URL+`/"}`).status)
}

// TestPrivateFetchesEndWithOpenDevMode: once a person exists, nobody (a
// signed-in user, a key) may fetch private addresses the operator did not
// open, even without SVC_API_KEY.
func TestPrivateFetchesEndWithOpenDevMode(t *testing.T) {
	site := newShop(t)
	ts := newServer(t, "", accountEnv("SVC_ALLOW_PUBLIC_SIGNUP", "true"))
	b := ts.browser(t)
	require.Equal(t, http.StatusCreated, b.do(t, "POST", "/api/v1/auth/signup", `{"email":"x@acme.test","name":"X","password":"password 123"}`).status)
	for _, path := range []string{"/api/v1/web/fetch", "/api/v1/web/sessions"} {
		res := b.do(t, "POST", path, `{"url":"`+site.URL+`/"}`)
		assert.Equal(t, http.StatusForbidden, res.status, "%s: %s", path, res.body)
	}
	key := b.do(t, "POST", "/api/v1/keys", `{"name":"k","mode":"optimize"}`)
	require.Equal(t, http.StatusCreated, key.status, key.body)
	res := ts.call(t, "POST", "/api/v1/web/fetch", key.json["token"].(string), `{"url":"`+site.URL+`/"}`)
	assert.Equal(t, http.StatusForbidden, res.status)
}

func TestObserveKeysAreNotServedFromTheSOMCache(t *testing.T) {
	site := newShop(t)
	ts := newServer(t, "", map[string]string{"SVC_WEB_ALLOW_PRIVATE": strings.TrimPrefix(site.URL, "http://")})
	_, observe := ts.createKey(t, "", `{"name":"watcher","mode":"observe"}`)
	body := `{"url":"` + site.URL + `/"}`
	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/web/fetch", "", body).status)
	res := ts.call(t, "POST", "/api/v1/web/fetch", observe, body)
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, false, res.json["cached"])
	assert.Equal(t, "builtin", res.json["source"])
}

// A redirect that turns a submit into a GET is judged as a read of the new
// page: the approved form is sent once and its answer page loads, without
// a second approval for a redirect no one could retry alone. A redirect
// that sends the form on (307) is judged as the submit at its new URL.
func TestWebSessionRedirectsAfterASubmitAreJudgedForWhatTheyDo(t *testing.T) {
	var orders, vault atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><title>Shop</title><main>
<form action="/order" method="post" aria-label="Order"><label for="q">Quantity</label><input id="q" name="quantity" value="1"><button type="submit">Order</button></form>
<form action="/forward" method="post" aria-label="Forward"><label for="n">Note</label><input id="n" name="note" value="x"><button type="submit">Forward</button></form></main>`)
	})
	mux.HandleFunc("POST /order", func(w http.ResponseWriter, r *http.Request) {
		orders.Add(1)
		http.Redirect(w, r, "/vault", http.StatusSeeOther)
	})
	mux.Handle("POST /forward", http.RedirectHandler("/vault", http.StatusTemporaryRedirect))
	mux.HandleFunc("/vault", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			vault.Add(1)
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><title>Vault</title><main>thank you</main>`)
	})
	site := httptest.NewServer(mux)
	defer site.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`policies:
  - id: approve-submits
    target: web
    when: web.action == "submit"
    effect: require_approval
    reason: a person approves each form
  - id: no-vault-writes
    target: web
    when: web.action == "submit" && web.url.endsWith("/vault")
    effect: deny
    reason: nothing is sent to the vault
`), 0o600))
	ts := newServer(t, "", map[string]string{"SVC_POLICY_DIR": dir, "SVC_WEB_ALLOW_PRIVATE": strings.TrimPrefix(site.URL, "http://")})
	// Each form in a session of its own, since a submit leaves the page;
	// an approval is of the submit in its session.
	form := func(name string) func() response {
		opened := ts.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/"}`)
		require.Equal(t, http.StatusCreated, opened.status, opened.body)
		sid, som := field(t, opened, "session", "id").(string), opened.json["som"]
		body := fmt.Sprintf(`{"action":"submit","target":%q}`, elementID(t, som, "button", name))
		return func() response { return ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", "", body) }
	}
	approve := func(res response) {
		t.Helper()
		require.Equal(t, http.StatusForbidden, res.status, res.body)
		id := res.json["verdict"].(map[string]any)["approvalId"].(string)
		ok := ts.call(t, "POST", "/api/v1/approvals/"+id+"/approve", "", `{"reason":"fine"}`)
		require.Equal(t, http.StatusOK, ok.status, ok.body)
	}

	order := form("Order")
	approve(order())
	ordered := order()
	require.Equal(t, http.StatusOK, ordered.status, ordered.body)
	assert.Equal(t, site.URL+"/vault", field(t, ordered, "result", "url"), "the page after the form loads")
	assert.EqualValues(t, 1, orders.Load())

	forward := form("Forward")
	approve(forward())
	forwarded := forward()
	require.Equal(t, http.StatusForbidden, forwarded.status, forwarded.body)
	assert.Contains(t, forwarded.body, "no-vault-writes")
	assert.Zero(t, vault.Load(), "the form was not sent on to the vault")

	pending := ts.call(t, "GET", "/api/v1/approvals?status=pending", "", "")
	require.Equal(t, http.StatusOK, pending.status, pending.body)
	assert.Empty(t, pending.json["approvals"], "no redirect waits for a person")
}

// A redirect's refusal is audited once, at the URL it was refused at, with
// the action's password values masked there too.
func TestWebSessionRedirectRefusalIsAuditedOnceAndMasked(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><title>Sign in</title><main>
<form action="/login" method="get" aria-label="Sign in"><label for="u">User</label><input id="u" name="user">
<label for="p">Password</label><input id="p" type="password" name="pw"><button type="submit">Sign in</button></form></main>`)
	})
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/private?"+r.URL.RawQuery, http.StatusFound) // echoes the password
	})
	site := httptest.NewServer(mux)
	defer site.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`policies:
  - id: no-private
    target: web
    when: web.url.contains("/private")
    effect: deny
    reason: private pages stay private
`), 0o600))
	ts := newServer(t, "", map[string]string{"SVC_POLICY_DIR": dir, "SVC_WEB_ALLOW_PRIVATE": strings.TrimPrefix(site.URL, "http://")})
	opened := ts.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/"}`)
	require.Equal(t, http.StatusCreated, opened.status, opened.body)
	sid, som := field(t, opened, "session", "id").(string), opened.json["som"]
	act := func(body string) response {
		return ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", "", body)
	}
	require.Equal(t, http.StatusOK, act(fmt.Sprintf(`{"action":"type","target":%q,"value":"jane"}`, elementID(t, som, "input", "User"))).status)
	typed := act(fmt.Sprintf(`{"action":"type","target":%q,"value":"hunter2"}`, elementID(t, som, "input", "Password")))
	require.Equal(t, http.StatusOK, typed.status, typed.body)
	refused := act(fmt.Sprintf(`{"action":"submit","target":%q}`, elementID(t, som, "button", "Sign in")))
	require.Equal(t, http.StatusForbidden, refused.status, refused.body)
	assert.Contains(t, refused.body, "redirect")

	trail := ts.call(t, "GET", "/api/v1/audit", "", "")
	require.Equal(t, http.StatusOK, trail.status, trail.body)
	assert.NotContains(t, trail.body, "hunter2")
	denied := 0
	for _, e := range trail.json["events"].([]any) {
		ev := e.(map[string]any)
		if ev["action"] == "web.submit" && ev["decision"] == "deny" {
			denied++
			assert.Contains(t, mustMarshal(t, ev), "/private?")
		}
	}
	assert.Equal(t, 1, denied, "one refusal, one record")
}

// A host that ends in a number but is no valid IPv4 address (a lax parser
// reads 425.510.425.510 as 169.254.169.254) is an invalid URL, 400, before
// any DNS lookup: in a fetch, a session's opening, its links, form actions
// and redirects, and the webhook_url setting.
func TestHostsEndingInANumberAre400WithoutDNS(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>Start</title><main>
<a href="http://425.510.425.510/latest/meta-data/">Metadata</a> <a href="/moved">Moved page</a>
<form action="http://1.2.3.4.5/order" method="post" aria-label="Order"><label for="q">Quantity</label><input id="q" name="quantity" value="1"><button type="submit">Send</button></form></main>`)
	})
	mux.Handle("GET /moved", http.RedirectHandler("http://0x1g.1/", http.StatusFound))
	site := httptest.NewServer(mux)
	defer site.Close()
	ts := newServer(t, bootstrap, map[string]string{"SVC_WEB_ALLOW_PRIVATE": strings.TrimPrefix(site.URL, "http://")})
	for _, path := range []string{"/api/v1/web/fetch", "/api/v1/web/sessions"} {
		res := ts.call(t, "POST", path, bootstrap, `{"url":"http://425.510.425.510/"}`)
		assert.Equal(t, http.StatusBadRequest, res.status, "%s: %s", path, res.body)
		assert.Equal(t, "invalid_url", res.errorCode(), path)
	}

	opened := ts.call(t, "POST", "/api/v1/web/sessions", bootstrap, `{"url":"`+site.URL+`/"}`)
	require.Equal(t, http.StatusCreated, opened.status, opened.body)
	sid, som := field(t, opened, "session", "id").(string), opened.json["som"]
	for name, target := range map[string]string{
		"a link":            elementID(t, som, "link", "Metadata"),
		"a form action":     formID(t, som),
		"a redirect's host": elementID(t, som, "link", "Moved"),
	} {
		action := "click"
		if strings.HasPrefix(target, "r_form") {
			action = "submit"
		}
		res := ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", bootstrap, fmt.Sprintf(`{"action":%q,"target":%q}`, action, target))
		assert.Equal(t, http.StatusBadRequest, res.status, "%s: %s", name, res.body)
		assert.Equal(t, "invalid_url", res.errorCode(), name)
		assert.Contains(t, field(t, res, "error", "message"), "ends in a number", name)
	}

	res := ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"webhook_url","value":"http://425.510.425.510/hook"}`)
	assert.Equal(t, http.StatusBadRequest, res.status, res.body)
	assert.Contains(t, field(t, res, "error", "message"), "ends in a number")
	assert.Empty(t, ts.webDNS.lookups(), "no name was sent to DNS")
}

// A web session opened through one replica is used through any other: the
// same id, page, form values and cookies, closed once for all, and idle on
// all after five minutes.
func TestWebSessionsAcrossReplicas(t *testing.T) {
	dsn, keys := storetest.DSN(t), t.TempDir()
	a, b := newReplica(t, dsn, keys, nil), newReplica(t, dsn, keys, nil)
	site := newShop(t)
	opened := a.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/"}`)
	require.Equal(t, http.StatusCreated, opened.status, opened.body)
	sid := field(t, opened, "session", "id").(string)
	page := opened.json["som"]
	act := func(ts *testServer, action, target, value string) response {
		body := fmt.Sprintf(`{"action":%q,"target":%q,"value":%q}`, action, target, value)
		return ts.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", "", body)
	}

	listed := b.call(t, "GET", "/api/v1/web/sessions", "", "")
	require.Len(t, listed.json["sessions"], 1, listed.body)
	assert.Equal(t, opened.json["session"], listed.json["sessions"].([]any)[0], "the same session on the other replica")

	typed := act(b, "type", elementID(t, page, "input", "Quantity"), "3")
	require.Equal(t, http.StatusOK, typed.status, typed.body)
	assert.Equal(t, page, typed.json["som"], "the same page, ids included")
	require.Equal(t, http.StatusOK, act(a, "select", elementID(t, page, "select", "Colour"), "blue").status)
	require.Equal(t, http.StatusOK, act(b, "click", elementID(t, page, "checkbox", "Gift"), "").status)
	submitted := act(a, "submit", formID(t, page), "")
	require.Equal(t, http.StatusOK, submitted.status, submitted.body)
	assert.Equal(t, site.URL+"/order", field(t, submitted, "result", "url"))
	order, cookie := site.lastOrder()
	assert.Equal(t, url.Values{"quantity": {"3"}, "colour": {"blue"}, "gift": {"on"}, "token": {"t-123"}}, order,
		"the values typed through each replica")
	assert.Equal(t, "c-42", cookie, "the cookie the site set when replica a opened the session")
	assert.Equal(t, site.URL+"/order", field(t, b.call(t, "GET", "/api/v1/web/sessions", "", ""), "sessions").([]any)[0].(map[string]any)["url"])
	stale := act(b, "type", elementID(t, page, "input", "Quantity"), "1")
	assert.Equal(t, http.StatusConflict, stale.status, "replica b acts on the page replica a moved to: %s", stale.body)

	require.Equal(t, http.StatusOK, b.call(t, "DELETE", "/api/v1/web/sessions/"+sid, "", "").status)
	assert.Equal(t, http.StatusNotFound, a.call(t, "POST", "/api/v1/web/sessions/"+sid+"/act", "", `{"action":"click","target":"e_x"}`).status,
		"closed through b, closed on a")

	idle := a.call(t, "POST", "/api/v1/web/sessions", "", `{"url":"`+site.URL+`/about"}`)
	require.Equal(t, http.StatusCreated, idle.status, idle.body)
	a.clock.Advance(5 * time.Minute)
	b.clock.Advance(5 * time.Minute)
	gone := b.call(t, "POST", "/api/v1/web/sessions/"+field(t, idle, "session", "id").(string)+"/act", "",
		`{"action":"click","target":"`+elementID(t, idle.json["som"], "link", "Back")+`"}`)
	assert.Equal(t, http.StatusNotFound, gone.status, gone.body)
	assert.Contains(t, gone.body, "idle")
	assert.Empty(t, a.call(t, "GET", "/api/v1/web/sessions", "", "").json["sessions"])
}
