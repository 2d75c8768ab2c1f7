// Package chromium finds a Chromium to run headless and gives the
// chromedp allocator options to start it with: hardened, with a profile of
// the caller's, and without the background traffic (updates, sync, QUIC,
// first-run checks) that a closed network refuses. svc's external page
// compiler and its browser tests start the browser this way; so can a
// plugin of another author:
//
//	path, err := chromium.Find() // $SVC_CHROMIUM, else chromium, chromium-browser or google-chrome
//	if errors.Is(err, chromium.ErrNoBrowser) { ... }
//	alloc, cancel := chromedp.NewExecAllocator(ctx, chromium.Options(path, profileDir,
//		chromedp.ProxyServer("http://"+proxyAddr))...)
//
// The package starts nothing itself. What the browser may reach is the
// caller's to decide: give it a proxy that dials through
// github.com/svc-gateway/svc/pkg/netguard, as the external compiler does,
// before pointing it at pages a user named.
package chromium

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// EnvBrowser names the variable that points at the browser binary.
const EnvBrowser = "SVC_CHROMIUM"

// names are the browser programs looked for on PATH, in order.
var names = []string{"chromium", "chromium-browser", "google-chrome"}

// ErrNoBrowser reports that no Chromium was found.
var ErrNoBrowser = errors.New("no Chromium found")

// Find returns the path of the browser to use: SVC_CHROMIUM when set (a
// path, or a name looked up on PATH), else the first of chromium,
// chromium-browser and google-chrome found on PATH. It returns ErrNoBrowser
// when there is none.
func Find() (string, error) {
	if v := os.Getenv(EnvBrowser); v != "" {
		p, err := exec.LookPath(v)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBrowser, v, err)
		}
		return p, nil
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Options start the browser at path headless with a fresh profile in
// profileDir, and without the background connections (updates, sync,
// QUIC, first-run checks) that a closed network refuses and that would
// leave the browser's control.
//
// The browser keeps its sandbox unless svc runs as root, where Chromium
// refuses to start with it: run svc as an ordinary user to keep the pages
// it renders sandboxed.
func Options(path, profileDir string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	return append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", os.Geteuid() == 0),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profileDir),
	}, extra...)
}
