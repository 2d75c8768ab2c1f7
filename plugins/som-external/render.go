package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-gateway/svc/pkg/chromium"
)

// Renderer loads pages in one headless Chromium, started on first use and
// kept for the plugin's life, one tab per page. The browser reaches the
// network only through the guard proxy: every scheme is proxied, loopback
// included, direct name resolution is disabled, and WebRTC may not send
// UDP around the proxy.
type Renderer struct {
	Browser   string        // the Chromium binary
	ProxyAddr string        // host:port of the GuardProxy
	Timeout   time.Duration // per page, load included
	Settle    time.Duration // wait after the load event for scripts to finish drawing
	// MaxTabs bounds the pages rendered at once (default 2); the others
	// wait their turn.
	MaxTabs int

	slots   chan struct{}
	once    sync.Once
	mu      sync.Mutex
	browser context.Context
	stop    func()
	profile string
}

// Rendered is a page as the browser drew it.
type Rendered struct {
	URL  string // after redirects
	HTML string // the document after its scripts ran
}

func (r *Renderer) start() (context.Context, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.browser != nil && r.browser.Err() == nil {
		return r.browser, nil
	}
	if r.stop != nil {
		r.stop()
	}
	profile, release, err := newProfile("")
	if err != nil {
		return nil, err
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromium.Options(r.Browser, profile,
		chromedp.ProxyServer("http://"+r.ProxyAddr),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("disable-features", "DnsOverHttps,Prefetch,NetworkPrediction"),
	)...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// The first action starts the browser; it lives as long as browser.
	if err := chromedp.Do(browser); err != nil {
		cancelBrowser()
		cancelAlloc()
		release()
		return nil, fmt.Errorf("start %s: %w", r.Browser, err)
	}
	r.browser, r.profile = browser, profile
	r.stop = func() {
		cancelBrowser()
		cancelAlloc()
		release()
	}
	return browser, nil
}

// profilePrefix starts the name of every browser profile folder the
// plugin makes.
const profilePrefix = "svc-som-external-"

// maxRenderedBytes bounds the drawn document read back from the browser.
const maxRenderedBytes = 10 << 20

// Render loads url in a new tab of its own browser context (no cookies,
// storage, cache or service worker shared with any other render, so one
// tenant's page never sees another's session) and returns the drawn
// document.
func (r *Renderer) Render(ctx context.Context, url string) (Rendered, error) {
	r.once.Do(func() { r.slots = make(chan struct{}, max(1, cmp.Or(r.MaxTabs, 2))) })
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-ctx.Done():
		return Rendered{}, ctx.Err()
	}
	browser, err := r.start()
	if err != nil {
		return Rendered{}, err
	}
	tab, closeTab := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer closeTab()
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	// The caller's deadline and ours, on the tab's context.
	stopOnCancel := context.AfterFunc(ctx, closeTab)
	defer stopOnCancel()
	timer := time.AfterFunc(timeout, closeTab)
	defer timer.Stop()

	if err := chromedp.Do(tab, chromedp.Navigate(url), chromedp.Sleep(r.Settle)); err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			return Rendered{}, fmt.Errorf("rendering %s took longer than %s", url, timeout)
		}
		return Rendered{}, fmt.Errorf("render %s: %w", url, err)
	}
	html, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		return Rendered{}, fmt.Errorf("read the rendered document: %w", err)
	}
	if len(html) > maxRenderedBytes {
		return Rendered{}, fmt.Errorf("the drawn document of %s is over %d bytes", url, maxRenderedBytes)
	}
	final, err := chromedp.Run(tab, chromedp.Location())
	if err != nil {
		return Rendered{}, err
	}
	return Rendered{URL: final, HTML: "<!doctype html>\n" + html}, nil
}

// Close stops the browser.
func (r *Renderer) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		r.stop()
		r.stop, r.browser = nil, nil
	}
}
