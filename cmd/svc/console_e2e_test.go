package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browsertest"
)

// What the console's browser tests share. Each view's test drives the real
// svc through the view as a person would, checks what it shows, saves a
// screenshot of it at desktop and at phone width (to test-results/
// screenshots, see browsertest.ScreenshotDir) and checks that the page logged
// no error and no Content-Security-Policy refusal.

// phoneWidth is a small phone's width in CSS pixels.
const phoneWidth = 375

// visit opens the console at route ("runs", "runs/<id>") and waits for the
// view's heading to contain heading.
func visit(b *browsertest.Browser, p *proc, route, heading string) {
	b.Navigate(p.pageURL("/#/" + route))
	b.WaitText("#view h1", heading)
	b.WaitGone("#view[aria-busy]")
}

// signIn signs in on the console's form and waits for the console.
func signIn(b *browsertest.Browser, p *proc, email, password string) {
	b.Navigate(p.pageURL("/"))
	b.Fill("#login-email", email)
	b.Fill("#login-password", password)
	b.Click("#login-submit")
	b.WaitText("#whoami", "Signed in as")
	b.WaitText("#view h1", "")
}

// shoot saves the view as name.png at desktop width and name-phone.png at
// phone width, and checks that at phone width nothing makes the page wider
// than the screen (wide tables scroll in their own box).
func shoot(t *testing.T, b *browsertest.Browser, name string) {
	t.Helper()
	b.Viewport(1280, 900)
	b.Screenshot(name)
	b.Viewport(phoneWidth, 800)
	overflow := browsertest.Run(b, chromedp.Evaluate[int](
		`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
	assert.LessOrEqual(t, overflow, 0, "the %s view is wider than a %d px phone", name, phoneWidth)
	b.Screenshot(name + "-phone")
	b.Viewport(1280, 900)
}

// In open dev mode (no users) the console opens on the overview as the admin
// of the default organization, with no sign-in form.
func TestBrowserConsoleInOpenDevMode(t *testing.T) {
	t.Parallel()
	p := start(t)
	b := browsertest.Start(t)
	b.Navigate(p.pageURL("/"))
	b.WaitText("#view h1", "Overview")
	b.WaitText("#whoami", "Open dev mode")
	assert.True(t, b.Hidden("#signed-out"), "no sign-in form in open dev mode")
	assert.True(t, b.Hidden("#sign-out"), "nobody to sign out")
	b.WaitText("#nav-list", "Runs")
	assert.True(t, b.Hidden(`#nav-list a[data-route="org"]`), "no organization page without accounts")

	// An unknown address says so and links back.
	b.Navigate(p.pageURL("/#/no-such-view"))
	b.WaitText("#view h1", "Not found")
	assert.True(t, strings.HasSuffix(b.Title(), "· svc"))
	assertNoPageErrors(t, b)
}

// gatewayChat sends a chat completion as token (none: open dev mode) with the
// given app and agent, and returns the status, the JSON answer and the
// run id.
func gatewayChat(t *testing.T, p *proc, token, app, agent, body string) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if app != "" {
		req.Header.Set("X-Svc-App", app)
	}
	if agent != "" {
		req.Header.Set("X-Svc-Agent", agent)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return res.StatusCode, out, res.Header.Get("x-svc-run-id")
}
