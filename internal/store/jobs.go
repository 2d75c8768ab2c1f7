package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/jobs"
)

var _ jobs.Store = (*Store)(nil)

const jobColumns = `id, tenant_id, type, payload, status, attempts, max_attempts, last_error, run_at, created_at, updated_at, owner`

// InsertJob stores a new job.
func (s *Store) InsertJob(ctx context.Context, j *jobs.Job) error {
	return s.tx(ctx, func(tx *txn) error {
		var once any
		if j.OnceKey != "" {
			once = j.OnceKey
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO jobs (`+jobColumns+`, once_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.ID, j.TenantID, j.Type, string(j.Payload), j.Status, j.Attempts, j.MaxAttempts, j.LastError,
			j.RunAt.UnixMilli(), j.CreatedAt.UnixMilli(), j.UpdatedAt.UnixMilli(), j.Owner, once)
		return formatError(err)
	})
}

// ClaimJob takes the earliest due queued job of one of types, marks it
// running, leased to owner, and counts the attempt. A read on the read
// pool first checks that something is due, so idle workers polling do not
// take the single writer (SQLite) or lock rows (PostgreSQL).
//
// On SQLite the claim is one write transaction of the single writer. On
// PostgreSQL it is one statement whose choice locks the row FOR UPDATE
// SKIP LOCKED: concurrent claims, from this replica or another, each take
// a different job, none waits for another, and none fails to serialize;
// its lease ends lease after the database's clock (see leaseEnd).
func (s *Store) ClaimJob(ctx context.Context, types []string, now time.Time, owner string, lease time.Duration) (jobs.Job, bool, error) {
	if len(types) == 0 {
		return jobs.Job{}, false, nil
	}
	in := strings.Repeat("?, ", len(types)-1) + "?"
	due := `SELECT seq FROM jobs WHERE status = 'queued' AND run_at <= ? AND type IN (` + in + `) ORDER BY run_at, seq LIMIT 1`
	args := make([]any, 0, len(types)+4)
	args = append(args, now.UnixMilli())
	for _, t := range types {
		args = append(args, t)
	}
	var seq int64
	err := s.read.QueryRowContext(ctx, due, args...).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Job{}, false, nil
	}
	if err != nil {
		return jobs.Job{}, false, err
	}

	end, endArg := s.leaseEnd(now, lease)
	claim := `UPDATE jobs SET status = 'running', attempts = attempts + 1, updated_at = ?, owner = ?, lease_until = ` + end + `
		WHERE seq = (` + due + s.sql("", " FOR UPDATE SKIP LOCKED") + `)
		RETURNING ` + jobColumns
	args = append([]any{now.UnixMilli(), owner, endArg}, args...)
	if s.engine == Postgres {
		// One statement in its own READ COMMITTED transaction: the lock
		// it takes is what makes the claim exclusive.
		j, err := scanJob(s.write.QueryRowContext(ctx, claim, args...))
		if errors.Is(err, sql.ErrNoRows) {
			return jobs.Job{}, false, nil
		}
		return j, err == nil, err
	}
	var (
		j  jobs.Job
		ok bool
	)
	err = s.tx(ctx, func(tx *txn) error {
		// Chosen again inside the transaction: another claim may have won.
		var err error
		j, err = scanJob(tx.QueryRowContext(ctx, claim, args...))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return err
	})
	return j, ok, err
}

// RenewJobs extends the leases of the running jobs owner holds to lease
// from now (from the database's clock on PostgreSQL).
func (s *Store) RenewJobs(ctx context.Context, owner string, now time.Time, lease time.Duration) error {
	// One statement: on PostgreSQL it takes each row's lock as it
	// updates, with no snapshot to serialize against the claims.
	end, endArg := s.leaseEnd(now, lease)
	_, err := s.write.ExecContext(ctx, `UPDATE jobs SET lease_until = `+end+` WHERE status = 'running' AND owner = ?`,
		endArg, owner)
	return err
}

// pgNowMS is PostgreSQL's clock in Unix milliseconds. Replicas measure
// leases by it, not by their own clocks, which may differ: a replica whose
// clock runs ahead would take live jobs, one behind would leave dead ones.
const pgNowMS = `(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint`

// leaseEnd is the SQL of a lease's end, lease from now, and its argument:
// the end itself on SQLite (one process, one clock), the lease added to
// the database's clock on PostgreSQL.
func (s *Store) leaseEnd(now time.Time, lease time.Duration) (string, int64) {
	if s.engine == Postgres {
		return pgNowMS + ` + ?`, lease.Milliseconds()
	}
	return `?`, now.Add(lease).UnixMilli()
}

