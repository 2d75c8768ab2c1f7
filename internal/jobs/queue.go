package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/tracing"
)

// Handler does one job's work. A nil error is success; an error wrapped by
// Permanent fails the job at once; any other error is retried with backoff
// until the job's attempts are spent. ctx ends at the queue's timeout.
type Handler func(ctx context.Context, j Job) error

// Defaults of Options.
const (
	DefaultWorkers      = 2
	DefaultPollInterval = time.Second
	DefaultTimeout      = 30 * time.Second
	DefaultMaxAttempts  = 5
	// DefaultLease is how long a claim holds a job without being renewed.
	// Renewed every third of it, a lease lapses only when its process has
	// missed two renewals: it stopped, or lost the database.
	DefaultLease = 30 * time.Second
)

// MaxPayloadBytes bounds a job's JSON payload.
const MaxPayloadBytes = 256 << 10

// maxErrorBytes bounds the lastError kept for a job.
const maxErrorBytes = 1000

// DefaultBackoff waits about 1s after the first failed attempt, then 2s, 4s
// and so on, at most 5 minutes.
var DefaultBackoff = Exponential(time.Second, 5*time.Minute)

// Exponential returns a backoff of base·2^(attempt-1) after attempt
// (counted from 1), at most ceiling, less up to a fifth at random so that
// jobs that failed together do not all retry at the same instant.
func Exponential(base, ceiling time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		d := base
		for i := 1; i < attempt && d < ceiling; i++ {
			d *= 2
		}
		d = min(d, ceiling)
		return d - time.Duration(rand.Float64()*float64(d)/5)
	}
}

// Options tune a Queue. Zero values take the defaults.
type Options struct {
	Workers      int           // concurrent handlers; DefaultWorkers
	PollInterval time.Duration // how often idle workers look for due jobs; DefaultPollInterval
	Timeout      time.Duration // how long one attempt may run; DefaultTimeout
	MaxAttempts  int           // attempts of a new job; DefaultMaxAttempts
	// Backoff is the wait after failed attempt n (from 1) before the next;
	// DefaultBackoff.
	Backoff func(attempt int) time.Duration
	Now     func() time.Time // the clock; time.Now
	Logger  hclog.Logger     // nil discards
	// Metrics counts the failed attempts; nil counts nothing.
	Metrics *metrics.Metrics
	// Tracer starts each attempt's span, the root of its own trace ("job
	// webhook.deliver"); nil traces nothing.
	Tracer trace.Tracer
	// Lease is how long a claim holds a running job unless renewed;
	// DefaultLease. A shared store measures it by its own clock (the
	// database's), so the processes' clocks need not agree.
	Lease time.Duration
	// Owner names this process in the leases it holds; by default the
	// host name, process id and a random suffix.
	Owner string
	// Shared says other processes serve the same store (PostgreSQL
	// replicas): Start then leaves running jobs to their leases, since
	// they may be a live process's. Otherwise Start queues again every job
	// left running.
	Shared bool
}

// Queue runs jobs from a Store with a small pool of workers.
type Queue struct {
	store Store
	opts  Options
	log   hclog.Logger

	mu       sync.RWMutex
	handlers map[string]Handler

	poke      chan struct{} // a job may be due: wake a worker
	stop      chan struct{}
	closeOnce sync.Once
	stopBeat  sync.Once
	started   atomic.Bool
	workers   sync.WaitGroup

	// running counts the attempts in flight, whose leases the heartbeat
	// renews; the heartbeat stops after the workers, once their attempts
	// are recorded.
	running  atomic.Int64
	beatStop chan struct{}
	beat     sync.WaitGroup
}

// New returns a queue over store. Register handlers, then Start the workers
// (or drive the queue with RunDue in tests).
func New(store Store, opts Options) *Queue {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Owner == "" {
		opts.Owner = processName()
	}
	return &Queue{
		store: store, opts: opts, log: opts.Logger,
		handlers: map[string]Handler{},
		poke:     make(chan struct{}, opts.Workers),
		stop:     make(chan struct{}),
		beatStop: make(chan struct{}),
	}
}

