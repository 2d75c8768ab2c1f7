package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/paging"
)

// CheckpointStore keeps the ledger's entries and checkpoints.
type CheckpointStore interface {
	// PendingEntries counts every tenant's entries after seq, up to
	// limit, and returns the time of the first of them and the highest
	// seq of all.
	PendingEntries(ctx context.Context, after int64, limit int) (count int, oldest time.Time, last int64, err error)
	// LedgerTenants returns the tenants with entries in after < seq <= upTo.
	LedgerTenants(ctx context.Context, after, upTo int64) ([]string, error)
	// Entries returns up to limit of the tenant's entries in after < seq
	// <= upTo, in order.
	Entries(ctx context.Context, tenantID string, after, upTo int64, limit int) ([]Entry, error)
	// LastCheckpoint returns the tenant's newest checkpoint; false when it
	// has none.
	LastCheckpoint(ctx context.Context, tenantID string) (Checkpoint, bool, error)
	// AddCheckpoints stores a round of checkpoints in one transaction.
	// Returns errs.Conflict when a tenant has a checkpoint of that number
	// already, storing none.
	AddCheckpoints(ctx context.Context, cps []Checkpoint) error
	// ListCheckpoints returns a page of the tenant's checkpoints, newest
	// first, and how many it has.
	ListCheckpoints(ctx context.Context, tenantID string, limit, offset int) ([]Checkpoint, int, error)
	// SealedUpTo is the highest seq any checkpoint covers: since a round
	// seals every tenant up to one seq, every entry up to it is covered.
	SealedUpTo(ctx context.Context) (int64, error)
}

// Locker takes a lock shared by every process serving the database
// (replicas on one PostgreSQL); *store.Store is one. release is nil when
// ok is false.
type Locker interface {
	TryLock(ctx context.Context, name string) (release func(), ok bool, err error)
}

// sealLock is the Locker's lock a round of checkpoints is signed under:
// one replica signs at a time, each from where the last round stopped.
const sealLock = "ledger.checkpoint"

// ErrKeyDiffers is matched by the error of a round refused because
// another replica signs with another key.
var ErrKeyDiffers = errors.New("ledger: another replica signs checkpoints with another key")

// Notifier delivers a tenant's events to its webhook; *webhook.Notifier
// is one.
type Notifier interface {
	Notify(ctx context.Context, tenantID, eventType string, data any)
}

// CheckpointerOptions configure a Checkpointer.
type CheckpointerOptions struct {
	Store CheckpointStore
	Key   *Key
	// Entries and Interval say when to sign: once Entries new ledger
	// entries wait, or once the oldest has waited Interval, whichever
	// comes first (SVC_LEDGER_CHECKPOINT_RUNS and _INTERVAL).
	Entries  int
	Interval time.Duration
	// Notifier delivers each checkpoint to its tenant's webhook; nil
	// delivers none.
	Notifier Notifier
	Logger   hclog.Logger
	Now      func() time.Time // time.Now when nil
	// Locker makes the replicas sign in turn; nil when this process is
	// the database's only one.
	Locker Locker
}

// maxCheckpointEntries bounds the entries one checkpoint covers, so that
// sealing a long backlog (a first start after an upgrade, a journal
// replayed) never holds it all in memory.
const maxCheckpointEntries = 1 << 16

// pollEvery is how often the checkpointer looks for new entries, at most:
// one read of the entries' index.
const pollEvery = time.Second

// Checkpointer signs checkpoints of every tenant's new ledger entries, in
// the background from Start to Close, and lists them. Close seals what is
// left, so that a stopped svc leaves every entry it wrote covered.
type Checkpointer struct {
	o CheckpointerOptions

	mu      sync.Mutex // one sealing at a time
	sealed  int64      // every entry up to this seq is covered by a checkpoint
	started time.Time  // a checkpoint of another key after it is another replica's

	stop   chan struct{}
	exited chan struct{}
}

