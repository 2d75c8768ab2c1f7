// Package jobs is svc's persistent job queue: work that must happen after a
// request has been answered (webhook deliveries, later email and sweeps)
// and must survive a restart.
//
// A job is a row in the store. Enqueue writes it as queued; a worker claims
// a due job (queued, runAt reached) by marking it running and counting the
// attempt in one write transaction, so two workers never run the same job;
// the handler registered for its type runs with a timeout; the outcome is
// written back: succeeded, queued again with an exponential backoff, or
// failed once the attempts are spent or the handler returned a Permanent
// error.
//
// Several processes (replicas on one PostgreSQL database) may serve one
// queue. A claim leases the job to its process (Options.Owner) for
// Options.Lease, and the process renews the leases of the jobs it runs
// every third of that while their handlers run; the leases are measured
// by the database's clock, not the processes'. A running job whose lease
// has lapsed belongs to a process that died: any process queues it again,
// the attempt counted as failed, so it runs again elsewhere; an outcome
// its old process records after that is refused. Where one process serves
// the store (SQLite, Options.Shared false) Start queues again every job
// left running at once, as they can only be a stopped process's.
//
// Time comes from Options.Now and backoff from Options.Backoff, so tests
// drive both and call RunDue instead of waiting.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/paging"
)

// The states of a job.
const (
	Queued    = "queued"    // waiting for its runAt, or for a worker
	Running   = "running"   // claimed by a worker; the attempt is under way
	Succeeded = "succeeded" // the handler returned nil
	Failed    = "failed"    // attempts spent, or a permanent error
)

// Job is one unit of deferred work of a tenant.
type Job struct {
	ID       string `json:"id"`
	TenantID string `json:"-"`
	Type     string `json:"type"`
	// Payload is the JSON the handler reads.
	Payload     json.RawMessage `json:"payload"`
	Status      string          `json:"status"`
	Attempts    int             `json:"attempts"` // attempts started, the running one included
	MaxAttempts int             `json:"maxAttempts"`
	// LastError is the most recent failure's text, kept when a later attempt
	// succeeds; empty when no attempt failed.
	LastError string    `json:"lastError"`
	RunAt     time.Time `json:"runAt"` // when the next attempt may start
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Owner is the process running the job, while it runs.
	Owner string `json:"-"`
	// OnceKey, when set, names the job among its tenant's: a second job
	// with the same key is not stored (EnqueueOnce).
	OnceKey string `json:"-"`
}

// Stats counts a tenant's jobs per state.
type Stats struct {
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
}

// Add counts n jobs in status.
func (s *Stats) Add(status string, n int) {
	switch status {
	case Queued:
		s.Queued += n
	case Running:
		s.Running += n
	case Succeeded:
		s.Succeeded += n
	case Failed:
		s.Failed += n
	}
}

// Filter narrows a listing.
type Filter struct {
	Status string // empty for all
	Limit  int
}

// Page sizes of a listing.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Validate checks f and fills its default limit. Returns errs.Invalid for an
// unknown status or a negative limit.
func (f *Filter) Validate() error {
	switch f.Status {
	case "", Queued, Running, Succeeded, Failed:
	default:
		return errs.Invalidf("status", "status must be one of queued, running, succeeded, failed")
	}
	var err error
	f.Limit, err = paging.Limit(f.Limit, DefaultLimit, MaxLimit)
	return err
}

// Listing is a page of a tenant's jobs with the counts of all of them.
type Listing struct {
	Jobs  []Job `json:"jobs"`
	Stats Stats `json:"stats"`
}

// Store persists jobs. Methods that read or change one tenant's jobs take
// the tenant id and filter by it; ClaimJob, RenewJobs and
// RequeueRunningJobs serve the workers, which work for every tenant.
type Store interface {
	// InsertJob stores a new job. Returns errs.NotFound when the tenant
	// does not exist, errs.Conflict when the tenant has a job with j's
	// OnceKey already.
	InsertJob(ctx context.Context, j *Job) error
	// ClaimJob takes the queued job of one of types whose RunAt is earliest
	// and not after now, marks it running, leased to owner for lease,
	// counts the attempt and returns it, in one statement that no
	// concurrent claim, of this process or another, can also win. ok is
	// false when no job is due. A store that several processes share
	// measures leases by one clock of its own, not by now.
	ClaimJob(ctx context.Context, types []string, now time.Time, owner string, lease time.Duration) (j Job, ok bool, err error)
	// RenewJobs extends the leases of the running jobs owner holds to
	// lease from now.
	RenewJobs(ctx context.Context, owner string, now time.Time, lease time.Duration) error
	// FinishJob records the outcome of a running job's attempt: Status,
	// LastError, RunAt and UpdatedAt of j. Returns errs.NotFound when the
	// tenant has no job j.ID running its attempt j.Attempts for j.Owner
	// (its lease lapsed and it was queued again, perhaps claimed again).
	FinishJob(ctx context.Context, j *Job) error
	// RequeueRunningJobs puts running jobs back to queued, due at now,
	// with lastError saying the attempt was interrupted; a job whose
	// interrupted attempt was its last becomes failed instead. With all it
	// takes every running job, otherwise only those whose lease ended
	// before now (by the store's clock, where it keeps one). It returns the
	// types of the jobs requeued and failed, one per job.
	RequeueRunningJobs(ctx context.Context, now time.Time, all bool) (requeued, failed []string, err error)
	// Job returns one job of the tenant. Returns errs.NotFound when the
	// tenant has no job id.
	Job(ctx context.Context, tenantID, id string) (Job, error)
	// ListJobs returns the tenant's jobs matching f, newest first, and the
	// counts per state of all the tenant's jobs, read in one snapshot.
	ListJobs(ctx context.Context, tenantID string, f Filter) ([]Job, Stats, error)
	// CountJobs counts the jobs of every tenant that are queued or running
	// (finished ones, succeeded or failed, are history), for the queue's
	// depth.
	CountJobs(ctx context.Context) (Stats, error)
}

// ErrPermanent is matched with errors.Is by the errors Permanent returns.
var ErrPermanent = errors.New("permanent failure")

// Permanent marks err as not worth retrying: a handler that returns it fails
// the job at once, with err's text as lastError. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() []error { return []error{ErrPermanent, e.err} }
