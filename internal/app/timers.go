package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
)

// startTimers runs the daily sweeps, on PostgreSQL the sweep of the
// shared rate-limit buckets, and with SVC_LEARNING_INTERVAL the timed
// learning passes, until Close. Every replica runs the timers; each round
// takes a lock the replicas share (Store.TryLock) and queues its jobs once
// per period (jobs.Queue.EnqueueOnce), so that the work is done once
// whichever replicas run.
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

// The shared locks of the timers' rounds.
const (
	sweepLock    = "timer.sweep"
	learningLock = "timer.learning"
)

// sweepDaily sweeps a minute after the start and then once a day, until
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
		a.locked(sweepLock, a.sweep)
	}
}

// locked runs round under the shared lock called name, unless another
// replica holds it (and runs the round).
func (a *App) locked(name string, round func(context.Context)) {
	ctx := context.Background()
	release, ok, err := a.Store.TryLock(ctx, name)
	if err != nil {
		a.Logger.Error("taking a timer's lock failed", "lock", name, "error", err)
		return
	}
	if !ok {
		a.Logger.Debug("another replica runs this round", "lock", name)
		return
	}
	defer release()
	round(ctx)
}

// sweep expires invites and sign-in devices and queues a retention sweep of
// every tenant: on PostgreSQL the day's, once whichever replica queues it;
// on SQLite one each round, a minute after each start and daily after.
func (a *App) sweep(ctx context.Context) {
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
		return
	}
	key := retentionKey(a.now())
	for _, id := range tenants {
		var err error
		if a.Store.Engine() == store.Postgres {
			_, _, err = a.Jobs.EnqueueOnce(ctx, id, ledger.RetentionJob, key, map[string]any{})
		} else {
			// One process: each start's first round queues a sweep.
			_, err = a.Jobs.Enqueue(ctx, id, ledger.RetentionJob, map[string]any{})
		}
		if err != nil {
			a.Logger.Error("retention: queueing a sweep failed", "tenant", id, "error", err)
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
	every(stop, bucketSweep, func() {
		if _, err := a.Store.SweepBuckets(context.Background(), a.now()); err != nil {
			a.Logger.Error("sweeping the rate-limit buckets failed", "error", err)
		}
	})
}

// retentionKey names the retention sweep of t's day (UTC).
func retentionKey(t time.Time) string {
	return ledger.RetentionJob + "/" + t.UTC().Format(time.DateOnly)
}

// learningKey names the timed learning pass of the period of t: the
// intervals counted from the Unix epoch, the same on every replica.
func learningKey(t time.Time, interval time.Duration) string {
	return learning.JobType + "/" + strconv.FormatInt(t.UnixMilli()/interval.Milliseconds(), 10)
}

// learnEvery queues a learning pass of every tenant each
// SVC_LEARNING_INTERVAL, until stop closes.
func (a *App) learnEvery(stop <-chan struct{}) {
	every(stop, a.Config.LearningInterval, func() { a.locked(learningLock, a.queueLearning) })
}

// every runs round once per period, the first a period from now, until
// stop closes.
func every(stop <-chan struct{}, period time.Duration, round func()) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			round()
		}
	}
}

// queueLearning queues the period's learning pass of every tenant, once
// whichever replica queues it. A tenant whose previous pass is still
// queued is not queued again.
func (a *App) queueLearning(ctx context.Context) {
	tenants, err := a.Store.TenantIDs(ctx)
	if err != nil {
		a.Logger.Error("learning: listing tenants failed", "error", err)
		return
	}
	key := learningKey(a.now(), a.Config.LearningInterval)
	for _, id := range tenants {
		if l, err := a.Jobs.List(ctx, id, jobs.Filter{Status: jobs.Queued, Limit: jobs.MaxLimit}); err == nil && queuedPass(l.Jobs) {
			continue
		}
		if _, _, err := a.Jobs.EnqueueOnce(ctx, id, learning.JobType, key, learning.JobPayload{Trigger: learning.TriggerTimer}); err != nil {
			a.Logger.Error("learning: queueing a pass failed", "tenant", id, "error", err)
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

// checkLedgerKey compares the ledger key with the one that signed the
// database's newest checkpoint. On PostgreSQL several replicas sign, and
// each must have the same key: a replica that made itself a new key (its
// SVC_LEDGER_KEY_FILE was missing) for a database whose checkpoints
// another key signed is refused, and the key it made removed, so that it
// is refused again until given the key. A key file that differs is a
// replaced key, or a mistake: it is logged as a warning, and the
// checkpointer refuses to take turns with a replica of another key.
func checkLedgerKey(ctx context.Context, s *store.Store, key *ledger.Key, created bool, path string, log hclog.Logger) error {
	newest, ok, err := s.NewestCheckpointKey(ctx)
	if err != nil || !ok || newest == key.ID {
		return err
	}
	if created && s.Engine() == store.Postgres {
		_ = os.Remove(path)
		return fmt.Errorf("ledger key (SVC_LEDGER_KEY_FILE): %s did not exist, and the database's checkpoints are signed with key %s: "+
			"give every replica the same key file", path, newest)
	}
	if !created {
		log.Warn("the ledger key is not the one that signed the newest checkpoint: checkpoints from now on are signed with this key; "+
			"if the key was not replaced on purpose, give every replica the same SVC_LEDGER_KEY_FILE",
			"keyId", key.ID, "previousKeyId", newest)
	}
	return nil
}