// Register makes h the handler of jobs of type typ. Only registered types
// are enqueued and claimed, so a job of a type this build does not know
// waits instead of failing. It panics on an empty type, a nil handler or a
// type registered twice: those are wiring mistakes.
func (q *Queue) Register(typ string, h Handler) {
	if typ == "" || h == nil {
		panic("jobs: Register needs a type and a handler")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, dup := q.handlers[typ]; dup {
		panic("jobs: handler for " + typ + " registered twice")
	}
	q.handlers[typ] = h
	q.opts.Metrics.KnownJobType(typ)
}

func (q *Queue) handler(typ string) Handler {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.handlers[typ]
}

func (q *Queue) types() []string {
	q.mu.RLock()
	defer q.mu.RUnlock()
	types := make([]string, 0, len(q.handlers))
	for t := range q.handlers {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}

func (q *Queue) now() time.Time { return q.opts.Now().UTC().Truncate(time.Millisecond) }

// Enqueue stores a job of type typ for the tenant with payload encoded as
// JSON, due at once, and wakes a worker. It fails when typ has no handler,
// the payload does not encode or is larger than MaxPayloadBytes, or the
// store fails (errs.NotFound for an unknown tenant).
func (q *Queue) Enqueue(ctx context.Context, tenantID, typ string, payload any) (Job, error) {
	return q.enqueue(ctx, tenantID, typ, "", payload)
}

func (q *Queue) enqueue(ctx context.Context, tenantID, typ, onceKey string, payload any) (Job, error) {
	if tenantID == "" {
		return Job{}, errors.New("jobs: enqueue without a tenant")
	}
	if q.handler(typ) == nil {
		return Job{}, fmt.Errorf("jobs: no handler registered for type %q", typ)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: encode %s payload: %w", typ, err)
	}
	if len(raw) > MaxPayloadBytes {
		return Job{}, fmt.Errorf("jobs: %s payload of %d bytes is over the %d-byte limit", typ, len(raw), MaxPayloadBytes)
	}
	now := q.now()
	j := Job{
		ID: ids.Ordered("job", now), TenantID: tenantID, Type: typ, Payload: raw,
		Status: Queued, MaxAttempts: q.opts.MaxAttempts, RunAt: now, CreatedAt: now, UpdatedAt: now, OnceKey: onceKey,
	}
	if err := q.store.InsertJob(ctx, &j); err != nil {
		return Job{}, err
	}
	q.wake()
	return j, nil
}

// EnqueueOnce is Enqueue for work that must be queued once, whichever
// process asks first: key names it among the tenant's jobs (say, the day
// of a daily sweep), and a job with the same key, in whatever state,
// leaves this one unqueued, queued false.
func (q *Queue) EnqueueOnce(ctx context.Context, tenantID, typ, key string, payload any) (j Job, queued bool, err error) {
	if key == "" {
		return Job{}, false, errors.New("jobs: enqueue once without a key")
	}
	j, err = q.enqueue(ctx, tenantID, typ, key, payload)
	if errs.KindOf(err) == errs.Conflict {
		return Job{}, false, nil
	}
	return j, err == nil, err
}

// wake tells one idle worker to look for due jobs; it never blocks.
func (q *Queue) wake() {
	select {
	case q.poke <- struct{}{}:
	default:
	}
}

// Get returns one of the tenant's jobs. Returns errs.NotFound for an
// unknown id or another tenant's job.
func (q *Queue) Get(ctx context.Context, tenantID, id string) (Job, error) {
	if !ids.Valid("job", id) {
		return Job{}, errs.NotFoundf("job not found")
	}
	return q.store.Job(ctx, tenantID, id)
}

// List returns the tenant's jobs matching f, newest first, with the counts
// per state of all the tenant's jobs. Returns errs.Invalid for a bad filter.
func (q *Queue) List(ctx context.Context, tenantID string, f Filter) (Listing, error) {
	if err := f.Validate(); err != nil {
		return Listing{}, err
	}
	jobs, stats, err := q.store.ListJobs(ctx, tenantID, f)
	if err != nil {
		return Listing{}, err
	}
	return Listing{Jobs: jobs, Stats: stats}, nil
}

// Depth counts every tenant's jobs per state: queued and running
// (metrics.JobStates), for the queue depth gauge.
func (q *Queue) Depth(ctx context.Context) (map[string]int, error) {
	st, err := q.store.CountJobs(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]int{Queued: st.Queued, Running: st.Running}, nil
}

// Recover queues again the jobs a stopped process left running: their
// attempt was interrupted and counts as failed (for good, when it was the
// last). Unless the queue is Shared that is every running job, and it must
// run before any worker of this process does, as Start calls it; a Shared
// queue takes only the jobs whose lease has lapsed, which it may do at any
// time (Heartbeat does).
func (q *Queue) Recover(ctx context.Context) (requeued, failed int, err error) {
	return q.recover(ctx, !q.opts.Shared)
}

func (q *Queue) recover(ctx context.Context, all bool) (requeued, failed int, err error) {
	again, lost, err := q.store.RequeueRunningJobs(ctx, q.now(), all)
	if err != nil {
		return 0, 0, fmt.Errorf("jobs: recover interrupted jobs: %w", err)
	}
	for _, typ := range again {
		q.opts.Metrics.JobFailed(typ, false)
	}
	for _, typ := range lost {
		q.opts.Metrics.JobFailed(typ, true)
	}
	requeued, failed = len(again), len(lost)
	if requeued+failed > 0 {
		q.log.Info("recovered jobs interrupted by a stop", "requeued", requeued, "failed", failed)
		q.wake()
	}
	return requeued, failed, nil
}

// Heartbeat renews the leases of the jobs this process runs and, in a
// Shared queue, queues again the jobs whose lease has lapsed (their
// process died; where one process serves the store, Start took them). The
// started queue calls it every third of Options.Lease; tests call it with
// their clock.
func (q *Queue) Heartbeat(ctx context.Context) error {
	if q.running.Load() > 0 {
		if err := q.store.RenewJobs(ctx, q.opts.Owner, q.now(), q.opts.Lease); err != nil {
			return fmt.Errorf("jobs: renew leases: %w", err)
		}
	}
	if !q.opts.Shared {
		return nil
	}
	_, _, err := q.recover(ctx, false)
	return err
}

func (q *Queue) heartbeat() {
	defer q.beat.Done()
	tick := time.NewTicker(q.opts.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-q.beatStop:
			return
		case <-tick.C:
		}
		if err := q.Heartbeat(context.Background()); err != nil {
			q.log.Error("job queue", "error", err)
		}
	}
}

// processName names this process in the leases it holds: host, process
// id, and a random part, since hosts and ids repeat across containers.
func processName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), ids.New("p")[2:10])
}

