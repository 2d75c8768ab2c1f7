package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/tracing"
)

// Record is a run with its events, ready to store: events numbered and
// chained from the run's seed, Head their last link.
type Record struct {
	Run    *Run
	Events []Event
	Head   Head
	// Digest is the run's Digest, taken when the record was made; Chain
	// is the chain version its events were chained with (ChainV2, or
	// ChainV1 for a run a journal of an older build held).
	Digest Hash
	Chain  int
	// Standing is the run's agent's standing after the run's verdicts;
	// nil leaves it as it was.
	Standing *Standing

	explanation []byte // Run.Explanation as JSON, once encoded
	size        int    // bytes of its journal frame, what holding it in memory costs
}

// ExplanationJSON returns the run's route explanation as JSON, encoding it
// once however many times it is asked for.
func (r *Record) ExplanationJSON() ([]byte, error) {
	if r.explanation == nil {
		b, err := encodeExplanation(&r.Run.Explanation)
		if err != nil {
			return nil, fmt.Errorf("encode explanation of %s: %w", r.Run.ID, err)
		}
		r.explanation = b
	}
	return r.explanation, nil
}

// NewRecord chains events onto a new run, from a seed that binds the run's
// digest: the run's fields must be final. Event payloads must already be
// canonical (see CanonicalPayload); events without a time get at.
func NewRecord(run *Run, events []Event, at time.Time) *Record {
	rec := &Record{Run: run, Events: events, Chain: ChainV2}
	// An explanation that does not encode digests as empty here, and
	// fails the record at Record, which encodes it again.
	explanation, _ := rec.ExplanationJSON()
	rec.Digest = Digest(run, explanation)
	head := chain(Seed(ChainV2, run.TenantID, run.ID, rec.Digest), 0, events, at)
	run.EventCount = len(events)
	rec.Head = Head{Count: len(events), Hash: head}
	return rec
}

// Recorder records runs. Record appends the run to the journal and returns:
// from then on the run survives the process being killed. A background
// writer moves journaled runs into the store in batches, off the request's
// path; readers that must see every acknowledged run call Sync first.
//
// Concurrent Records commit as a group: the runs that come while a write
// is under way are written together, in one write (a copy into the mapped
// segment, or a pwrite), as soon as it ends. No lock is held across a
// write, so a write the kernel is slow with (the machine is busy, the disk
// flushing, a page of the mapping faulted in) delays the runs it carries
// and the group behind it, never every request queued on a mutex, each
// then writing alone.
type Recorder struct {
	store  Store
	logger hclog.Logger
	feed   *Feed

	lock *os.File // held while the recorder is open: one process per journal

	mu sync.Mutex
	// journal's file, segment number and size belong to whoever set busy
	// (a group's leader writing, or the writer emptying or sealing the
	// segment), who uses them without holding mu; its sealed list is
	// guarded by mu.
	journal   *journal
	busy      bool
	idle      *sync.Cond // on mu: busy was cleared
	group     *group     // runs waiting for the next write; nil when none
	pending   []*Record
	appended  uint64        // runs journaled since start
	stored    uint64        // of those, runs the writer is done with
	storedNow chan struct{} // closed and replaced each time stored moves
	closed    bool

	// spilled are sealed segments whose runs are held on disk only: the
	// store was down for longer than holdLimit of runs. Only the writer
	// changes it (under mu), and it stores them before anything newer.
	spilled   []uint64
	holdLimit int

	segmentLimit int64         // see the constant; a field for tests
	batchLimit   int           // see batchRuns; a field for tests
	gatherTime   time.Duration // see gather; a field for tests

	// storing is the journal bytes of the batch the writer is storing, out
	// of pending meanwhile (under mu), for Backlog.
	storing  int64
	metrics  atomic.Pointer[metrics.Metrics]
	onStored atomic.Pointer[func([]*Record)] // see OnStored

	poke   chan struct{} // a run is pending
	full   chan struct{} // batchLimit runs are pending
	urgent chan struct{} // a reader waits in Sync
	stop   chan struct{}
	exited chan struct{}

	followers sync.WaitGroup // of Replicate, ended by stop
}

// SetMetrics makes the writer record each batch it stores (its time and
// size) in m.
func (r *Recorder) SetMetrics(m *metrics.Metrics) { r.metrics.Store(m) }

// OnStored makes the writer call fn with each batch of runs once the
// store has them (nil: nobody is told). It runs on the writer, never on a
// request's path: fn must not hold it up for long, nor keep the records.
func (r *Recorder) OnStored(fn func([]*Record)) {
	if fn == nil {
		r.onStored.Store(nil)
		return
	}
	r.onStored.Store(&fn)
}