// FinishJob records the outcome of a running job's attempt, provided it
// is still the job's latest: the attempt number tells an attempt whose
// lease lapsed from a later one the same owner claimed.
func (s *Store) FinishJob(ctx context.Context, j *jobs.Job) error {
	return s.lockedTx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, last_error = ?, run_at = ?, updated_at = ?
			WHERE tenant_id = ? AND id = ? AND status = 'running' AND owner = ? AND attempts = ?`,
			j.Status, j.LastError, j.RunAt.UnixMilli(), j.UpdatedAt.UnixMilli(), j.TenantID, j.ID, j.Owner, j.Attempts)
		if err != nil {
			return formatError(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return errs.NotFoundf("no running job %s", j.ID)
		}
		return nil
	})
}

// RequeueRunningJobs puts the jobs left running (all of them, or those
// whose lease ended before now, by the database's clock on PostgreSQL)
// back to queued, or to failed when the interrupted attempt was their
// last.
func (s *Store) RequeueRunningJobs(ctx context.Context, now time.Time, all bool) (requeued, failed []string, err error) {
	lapsed, arg := s.leaseEnd(now, 0) // a lease ending now has lapsed
	if all {
		lapsed, arg = `?`, math.MaxInt64
	}
	err = s.lockedTx(ctx, func(tx *txn) error {
		var err error
		failed, err = jobTypes(ctx, tx, `UPDATE jobs
			SET status = 'failed', updated_at = ?, owner = '',
				last_error = 'interrupted: the service stopped during attempt ' || attempts || ', the last'
			WHERE status = 'running' AND lease_until < `+lapsed+` AND attempts >= max_attempts RETURNING type`, now.UnixMilli(), arg)
		if err != nil {
			return err
		}
		requeued, err = jobTypes(ctx, tx, `UPDATE jobs
			SET status = 'queued', run_at = ?, updated_at = ?, owner = '',
				last_error = 'interrupted: the service stopped during attempt ' || attempts
			WHERE status = 'running' AND lease_until < `+lapsed+` RETURNING type`, now.UnixMilli(), now.UnixMilli(), arg)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return requeued, failed, nil
}

// jobTypes runs an update returning the type of each job it changed.
func jobTypes(ctx context.Context, tx *txn, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var types []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		types = append(types, t)
	}
	return types, rows.Err()
}

// Job returns one job of the tenant.
func (s *Store) Job(ctx context.Context, tenantID, id string) (jobs.Job, error) {
	j, err := scanJob(s.read.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant_id = ? AND id = ?`, tenantID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Job{}, errs.NotFoundf("job not found")
	}
	return j, err
}

// CountJobs counts every tenant's queued and running jobs, from the status
// index (finished ones, which only grow, are not read).
func (s *Store) CountJobs(ctx context.Context) (jobs.Stats, error) {
	var stats jobs.Stats
	rows, err := s.read.QueryContext(ctx, `SELECT status, COUNT(*) FROM jobs WHERE status IN (?, ?) GROUP BY status`,
		jobs.Queued, jobs.Running)
	if err != nil {
		return stats, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			status string
			n      int
		)
		if err := rows.Scan(&status, &n); err != nil {
			return stats, err
		}
		stats.Add(status, n)
	}
	return stats, rows.Err()
}

// ListJobs returns the tenant's jobs matching f, newest first, and the
// tenant's counts per state, from one read transaction.
func (s *Store) ListJobs(ctx context.Context, tenantID string, f jobs.Filter) (list []jobs.Job, stats jobs.Stats, err error) {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, stats, err
	}
	defer func() { _ = tx.Rollback() }()

	q := `SELECT ` + jobColumns + ` FROM jobs WHERE tenant_id = ?`
	args := []any{tenantID}
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, f.Status)
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, stats, err
	}
	defer rows.Close()
	list = []jobs.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, stats, err
		}
		list = append(list, j)
	}
	if err := rows.Err(); err != nil {
		return nil, stats, err
	}

	counts, err := tx.QueryContext(ctx, `SELECT status, COUNT(*) FROM jobs WHERE tenant_id = ? GROUP BY status`, tenantID)
	if err != nil {
		return nil, stats, err
	}
	defer counts.Close()
	for counts.Next() {
		var (
			status string
			n      int
		)
		if err := counts.Scan(&status, &n); err != nil {
			return nil, stats, err
		}
		stats.Add(status, n)
	}
	return list, stats, counts.Err()
}

func scanJob(r scanner) (jobs.Job, error) {
	var (
		j                   jobs.Job
		payload             string
		runAt, created, upd int64
	)
	err := r.Scan(&j.ID, &j.TenantID, &j.Type, &payload, &j.Status, &j.Attempts, &j.MaxAttempts, &j.LastError,
		&runAt, &created, &upd, &j.Owner)
	if err != nil {
		return jobs.Job{}, err
	}
	if !json.Valid([]byte(payload)) {
		return jobs.Job{}, fmt.Errorf("job %s: stored payload is not JSON", j.ID)
	}
	j.Payload = []byte(payload)
	j.RunAt, j.CreatedAt, j.UpdatedAt = msTime(runAt), msTime(created), msTime(upd)
	return j, nil
}
