// Package browsertest drives svc's pages in a real headless Chromium, for
// tests that must prove a page works as a person would use it.
//
// The browser is found through SVC_CHROMIUM, else as chromium,
// chromium-browser or google-chrome on PATH. Without one the test is
// skipped with a message saying what to install; under CI (CI set) it fails
// instead, so that a missing browser cannot pass unnoticed.
package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/svc-gateway/svc/pkg/chromium"
)

// EnvBrowser names the variable that points at the browser binary.
const EnvBrowser = chromium.EnvBrowser

// ErrNoBrowser reports that no Chromium was found.
var ErrNoBrowser = chromium.ErrNoBrowser

// Find returns the browser to use; see chromium.Find.
func Find() (string, error) { return chromium.Find() }

// Timeout bounds each Run.
const Timeout = 30 * time.Second

// Browser is one headless Chromium with one tab, for one test.
type Browser struct {
	t   testing.TB
	ctx context.Context // the tab's

	mu      sync.Mutex
	console []string
}

// Start starts a headless Chromium with a fresh profile and opens a tab. The
// browser is closed and its profile removed when the test ends. When no
// browser is installed, the test is skipped (failed under CI).
func Start(t testing.TB) *Browser {
	t.Helper()
	path, err := Find()
	if err != nil {
		msg := fmt.Sprintf("BROWSER TESTS NOT RUN: %v. Install Chromium (Debian: apt-get install chromium) "+
			"or point %s at a Chromium or Chrome binary.", err, EnvBrowser)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	profile := t.TempDir() // removed after the browser has stopped: cleanups run last-in first-out
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromium.Options(path, profile)...)
	b := &Browser{t: t}
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first action starts the browser and opens the tab. It runs on the
	// tab's own context, not one with a deadline: the browser lives as long
	// as the context of the action that started it.
	stuck := time.AfterFunc(Timeout, cancelTab)
	err = chromedp.Do(ctx, chromedp.Navigate("about:blank"))
	stuck.Stop()
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatalf("listen to the page: %v", err)
	}
	b.ctx = ctx
	return b
}

// record keeps what the page says in its console, its uncaught exceptions
// and the browser's own log entries (Content-Security-Policy refusals and
// failed loads show there).
func (b *Browser) record(ev any) {
	var line string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		parts := make([]string, 0, len(ev.Args))
		for _, a := range ev.Args {
			if a.Value != nil {
				parts = append(parts, string(a.Value))
			} else {
				parts = append(parts, a.Description)
			}
		}
		line = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " "))
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		line = "uncaught: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			line += " " + d.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		line = fmt.Sprintf("log %s %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.console = append(b.console, line)
	b.mu.Unlock()
}

// Console returns what the page and the browser logged so far.
func (b *Browser) Console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

// Context returns the tab's context, for chromedp calls of one's own.
func (b *Browser) Context() context.Context { return b.ctx }

// Do runs actions in the tab, in order, within Timeout. A failure fails the
// test with the page's URL, its visible text and its console.
func (b *Browser) Do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(err)
	}
}

// Run runs one action that returns a value, within Timeout, failing the
// test as Do does.
func Run[T any](b *Browser, action chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		b.fail(err)
	}
	return v
}

func (b *Browser) fail(err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	url, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	b.t.Fatalf("browser: %v\nat: %s\npage text:\n%s\nconsole:\n%s", err, url, text, strings.Join(b.Console(), "\n"))
}

// Navigate opens url and waits for its load event.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	b.Do(chromedp.Navigate(url))
}

// Fill types value into the field that selector finds, replacing what it
// held.
func (b *Browser) Fill(selector, value string) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	b.Do(
		chromedp.WaitVisible(chromedp.CSS(selector)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%s).value = ''`, sel)),
		chromedp.SendKeys(chromedp.CSS(selector), value),
	)
}

// Choose picks the option labelled label in the select that selector
// finds, as a person choosing from the list would.
func (b *Browser) Choose(selector, label string) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	l, _ := json.Marshal(label)
	b.Do(
		chromedp.WaitVisible(chromedp.CSS(selector)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			const select = document.querySelector(%s);
			const option = [...select.options].find((o) => o.textContent.trim() === %s);
			if (!option) throw new Error('no option ' + %s);
			select.value = option.value;
			select.dispatchEvent(new Event('input', {bubbles: true}));
			select.dispatchEvent(new Event('change', {bubbles: true}));
		})()`, sel, l, l)),
	)
}

// Click clicks the visible element that selector finds.
func (b *Browser) Click(selector string) {
	b.t.Helper()
	b.Do(chromedp.WaitVisible(chromedp.CSS(selector)), chromedp.Click(chromedp.CSS(selector)))
}