// told calls the OnStored hook with recs, stored.
func (r *Recorder) told(recs []*Record) {
	if fn := r.onStored.Load(); fn != nil && len(recs) > 0 {
		(*fn)(recs)
	}
}

// Backlog is what waits to be stored: the runs journaled and not yet in
// the store, and their journal bytes (those held on disk only, after a
// long outage of the store, by their segments' sizes).
func (r *Recorder) Backlog() (runs, bytes int64) {
	r.mu.Lock()
	runs, bytes = int64(r.appended-r.stored), r.storing
	for _, rec := range r.pending {
		bytes += int64(rec.size)
	}
	spilled := slices.Clone(r.spilled)
	r.mu.Unlock()
	for _, seq := range spilled {
		if fi, err := os.Stat(segmentPath(r.journal.dir, seq)); err == nil {
			bytes += fi.Size()
		}
	}
	return runs, bytes
}

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("ledger: recorder closed")

// gather is how long the writer lets runs gather before it stores them.
// The runs are safe in the journal meanwhile and a reader in Sync cuts it
// short, so it only decides what storing costs: per run, a transaction of
// one costs about 3.5 times as much as one of 256 (BenchmarkInsertRuns in
// internal/store), and at 100 calls a second a gather of 5 ms stored them
// one by one.
const gather = 100 * time.Millisecond

// batchRuns is how many pending runs end a gather early. A batch costs CPU
// in one burst, on one core, while requests wait for it: at 1000 calls a
// second a full gather is about 100 runs and 5 ms of CPU, and the burst
// would grow with the rate. Smaller batches cost more per run
// (BenchmarkInsertRuns, CPU a run: about 80 µs at 32, 69 at 64, 58 at
// 128, 52 at 256), so the limit is where the cost is still near the large
// batches' while the burst stays a few milliseconds.
const batchRuns = 64

// holdLimit is how many journal bytes of runs the recorder keeps in memory
// while the store refuses them; beyond it they wait on disk only, in their
// journal segments, so that a long outage costs disk rather than memory.
const holdLimit = 64 << 20

// storedChunk is how many runs read back from a spilled segment the
// OnStored hook hears of at once.
const storedChunk = 256

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
	r := &Recorder{store: store, logger: logger, feed: NewFeed(), journal: j, lock: lock, storedNow: make(chan struct{}), holdLimit: holdLimit,
		segmentLimit: segmentLimit, batchLimit: batchRuns, gatherTime: gather, poke: make(chan struct{}, 1), full: make(chan struct{}, 1), urgent: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
	r.idle = sync.NewCond(&r.mu)
	go r.loop()
	return r, nil
}

// restore stores the runs of the segments left in dir, skipping those
// already stored, a segment at a time, so that a backlog an outage left on
// disk is not read into memory whole. A run the store refuses for what it
// holds is logged and skipped, so that it cannot stop every start.
func restore(ctx context.Context, store Store, dir string, logger hclog.Logger) error {
	seqs, err := segments(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	runs := 0
	for _, seq := range seqs {
		n, err := restoreSegment(ctx, store, dir, seq, logger, nil)
		runs += n
		if err != nil {
			return err
		}
		if err := remove(dir, seq); err != nil {
			return err
		}
	}
	if runs > 0 {
		logger.Info("stored runs from the journal", "runs", runs)
	}
	return nil
}

// restoreSegment stores the runs of one segment (see restoreRun) and says
// how many it held; stored, unless nil, is called with each run it stored.
func restoreSegment(ctx context.Context, store Store, dir string, seq uint64, logger hclog.Logger, stored func(*Record)) (int, error) {
	n := 0
	err := readSegment(dir, seq, func(rec *Record) error {
		n++
		ok, err := restoreRun(ctx, store, rec, logger)
		if ok && stored != nil {
			stored(rec)
		}
		return err
	})
	return n, err
}

// restoreRun stores a run read back from the journal unless it is stored
// already, and says whether the store has it now. A run the store refuses
// for what it holds is logged and dropped; any other error means the store
// is down.
func restoreRun(ctx context.Context, store Store, rec *Record, logger hclog.Logger) (bool, error) {
	err := store.RestoreRuns(ctx, []*Record{rec})
	if errs.As(err) != nil {
		logger.Error("a journaled run was refused by the store and is dropped", "run", rec.Run.ID, "error", err)
		return false, nil
	}
	return err == nil, err
}

// group is the runs one write journals, their frames end to end.
type group struct {
	frames  *[]byte // from framePool
	recs    []*Record
	written bool       // under mu: the write is over (idle is broadcast then)
	err     error      // its error, once written
	small   [4]*Record // recs' first backing array, allocated with the group
}

// Record journals rec and returns once it is durable. The write is not
// tied to ctx: a run whose client went away is still recorded. The run is
// then published on the Feed: durable, though not yet in the store (a
// read through Service syncs first, so it finds it).
//
// The first run of a group leads it: it waits for the write under way,
// closes the group to newcomers and writes it; the others wait for it.
func (r *Recorder) Record(ctx context.Context, rec *Record) error {
	_, span := tracing.Start(ctx, "ledger.record", trace.SpanKindInternal)
	err := r.record(rec)
	if span.IsRecording() {
		attrs := tracing.NewAttrs()
		attrs.Add(tracing.RunID.String(rec.Run.ID), attribute.Int("svc.ledger.events", len(rec.Events)))
		attrs.SetOn(span)
		tracing.Error(span, err)
		span.End()
	}
	return err
}

func (r *Recorder) record(rec *Record) error {
	// Encode before taking the lock, so that concurrent calls share only
	// a copy into the group's buffer.
	frame, err := encodeFrame(rec)
	if err != nil {
		return err
	}
	rec.size = len(*frame)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		releaseFrame(frame)
		return ErrClosed
	}
	g := r.group
	lead := g == nil
	if lead {
		g = &group{frames: framePool.Get().(*[]byte)}
		g.recs = g.small[:0]
		*g.frames = (*g.frames)[:0]
		r.group = g
	}
	*g.frames = append(*g.frames, *frame...)
	g.recs = append(g.recs, rec)
	releaseFrame(frame)
	if lead {
		r.commit(g)
	}
	for !g.written {
		r.idle.Wait()
	}
	err = g.err
	r.mu.Unlock()
	if err != nil {
		return err
	}
	r.feed.Publish(rec.Run)
	return nil
}

