package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/errs"
)

// Record is a run with its events, ready to store: events numbered and
// chained, Head their last link.
type Record struct {
	Run    *Run
	Events []Event
	Head   Head
	// Standing is the run's agent's standing after the run's verdicts;
	// nil leaves it as it was.
	Standing *Standing

	explanation []byte // Run.Explanation as JSON, once encoded
}

// ExplanationJSON returns the run's route explanation as JSON, encoding it
// once however many times it is asked for.
func (r *Record) ExplanationJSON() ([]byte, error) {
	if r.explanation == nil {
		b, err := json.Marshal(r.Run.Explanation)
		if err != nil {
			return nil, fmt.Errorf("encode explanation of %s: %w", r.Run.ID, err)
		}
		r.explanation = b
	}
	return r.explanation, nil
}

// NewRecord chains events onto a new run. Event payloads must already be
// canonical (see Canonical); events without a time get at.
func NewRecord(run *Run, events []Event, at time.Time) *Record {
	head := chain(Seed(run.TenantID, run.ID), 0, events, at)
	run.EventCount = len(events)
	return &Record{Run: run, Events: events, Head: Head{Count: len(events), Hash: head}}
}

// Recorder records runs. Record appends the run to the journal and returns:
// from then on the run survives the process being killed. A background
// writer moves journaled runs into the store in batches, off the request's
// path; readers that must see every acknowledged run call Sync first.
type Recorder struct {
	store  Store
	logger hclog.Logger

	lock *os.File // held while the recorder is open: one process per journal

	mu        sync.Mutex
	journal   *journal
	pending   []*Record
	appended  uint64        // runs journaled since start
	stored    uint64        // of those, runs the writer is done with
	storedNow chan struct{} // closed and replaced each time stored moves
	closed    bool

	poke   chan struct{} // a run is pending
	urgent chan struct{} // a reader waits in Sync
	stop   chan struct{}
	exited chan struct{}
}

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("ledger: recorder closed")

// gather is how long the writer lets runs gather before it stores them:
// a transaction of many runs costs little more than one of a single run.
// A reader in Sync cuts it short.
const gather = 5 * time.Millisecond

// retryStore is how long the writer waits before trying a store that
// refused a whole batch again.
const retryStore = time.Second

// NewRecorder opens the journal in dir, stores whatever runs an earlier
// process journaled but did not store, and starts the writer.
func NewRecorder(ctx context.Context, store Store, dir string, logger hclog.Logger) (*Recorder, error) {
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	if err := restore(ctx, store, dir, logger); err != nil {
		lock.Close()
		return nil, fmt.Errorf("journal %s: %w", dir, err)
	}
	j, err := openJournal(dir)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("journal %s: %w", dir, err)
	}
	r := &Recorder{store: store, logger: logger, journal: j, lock: lock, storedNow: make(chan struct{}),
		poke: make(chan struct{}, 1), urgent: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
	go r.loop()
	return r, nil
}

// restore stores the runs of the segments left in dir, skipping those
// already stored, then removes the segments. A run the store refuses for
// what it holds is logged and skipped, so that it cannot stop every start.
func restore(ctx context.Context, store Store, dir string, logger hclog.Logger) error {
	var recs []*Record
	seqs, err := replayJournal(dir, func(rec *Record) error {
		recs = append(recs, rec)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, rec := range recs {
		err := store.RestoreRuns(ctx, []*Record{rec})
		if errs.As(err) != nil {
			logger.Error("a journaled run was refused by the store and is dropped", "run", rec.Run.ID, "error", err)
		} else if err != nil {
			return err
		}
	}
	if len(recs) > 0 {
		logger.Info("stored runs from the journal", "runs", len(recs))
	}
	return remove(dir, seqs...)
}

// Record journals rec and returns once it is durable. The write is not
// tied to ctx: a run whose client went away is still recorded.
func (r *Recorder) Record(_ context.Context, rec *Record) error {
	// Encode before taking the lock, so that concurrent calls share only
	// the write itself.
	frame, err := encodeFrame(rec)
	if err != nil {
		return err
	}
	defer releaseFrame(frame)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if err := r.journal.write(*frame); err != nil {
		r.mu.Unlock()
		return err
	}
	r.pending = append(r.pending, rec)
	r.appended++
	r.mu.Unlock()
	r.wake()
	return nil
}

func (r *Recorder) wake() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Sync returns once every run recorded before the call is in the store.
func (r *Recorder) Sync(ctx context.Context) error {
	r.mu.Lock()
	target := r.appended
	for r.stored < target {
		ch := r.storedNow
		r.mu.Unlock()
		r.wake()
		select {
		case r.urgent <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-r.exited:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
	}
	r.mu.Unlock()
	return nil
}

// Close stores what is journaled and stops. Runs recorded after Close are
// refused.
func (r *Recorder) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.exited
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.journal.close(); err != nil {
		r.logger.Error("closing the run journal failed", "error", err)
	}
	r.lock.Close()
}

func (r *Recorder) loop() {
	defer close(r.exited)
	var retry <-chan time.Time
	gathering := time.NewTimer(gather)
	gathering.Stop()
	for {
		select {
		case <-r.poke:
			gathering.Reset(gather)
			select {
			case <-gathering.C:
			case <-r.urgent:
				gathering.Stop()
			case <-r.stop:
			}
		case <-r.urgent:
		case <-retry:
		case <-r.stop:
			for r.flush() == nil && r.hasPending() {
			}
			return
		}
		retry = nil
		if err := r.flush(); err != nil {
			retry = time.After(retryStore)
		}
	}
}

func (r *Recorder) hasPending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) > 0
}

// flush moves the pending runs into the store. When the store is down the
// runs not stored stay pending and journaled, for the next try or the next
// start, and flush returns the error.
func (r *Recorder) flush() error {
	r.mu.Lock()
	batch, target := r.pending, r.appended
	r.pending = nil
	err := r.journal.rotate()
	sealed := r.journal.takeSealed()
	r.mu.Unlock()
	if err != nil {
		r.logger.Error("rotating the run journal failed", "error", err)
	}
	if len(batch) > 0 {
		if err := r.store.InsertRuns(context.Background(), batch); err != nil {
			if left, err := r.storeEach(batch); err != nil {
				r.logger.Error("storing runs failed; they stay in the journal", "runs", len(left), "error", err)
				r.mu.Lock()
				r.pending = append(left, r.pending...)
				r.journal.sealed = append(sealed, r.journal.sealed...)
				r.mu.Unlock()
				return err
			}
		}
	}
	if err := remove(r.journal.dir, sealed...); err != nil {
		r.logger.Error("removing stored journal segments failed", "error", err)
	}
	r.mu.Lock()
	r.stored = target
	close(r.storedNow)
	r.storedNow = make(chan struct{})
	r.mu.Unlock()
	return nil
}

// storeEach stores, run by run, a batch the store refused, so that one bad
// run does not hold back the others. A run refused for what it holds (the
// store says which with an errs kind) is logged and dropped; any other
// failure means the store is down, and the runs not stored are returned.
func (r *Recorder) storeEach(batch []*Record) ([]*Record, error) {
	for i, rec := range batch {
		err := r.store.InsertRuns(context.Background(), []*Record{rec})
		switch {
		case err == nil:
		case errs.As(err) != nil:
			r.logger.Error("a run was refused by the store and is dropped", "run", rec.Run.ID, "error", err)
		default:
			return batch[i:], err
		}
	}
	return nil, nil
}