// Start recovers interrupted jobs and starts the workers and the
// heartbeat (every third of Options.Lease). Each worker runs due jobs one
// at a time; it wakes on Enqueue and otherwise every PollInterval. Call it once, after the handlers are registered; a second
// call fails, since recovering again would requeue the jobs in flight.
func (q *Queue) Start(ctx context.Context) error {
	if !q.started.CompareAndSwap(false, true) {
		return errors.New("jobs: the queue is already started")
	}
	if _, _, err := q.Recover(ctx); err != nil {
		return err
	}
	for range q.opts.Workers {
		q.workers.Add(1)
		go q.work()
	}
	q.beat.Add(1)
	go q.heartbeat()
	return nil
}

// Close stops the workers and waits for the attempts in flight to finish and
// be recorded; an attempt is bounded by Options.Timeout. Jobs still queued
// stay in the store for the next start.
func (q *Queue) Close() {
	q.closeOnce.Do(func() { close(q.stop) })
	q.workers.Wait()
	q.stopBeat.Do(func() { close(q.beatStop) })
	q.beat.Wait()
}

func (q *Queue) work() {
	defer q.workers.Done()
	tick := time.NewTicker(q.opts.PollInterval)
	defer tick.Stop()
	ctx := context.Background()
	for {
		select {
		case <-q.stop:
			return
		default:
		}
		ran, err := q.runOne(ctx)
		if err != nil {
			q.log.Error("job queue", "error", err)
		}
		if ran {
			continue
		}
		select {
		case <-q.stop:
			return
		case <-q.poke:
		case <-tick.C:
		}
	}
}

// RunDue runs due jobs one after another in the calling goroutine until none
// is due, and returns how many attempts it ran. Tests use it with an
// injected clock; workers may run beside it.
func (q *Queue) RunDue(ctx context.Context) (int, error) {
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		ran, err := q.runOne(ctx)
		if ran {
			n++
		}
		if err != nil || !ran {
			return n, err
		}
	}
}