// commit writes g, whose leader holds mu, and holds mu again when it
// returns; mu is free during the write.
func (r *Recorder) commit(g *group) {
	r.acquire()
	r.group = nil // runs from now on form the next group
	r.mu.Unlock()
	err := r.journal.write(*g.frames)
	releaseFrame(g.frames)
	r.mu.Lock()
	if err != nil {
		// A partial write would end the segment's replay early; seal it so
		// that later runs stay readable.
		err = errors.Join(err, r.journal.rotateAfterError())
	} else {
		before := len(r.pending)
		r.pending = append(r.pending, g.recs...)
		r.appended += uint64(len(g.recs))
		r.wake()
		if before < r.batchLimit && len(r.pending) >= r.batchLimit {
			signal(r.full)
		}
	}
	g.written, g.err = true, err
	r.release() // wakes the group's other runs too
}

// acquire waits, holding mu, until nobody uses the journal's file, and
// takes it. Everyone waiting on the recorder waits on idle: a group's
// leader, the runs of a group being written, the writer, Close.
func (r *Recorder) acquire() {
	for r.busy {
		r.idle.Wait()
	}
	r.busy = true
}

// release gives the journal's file back; mu is held.
func (r *Recorder) release() {
	r.busy = false
	r.idle.Broadcast()
}

// Feed is where the recorder publishes each run it journals.
func (r *Recorder) Feed() *Feed { return r.feed }

func (r *Recorder) wake() { signal(r.poke) }

// drain takes the signal waiting on ch, if any.
func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// signal sends on ch, a channel of one, unless a signal already waits.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
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