// NewCheckpointer returns a checkpointer that is not started.
func NewCheckpointer(o CheckpointerOptions) *Checkpointer {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Entries <= 0 {
		o.Entries = 1
	}
	return &Checkpointer{o: o, started: o.Now()}
}

// Key is the key checkpoints are signed with.
func (c *Checkpointer) Key() *Key { return c.o.Key }

// Start looks for new entries every second, or every Interval when that is
// shorter, sealing them when they are due, until Close.
func (c *Checkpointer) Start() {
	c.stop, c.exited = make(chan struct{}), make(chan struct{})
	every := pollEvery
	if c.o.Interval > 0 && c.o.Interval < every {
		every = c.o.Interval
	}
	go func() {
		defer close(c.exited)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
			if err := c.Tick(context.Background()); err != nil {
				c.o.Logger.Error("signing a ledger checkpoint failed; trying again", "error", err)
			}
		}
	}()
}

// Close stops the background loop and seals what is left.
func (c *Checkpointer) Close() {
	if c.stop != nil {
		close(c.stop)
		<-c.exited
		c.stop = nil
	}
	if _, err := c.Seal(context.Background()); err != nil {
		c.o.Logger.Error("signing the last ledger checkpoint failed", "error", err)
	}
}

// Tick seals when enough entries wait, or the oldest has waited long
// enough; otherwise, or while another replica seals, it does nothing.
func (c *Checkpointer) Tick(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, due, err := c.due(ctx); err != nil || !due {
		return err
	} else if c.o.Locker == nil {
		_, err = c.seal(ctx, last)
		return err
	}
	release, ok, err := c.o.Locker.TryLock(ctx, sealLock)
	if err != nil || !ok {
		return err
	}
	defer release()
	// Another replica may have sealed meanwhile: start where it stopped.
	if err := c.catchUp(ctx); err != nil {
		return err
	}
	last, due, err := c.due(ctx)
	if err != nil || !due {
		return err
	}
	_, err = c.seal(ctx, last)
	return err
}

// due reports whether enough entries wait, or the oldest has waited long
// enough, and the highest seq.
func (c *Checkpointer) due(ctx context.Context) (last int64, due bool, err error) {
	count, oldest, last, err := c.o.Store.PendingEntries(ctx, c.sealed, c.o.Entries)
	switch {
	case err != nil || count == 0:
		return 0, false, err
	case count < c.o.Entries && (c.o.Interval <= 0 || c.o.Now().Sub(oldest) < c.o.Interval):
		return 0, false, nil
	}
	return last, true, nil
}

// catchUp moves sealed past what other replicas' rounds covered.
func (c *Checkpointer) catchUp(ctx context.Context) error {
	covered, err := c.o.Store.SealedUpTo(ctx)
	c.sealed = max(c.sealed, covered)
	return err
}

// sealWait bounds how long Seal waits for another replica's round.
const sealWait = 10 * time.Second

