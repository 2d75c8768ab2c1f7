package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
)

// startTimers runs the daily sweeps, on PostgreSQL the sweep of the
// shared rate-limit buckets, and with SVC_LEARNING_INTERVAL the timed
// learning passes, until Close.
func (a *App) startTimers() {
	stop := make(chan struct{})
	var timers sync.WaitGroup
	timers.Go(func() { a.sweepDaily(stop) })
	if a.Store.Engine() == store.Postgres {
		timers.Go(func() { a.sweepBuckets(stop) })
	}
	if a.Config.LearningInterval > 0 {
		timers.Go(func() { a.learnEvery(stop) })
	}
	a.pushFunc("timers", func() {
		close(stop)
		timers.Wait()
	})
}

// sweepDaily expires invites and sign-in devices and queues a retention
// sweep of every tenant a minute after the start and then once a day, until
// stop closes.
func (a *App) sweepDaily(stop <-chan struct{}) {
	wait := time.Minute
	for {
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
		wait = 24 * time.Hour
		ctx := context.Background()
		if n, err := a.Accounts.ExpireInvites(ctx); err != nil {
			a.Logger.Error("marking expired invites failed", "error", err)
		} else if n > 0 {
			a.Logger.Info("invites expired", "invites", n)
		}
		if n, err := a.devices.Expire(ctx); err != nil {
			a.Logger.Error("forgetting expired sign-in devices failed", "error", err)
		} else if n > 0 {
			a.Logger.Info("sign-in devices expired", "devices", n)
		}
		tenants, err := a.Store.TenantIDs(ctx)
		if err != nil {
			a.Logger.Error("retention: listing tenants failed", "error", err)
			continue
		}
		for _, id := range tenants {
			if _, err := a.Jobs.Enqueue(ctx, id, ledger.RetentionJob, map[string]any{}); err != nil {
				a.Logger.Error("retention: queueing a sweep failed", "tenant", id, "error", err)
			}
		}
	}
}

// bucketSweep is how often a replica deletes the shared rate-limit buckets
// that are full again, which keeps the table to the callers of the last
// minutes. Every replica sweeps: a sweep is one statement, and sweeps that
// meet delete nothing twice.
const bucketSweep = time.Minute

// sweepBuckets deletes the full shared rate-limit buckets every
// bucketSweep, until stop closes.
func (a *App) sweepBuckets(stop <-chan struct{}) {
	tick := time.NewTicker(bucketSweep)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if _, err := a.Store.SweepBuckets(context.Background(), a.now()); err != nil {
			a.Logger.Error("sweeping the rate-limit buckets failed", "error", err)
		}
	}
}

// learnEvery queues a learning pass of every tenant each
// SVC_LEARNING_INTERVAL, until stop closes. A tenant whose previous pass is
// still queued is not queued again.
func (a *App) learnEvery(stop <-chan struct{}) {
	tick := time.NewTicker(a.Config.LearningInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx := context.Background()
		tenants, err := a.Store.TenantIDs(ctx)
		if err != nil {
			a.Logger.Error("learning: listing tenants failed", "error", err)
			continue
		}
		for _, id := range tenants {
			if l, err := a.Jobs.List(ctx, id, jobs.Filter{Status: jobs.Queued, Limit: jobs.MaxLimit}); err == nil && queuedPass(l.Jobs) {
				continue
			}
			if _, err := a.Jobs.Enqueue(ctx, id, learning.JobType, learning.JobPayload{Trigger: learning.TriggerTimer}); err != nil {
				a.Logger.Error("learning: queueing a pass failed", "tenant", id, "error", err)
			}
		}
	}
}

func queuedPass(js []jobs.Job) bool {
	for _, j := range js {
		if j.Type == learning.JobType {
			return true
		}
	}
	return false
}

// servePprof serves Go's profiler on its own listener, apart from the API,
// until Close.
func (a *App) servePprof(addr string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			a.Logger.Error("profiler stopped", "addr", addr, "error", err)
		}
	}()
	a.pushFunc("pprof", func() { _ = srv.Close() })
	a.Logger.Warn("Go profiler served without authentication", "addr", addr)
}
