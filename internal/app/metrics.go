package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// serveMetrics serves GET /metrics, and nothing else, without a credential
// on a listener of its own (SVC_METRICS_ADDR), for a scraper inside a
// private network, until Close. With the metrics off it serves nothing.
func (a *App) serveMetrics(addr string) error {
	if a.Metrics == nil {
		a.Logger.Warn("SVC_METRICS_ADDR is set but the metrics are off (SVC_METRICS=off): nothing is served there", "addr", addr)
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (SVC_METRICS_ADDR): %w", addr, err)
	}
	a.metricsAddr = ln.Addr()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.Logger.Error("metrics listener stopped", "addr", addr, "error", err)
		}
	}()
	a.pushFunc("metrics", func() { _ = srv.Close() })
	a.Logger.Info("metrics served without authentication", "addr", ln.Addr().String())
	return nil
}

// readMetrics gives the metrics read at scrape time their sources, once
// every component exists: the providers' breakers and rate limits, the job
// queue's depth, the approvals pending and the run journal's backlog.
func (a *App) readMetrics() {
	m := a.Metrics
	if m == nil {
		return
	}
	m.ReadBreakers(a.Providers.Health)
	m.ReadJobQueue(a.Jobs.Depth)
	m.ReadApprovalsPending(a.Store.CountPendingApprovals)
	m.ReadJournal(a.Recorder.Backlog)
}