// runOne claims one due job, runs it and records the outcome. ran is false
// when no job was due.
func (q *Queue) runOne(ctx context.Context) (ran bool, err error) {
	types := q.types()
	if len(types) == 0 {
		return false, nil
	}
	q.running.Add(1)
	defer q.running.Add(-1)
	j, ok, err := q.store.ClaimJob(ctx, types, q.now(), q.opts.Owner, q.opts.Lease)
	if err != nil || !ok {
		return false, err
	}
	// There may be more: let an idle worker look while this one is busy.
	q.wake()
	ctx, span := q.startSpan(ctx, j)
	herr := q.call(ctx, j)
	j = q.settle(j, herr, q.now())
	if herr != nil {
		q.opts.Metrics.JobFailed(j.Type, j.Status == Failed)
	}
	endSpan(span, j, herr)
	// The outcome is recorded even when ctx has ended meanwhile.
	if err := q.store.FinishJob(context.WithoutCancel(ctx), &j); err != nil {
		if errs.KindOf(err) == errs.NotFound {
			// Its lease lapsed and another process has it now.
			return true, fmt.Errorf("job %s: its lease lapsed during the attempt and it was queued again; this outcome (%s) is dropped", j.ID, j.Status)
		}
		return true, fmt.Errorf("record outcome of job %s: %w", j.ID, err)
	}
	q.logOutcome(j, herr)
	return true, nil
}

// startSpan starts the span of j's attempt, a trace of its own: a job
// runs apart from the request that queued it.
func (q *Queue) startSpan(ctx context.Context, j Job) (context.Context, trace.Span) {
	if q.opts.Tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return q.opts.Tracer.Start(ctx, "job "+j.Type, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrJobID.String(j.ID), attrJobType.String(j.Type), attrJobAttempt.Int(j.Attempts),
			tracing.TenantID.String(j.TenantID)))
}

// endSpan ends an attempt's span with the job's status after it.
func endSpan(span trace.Span, j Job, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrJobStatus.String(j.Status))
	if err != nil {
		tracing.Fail(span, "job_failed", errorText(err))
	}
	span.End()
}

// The attributes of a job's span.
const (
	attrJobID      = attribute.Key("svc.job.id")
	attrJobType    = attribute.Key("svc.job.type")
	attrJobAttempt = attribute.Key("svc.job.attempt")
	attrJobStatus  = attribute.Key("svc.job.status")
)

// call runs j's handler with the attempt timeout; a panic is a permanent
// failure.
func (q *Queue) call(ctx context.Context, j Job) (err error) {
	h := q.handler(j.Type)
	if h == nil { // claimed types always have one; be safe anyway
		return Permanent(fmt.Errorf("no handler for job type %q", j.Type))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.opts.Timeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			q.log.Error("job handler panicked", "job", j.ID, "type", j.Type, "panic", v, "stack", string(debug.Stack()))
			err = Permanent(fmt.Errorf("handler panicked: %v", v))
		}
	}()
	err = h(ctx, j)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		err = fmt.Errorf("attempt timed out after %s: %w", q.opts.Timeout, err)
	}
	return err
}

// settle returns j after an attempt that ended with err at now.
func (q *Queue) settle(j Job, err error, now time.Time) Job {
	j.UpdatedAt = now
	switch {
	case err == nil:
		j.Status = Succeeded
	case errors.Is(err, ErrPermanent) || j.Attempts >= j.MaxAttempts:
		j.Status = Failed
		j.LastError = errorText(err)
	default:
		j.Status = Queued
		j.LastError = errorText(err)
		j.RunAt = now.Add(q.opts.Backoff(j.Attempts)).Truncate(time.Millisecond)
	}
	return j
}

func (q *Queue) logOutcome(j Job, err error) {
	args := []any{"job", j.ID, "type", j.Type, "tenant", j.TenantID, "attempt", j.Attempts, "of", j.MaxAttempts}
	switch j.Status {
	case Succeeded:
		q.log.Debug("job succeeded", args...)
	case Queued:
		q.log.Warn("job attempt failed; will retry", append(args, "retry_at", j.RunAt, "error", j.LastError)...)
	case Failed:
		q.log.Error("job failed", append(args, "permanent", errors.Is(err, ErrPermanent), "error", j.LastError)...)
	}
}

// errorText is err's text, bounded and valid UTF-8.
func errorText(err error) string {
	s := err.Error()
	if len(s) > maxErrorBytes {
		s = s[:maxErrorBytes] + "…"
	}
	return strings.ToValidUTF8(s, "")
}
