package ledger

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Record is a run with its events, ready to store: events numbered and
// chained, Head their last link.
type Record struct {
	Run    *Run
	Events []Event
	Head   Head
}

// NewRecord chains events onto a new run. Event payloads must already be
// canonical (see Canonical); events without a time get at.
func NewRecord(run *Run, events []Event, at time.Time) *Record {
	head := chain(Seed(run.TenantID, run.ID), 0, events, at)
	run.EventCount = len(events)
	return &Record{Run: run, Events: events, Head: Head{Count: len(events), Hash: head}}
}

// maxBatch bounds how many runs one transaction writes.
const maxBatch = 256

// Recorder writes runs in group commits: concurrent calls share one
// transaction, and each returns only once its run is committed, so an
// acknowledged run survives a crash.
type Recorder struct {
	store  Store
	logger hclog.Logger
	queue  chan *job
	stop   chan struct{}
	exited chan struct{}
	done   sync.WaitGroup
}

type job struct {
	rec  *Record
	done chan error
}

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("ledger: recorder closed")

// NewRecorder starts a recorder over store.
func NewRecorder(store Store, logger hclog.Logger) *Recorder {
	r := &Recorder{store: store, logger: logger, queue: make(chan *job, 4*maxBatch), stop: make(chan struct{}), exited: make(chan struct{})}
	r.done.Add(1)
	go r.loop()
	return r
}

// Record stores rec and returns once it is committed. The write is not tied
// to ctx: a run whose client went away is still recorded.
func (r *Recorder) Record(ctx context.Context, rec *Record) error {
	j := &job{rec: rec, done: make(chan error, 1)}
	select {
	case r.queue <- j:
	case <-r.stop:
		return ErrClosed
	}
	select {
	case err := <-j.done:
		return err
	case <-r.exited:
		select {
		case err := <-j.done:
			return err
		default:
			return ErrClosed
		}
	}
}

// Close writes what is queued and stops.
func (r *Recorder) Close() {
	close(r.stop)
	r.done.Wait()
}

func (r *Recorder) loop() {
	defer r.done.Done()
	defer close(r.exited)
	batch := make([]*job, 0, maxBatch)
	for {
		select {
		case j := <-r.queue:
			batch = append(batch[:0], j)
		case <-r.stop:
			r.drain()
			return
		}
		// Take whatever else is already waiting: that is the group commit.
	fill:
		for len(batch) < maxBatch {
			select {
			case j := <-r.queue:
				batch = append(batch, j)
			default:
				break fill
			}
		}
		r.write(batch)
	}
}

func (r *Recorder) drain() {
	for {
		select {
		case j := <-r.queue:
			r.write([]*job{j})
		default:
			return
		}
	}
}

func (r *Recorder) write(batch []*job) {
	recs := make([]*Record, len(batch))
	for i, j := range batch {
		recs[i] = j.rec
	}
	err := r.store.InsertRuns(context.Background(), recs)
	if err != nil && len(batch) > 1 {
		// One bad run must not lose the others: write them one by one.
		for _, j := range batch {
			j.done <- r.store.InsertRuns(context.Background(), []*Record{j.rec})
		}
		return
	}
	if err != nil {
		r.logger.Error("recording run failed", "run", batch[0].rec.Run.ID, "error", err)
	}
	for _, j := range batch {
		j.done <- err
	}
}