// Close ends the live streams of its Feed, stores what is journaled and
// stops. Runs recorded after Close are refused.
func (r *Recorder) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	// Groups formed before are written first, so that the writer's last
	// flush stores them.
	for r.busy || r.group != nil {
		r.idle.Wait()
	}
	r.mu.Unlock()
	r.feed.Close()
	close(r.stop)
	<-r.exited
	r.followers.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.journal.close(r.stored == r.appended); err != nil {
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
			if retry != nil {
				// The store is down: runs gather until the retry, rather
				// than each few milliseconds making a segment of their own.
				continue
			}
			r.gather(gathering)
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

// gather lets runs gather for gatherTime, or until batchLimit runs
// are pending, a reader waits in Sync or the recorder stops, whichever
// comes first.
func (r *Recorder) gather(gathering *time.Timer) {
	gathering.Reset(r.gatherTime)
	defer gathering.Stop()
	select {
	case <-gathering.C:
	case <-r.full:
	case <-r.urgent:
	case <-r.stop:
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
//
// The batch's runs are in the open segment, or in sealed ones when an
// earlier try failed. On success the sealed segments go, and the open one
// is emptied when no run came in meanwhile, or sealed once it is large
// (its stored runs are skipped by a replay).
func (r *Recorder) flush() error {
	r.mu.Lock()
	batch, target := r.pending, r.appended
	r.pending = nil
	drain(r.full) // the runs it told of are in this batch
	for _, rec := range batch {
		r.storing += int64(rec.size)
	}
	sealed := r.journal.takeSealed()
	r.mu.Unlock()
	err := r.restoreSpilled()
	if err == nil && len(batch) > 0 {
		start := time.Now()
		err = r.store.InsertRuns(context.Background(), batch)
		r.metrics.Load().BatchWritten(time.Since(start), len(batch), err)
		if err == nil {
			r.told(batch)
		} else {
			batch, err = r.storeEach(batch)
		}
	}
	if err != nil {
		r.hold(batch, sealed, err)
		return err
	}
	if err := remove(r.journal.dir, sealed...); err != nil {
		r.logger.Error("removing stored journal segments failed", "error", err)
	}
	r.mu.Lock()
	// With the file taken no run is written, so appended stays as read
	// here until the segment is emptied or sealed, outside mu: runs keep
	// gathering into the next group meanwhile.
	r.acquire()
	stored, large := r.appended == target, r.journal.size >= r.segmentLimit
	r.mu.Unlock()
	seal, jerr := r.journal.afterStore(stored, large)
	r.mu.Lock()
	r.journal.sealed = append(r.journal.sealed, seal...)
	r.release()
	r.stored, r.storing = target, 0
	close(r.storedNow)
	r.storedNow = make(chan struct{})
	r.mu.Unlock()
	if jerr != nil {
		r.logger.Error("reusing the run journal's segment failed", "error", jerr)
	}
	return nil
}

// hold keeps the runs of a batch the store refused for the next try: in
// memory, with the segments they are in, or, once the runs held would pass
// holdLimit, on disk only, in those segments, which the next try reads back.
// It seals the open segment first, which holds the batch's newest runs and
// any that came in since; those join the batch, so that what is held is
// exactly what the sealed segments hold that the store lacks. Runs stay in
// memory when the journal could not seal its segment: a segment still open
// is not one to read back.
func (r *Recorder) hold(batch []*Record, sealed []uint64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.storing = 0 // the batch is pending again, or spilled
	r.acquire()
	rerr := r.journal.rotate()
	r.release()
	rotated := rerr == nil
	if !rotated {
		r.logger.Error("sealing the run journal's segment failed", "error", rerr)
	}
	sealed = append(sealed, r.journal.takeSealed()...)
	batch = append(batch, r.pending...)
	r.pending = nil
	size := 0
	for _, rec := range batch {
		size += rec.size
	}
	if rotated && (size > r.holdLimit || len(r.spilled) > 0) {
		// Once runs wait on disk, newer ones join them there, so that they
		// reach the store in the order they came.
		r.spilled = append(r.spilled, sealed...)
		r.logger.Error("storing runs failed; they wait in the journal on disk", "runs", len(batch), "error", err)
		return
	}
	r.logger.Error("storing runs failed; they stay in the journal", "runs", len(batch), "error", err)
	r.pending = batch
	r.journal.sealed = sealed
}

// restoreSpilled stores the runs of the segments held on disk only, oldest
// first, removing each segment once its runs are stored.
func (r *Recorder) restoreSpilled() error {
	ctx := context.Background()
	for {
		r.mu.Lock()
		if len(r.spilled) == 0 {
			r.mu.Unlock()
			return nil
		}
		seq := r.spilled[0]
		r.mu.Unlock()
		// The hook hears of the segment's runs a chunk at a time, rather
		// than one by one or all held in memory.
		var stored []*Record
		_, err := restoreSegment(ctx, r.store, r.journal.dir, seq, r.logger, func(rec *Record) {
			if stored = append(stored, rec); len(stored) == storedChunk {
				r.told(stored)
				stored = stored[:0]
			}
		})
		r.told(stored)
		if err != nil {
			return err
		}
		if err := remove(r.journal.dir, seq); err != nil {
			r.logger.Error("removing a stored journal segment failed", "error", err)
		}
		r.mu.Lock()
		r.spilled = r.spilled[1:]
		r.mu.Unlock()
	}
}

// storeEach stores, run by run, a batch the store refused, so that one bad
// run does not hold back the others. A run refused for what it holds (the
// store says which with an errs kind) is logged and dropped; any other
// failure means the store is down, and the runs not stored are returned
// with it.
func (r *Recorder) storeEach(batch []*Record) ([]*Record, error) {
	var stored []*Record
	defer func() { r.told(stored) }()
	for i, rec := range batch {
		err := r.store.InsertRuns(context.Background(), []*Record{rec})
		switch {
		case err == nil:
			stored = append(stored, rec)
		case errs.As(err) != nil:
			r.logger.Error("a run was refused by the store and is dropped", "run", rec.Run.ID, "error", err)
		default:
			return batch[i:], err
		}
	}
	return nil, nil
}
