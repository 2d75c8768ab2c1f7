// Command svc-som-external is svc's external page compiler: it renders a
// page in headless Chromium, so that what scripts draw is there, and hands
// the drawn document to svc's own SOM compiler, so that element ids agree
// between a static and a rendered snapshot of the same page.
//
// The browser's every request goes through a proxy inside this process that
// dials only what the address guard allows (see GuardProxy).
//
// Environment: SVC_CHROMIUM (the browser; else chromium, chromium-browser or
// google-chrome on PATH), SVC_WEB_ALLOW_PRIVATE (the operator's exceptions;
// no other private address is ever reached), SVC_LOG_LEVEL.
// Without a browser the plugin exits at start, and svc reports
// external: false.
package main

import (
	"net"
	"net/http"
	"os"
	"time"

	"github.com/svc-gateway/svc/pkg/chromium"
	"github.com/svc-gateway/svc/pkg/netguard"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func main() {
	log := pluginapi.Logger(pluginapi.PageCompilerName)
	path, err := chromium.Find()
	if err != nil {
		log.Error("no browser: the external page compiler cannot run", "error", err)
		os.Exit(1)
	}
	allow, err := netguard.ParseAllowlist(os.Getenv("SVC_WEB_ALLOW_PRIVATE"))
	if err != nil {
		log.Error("SVC_WEB_ALLOW_PRIVATE", "error", err)
		os.Exit(1)
	}
	// Profiles of a plugin killed with svc are left behind; they go now.
	go sweepProfiles("")
	guard := &netguard.Guard{Allow: allow}
	proxy := &GuardProxy{Guard: guard, Log: log.Named("proxy")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Error("proxy listener", "error", err)
		os.Exit(1)
	}
	go func() {
		srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
		_ = srv.Serve(ln)
	}()
	r := &Renderer{Browser: path, ProxyAddr: ln.Addr().String(), Timeout: 20 * time.Second, Settle: 500 * time.Millisecond}
	defer r.Close()
	pluginapi.ServeSOM(&Compiler{Renderer: r, Proxy: proxy, Guard: guard})
}