// WaitText waits until the element that selector finds is shown (neither
// it nor an ancestor hidden) and its text contains want, and returns that
// text. It keeps waiting across a navigation, so it may follow a click that
// opens another page.
func (b *Browser) WaitText(selector, want string) string {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	w, _ := json.Marshal(want)
	return b.poll(fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		if (!el || el.closest('[hidden]')) return null;
		const text = el.textContent.replace(/\s+/g, ' ').trim();
		return text.includes(%s) ? text : null;
	})()`, sel, w), fmt.Sprintf("no shown %s containing %q", selector, want))
}

// WaitGone waits until no element matches selector: a busy mark cleared, a
// row removed.
func (b *Browser) WaitGone(selector string) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	b.poll(fmt.Sprintf(`document.querySelector(%s) === null ? 'gone' : null`, sel),
		fmt.Sprintf("%s is still there", selector))
}

// poll evaluates expr until it returns a string (not null), within Timeout,
// and returns it; else it fails the test with problem.
func (b *Browser) poll(expr, problem string) string {
	b.t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		// A poll ends with the document it runs in: poll in short turns.
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		text, err := chromedp.Run(ctx, chromedp.Poll[string](expr,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Second)))
		cancel()
		if err == nil {
			return text
		}
		if b.ctx.Err() != nil || time.Now().After(deadline) {
			b.fail(fmt.Errorf("%s: %w", problem, err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitURL waits until the tab's address satisfies ok, and returns it.
func (b *Browser) WaitURL(ok func(string) bool) string {
	b.t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		// A look taken while the tab navigates fails with its document
		// ("Inspected target navigated or closed"): look again.
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		url, err := chromedp.Run(ctx, chromedp.Location())
		cancel()
		if err == nil && ok(url) {
			return url
		}
		if b.ctx.Err() != nil || time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("the address stayed %s", url)
			}
			b.fail(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// EnvScreenshots names the variable that points at the folder screenshots
// go to; without it they go to test-results/screenshots at the module root,
// the folder CI keeps.
const EnvScreenshots = "SVC_SCREENSHOT_DIR"

// ScreenshotDir is the folder Screenshot writes to.
func ScreenshotDir() (string, error) {
	if dir := os.Getenv(EnvScreenshots); dir != "" {
		return dir, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "test-results", "screenshots"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Screenshot saves the whole page as name.png in ScreenshotDir, for a
// person to look at after the run.
func (b *Browser) Screenshot(name string) {
	b.t.Helper()
	dir, err := ScreenshotDir()
	if err != nil {
		b.fail(err)
	}
	png := Run(b, chromedp.FullScreenshot(100)) // quality 100 is PNG
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.fail(err)
	}
}

// Viewport sets the tab's size in CSS pixels: 375 wide is a phone.
func (b *Browser) Viewport(width, height int64) {
	b.t.Helper()
	b.Do(chromedp.EmulateViewport(width, height))
}

// Title returns the page's title.
func (b *Browser) Title() string {
	b.t.Helper()
	return Run(b, chromedp.Title())
}

// Value returns the value of the form field that selector finds.
func (b *Browser) Value(selector string) string {
	b.t.Helper()
	return Run(b, chromedp.Value(chromedp.CSS(selector)))
}

// Hidden reports whether the element that selector finds is hidden: absent,
// or it or an ancestor has the hidden attribute.
func (b *Browser) Hidden(selector string) bool {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	return Run(b, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		return !el || el.closest('[hidden]') !== null;
	})()`, sel)))
}

// Response is what a fetch from the page answered.
type Response struct {
	Status int            `json:"status"`
	Body   map[string]any `json:"body"`
}

// Fetch calls path from the page itself, with the page's cookies, as the
// page's own scripts do, and returns the status and the JSON body.
func (b *Browser) Fetch(method, path string) Response {
	b.t.Helper()
	m, _ := json.Marshal(method)
	p, _ := json.Marshal(path)
	expr := fmt.Sprintf(`fetch(%s, {method: %s, credentials: 'same-origin'})
		.then(async (r) => ({status: r.status, body: await r.json().catch(() => null)}))`, p, m)
	raw := Run(b, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	var res Response
	if err := json.Unmarshal(raw, &res); err != nil {
		b.fail(fmt.Errorf("decode %s: %w", raw, err))
	}
	return res
}

// Errors returns the console lines that report a problem: uncaught
// exceptions, console.error calls and the browser's error entries (a
// Content-Security-Policy refusal is one), less those the test expects (any
// line containing one of allowed). An HTTP error status is not one: the
// pages ask /api/v1/auth/me and expect a 401 when signed out.
func (b *Browser) Errors(allowed ...string) []string {
	var out []string
	for _, line := range b.Console() {
		if !strings.HasPrefix(line, "uncaught") && !strings.HasPrefix(line, "console.error") && !strings.HasPrefix(line, "log error") {
			continue
		}
		if strings.HasPrefix(line, "log error network: Failed to load resource: the server responded with a status of") {
			continue
		}
		expected := false
		for _, a := range allowed {
			expected = expected || strings.Contains(line, a)
		}
		if !expected {
			out = append(out, line)
		}
	}
	return out
}