// Seal signs a checkpoint for each tenant with entries not yet covered, now,
// and returns them. While another replica signs a round it waits for it,
// up to sealWait, and then covers what that round left.
func (c *Checkpointer) Seal(ctx context.Context) ([]Checkpoint, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.o.Locker != nil {
		release, err := c.waitLock(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		if err := c.catchUp(ctx); err != nil {
			return nil, err
		}
	}
	count, _, last, err := c.o.Store.PendingEntries(ctx, c.sealed, 1)
	if err != nil || count == 0 {
		return nil, err
	}
	return c.seal(ctx, last)
}

func (c *Checkpointer) waitLock(ctx context.Context) (func(), error) {
	deadline := time.Now().Add(sealWait)
	for {
		release, ok, err := c.o.Locker.TryLock(ctx, sealLock)
		if err != nil || ok {
			return release, err
		}
		if time.Now().After(deadline) {
			return nil, errors.New("another replica held the checkpoint lock for " + sealWait.String())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// seal covers every tenant's entries up to upTo, in one round stored whole
// or not at all (tried again on the next call), so that no reader of the
// database ever sees some tenants sealed up to upTo and others not: svc
// verify holds every tenant's entries up to the highest seq a checkpoint
// covers to be covered by its own. Each checkpoint is then delivered to
// its tenant's webhook.
func (c *Checkpointer) seal(ctx context.Context, upTo int64) ([]Checkpoint, error) {
	tenants, err := c.o.Store.LedgerTenants(ctx, c.sealed, upTo)
	if err != nil {
		return nil, err
	}
	var made []Checkpoint
	for _, tenantID := range tenants {
		cps, err := c.sealTenant(ctx, tenantID, upTo)
		if err != nil {
			return nil, fmt.Errorf("tenant %s: %w", tenantID, err)
		}
		made = append(made, cps...)
	}
	if len(made) > 0 {
		if err := c.o.Store.AddCheckpoints(ctx, made); err != nil {
			return nil, err
		}
	}
	for _, cp := range made {
		c.o.Logger.Debug("ledger checkpoint signed", "tenant", cp.TenantID, "number", cp.Number, "entries", cp.Entries)
		if c.o.Notifier != nil {
			c.o.Notifier.Notify(ctx, cp.TenantID, CheckpointEvent, cp)
		}
	}
	c.sealed = upTo
	return made, nil
}

// sealTenant signs the tenant's checkpoints of its entries after its last
// checkpoint, up to upTo, maxCheckpointEntries at most in each, for seal
// to store.
func (c *Checkpointer) sealTenant(ctx context.Context, tenantID string, upTo int64) ([]Checkpoint, error) {
	prev, ok, err := c.o.Store.LastCheckpoint(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if !ok {
		prev = Checkpoint{} // number 0, LastSeq 0, and a zero hash for the first's Prev
	}
	// A previous checkpoint of another key, made before this process
	// started, is a key replaced between runs; made since, it is another
	// replica's, and replicas must share the key (SVC_LEDGER_KEY_FILE):
	// two keys taking turns would leave a chain no one key vouches for.
	if ok && prev.KeyID != c.o.Key.ID && prev.CreatedAt.After(c.started) {
		return nil, fmt.Errorf("%w: checkpoint %d was signed with key %s since this process started, and this one has key %s; "+
			"every replica must be given the same SVC_LEDGER_KEY_FILE, so this one signs nothing until restarted with that key",
			ErrKeyDiffers, prev.Number, prev.KeyID, c.o.Key.ID)
	}
	var made []Checkpoint
	for prev.LastSeq < upTo {
		entries, err := c.o.Store.Entries(ctx, tenantID, prev.LastSeq, upTo, maxCheckpointEntries)
		if err != nil || len(entries) == 0 {
			return made, err
		}
		leaves := make([]Hash, len(entries))
		for i := range entries {
			leaves[i] = entries[i].LeafHash()
		}
		cp := Checkpoint{TenantID: tenantID, Number: prev.Number + 1, FirstSeq: entries[0].Seq,
			LastSeq: entries[len(entries)-1].Seq, Entries: len(entries), Root: MerkleRoot(leaves), CreatedAt: c.o.Now()}
		if ok {
			cp.Prev = prev.ComputeHash()
		}
		cp.sign(c.o.Key)
		made = append(made, cp)
		prev, ok = cp, true
	}
	return made, nil
}

// Page sizes of a checkpoint listing.
const (
	DefaultCheckpointLimit = 50
	MaxCheckpointLimit     = 1000
)

// List returns a page of the tenant's checkpoints, newest first, and how
// many it has.
func (c *Checkpointer) List(ctx context.Context, tenantID string, limit, offset int) ([]Checkpoint, int, error) {
	limit, err := paging.Limit(limit, DefaultCheckpointLimit, MaxCheckpointLimit)
	if err != nil {
		return nil, 0, err
	}
	if offset, err = paging.Offset(offset); err != nil {
		return nil, 0, err
	}
	return c.o.Store.ListCheckpoints(ctx, tenantID, limit, offset)
}
