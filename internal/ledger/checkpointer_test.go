package ledger_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// notified records the webhook events a checkpointer sends.
type notified struct {
	mu     sync.Mutex
	events []notice
}

type notice struct {
	tenantID, eventType string
	data                any
}

func (n *notified) Notify(_ context.Context, tenantID, eventType string, data any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, notice{tenantID, eventType, data})
}

// ledgerWorld is a store, a key and a clock to make checkpoints with.
type ledgerWorld struct {
	store *store.Store
	key   *ledger.Key
	clock *fakeclock.Clock
	sent  *notified
}

func newLedgerWorld(t *testing.T) *ledgerWorld {
	t.Helper()
	w := &ledgerWorld{store: storetest.Open(t), clock: fakeclock.New(time.UnixMilli(1_800_000_000_000).UTC()), sent: &notified{}}
	w.store.Now = w.clock.Now
	var err error
	w.key, _, err = ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)
	return w
}

func (w *ledgerWorld) checkpointer(entries int, interval time.Duration) *ledger.Checkpointer {
	return ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: w.store, Key: w.key, Entries: entries,
		Interval: interval, Notifier: w.sent, Now: w.clock.Now})
}

// record stores a run of the tenant as the recorder would, and returns it.
func (w *ledgerWorld) record(t *testing.T, tenantID string) *ledger.Record {
	t.Helper()
	at := w.clock.Now()
	run := &ledger.Run{ID: ids.Ordered("run", at), TenantID: tenantID, CreatedAt: at, Route: ledger.RouteLive,
		Status: ledger.StatusOK, HTTPStatus: 200, Model: "gpt-4o-mini", Mode: "optimize", Provider: "mock",
		PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CostUSD: 0.0001, LatencyMS: 1.5,
		Explanation: ledger.RouteExplanation{Route: ledger.RouteLive, Reason: "no cached answer", Rejected: []ledger.Alternative{},
			Policy: ledger.Verdict{Decision: "allow"}},
		Request:  json.RawMessage(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`),
		Response: json.RawMessage(`{"id":"chatcmpl-1","choices":[{"message":{"role":"assistant","content":"hello"}}]}`)}
	rec := ledger.NewRecord(run, []ledger.Event{
		{Type: "request.received", Payload: json.RawMessage(`{"model":"gpt-4o-mini"}`)},
		{Type: "route.decided", Payload: json.RawMessage(`{"route":"live"}`)},
		{Type: "provider.completed", Payload: json.RawMessage(`{"status":200}`)},
	}, at)
	require.NoError(t, w.store.InsertRuns(context.Background(), []*ledger.Record{rec}))
	return rec
}

func (w *ledgerWorld) checkpoints(t *testing.T, tenantID string) []ledger.Checkpoint {
	t.Helper()
	cps, _, err := w.store.ListCheckpoints(context.Background(), tenantID, 1000, 0)
	require.NoError(t, err)
	return cps
}

// A checkpoint is signed once N entries wait or the oldest has waited T,
// and only when there are new entries; each commits to exactly the entries
// since the previous one and is chained to it.
func TestCheckpointerSealsByCountOrAge(t *testing.T) {
	ctx := context.Background()
	w := newLedgerWorld(t)
	c := w.checkpointer(3, time.Minute)
	keys := []ed25519.PublicKey{w.key.Public}

	require.NoError(t, c.Tick(ctx))
	assert.Empty(t, w.checkpoints(t, tenant.DefaultID), "nothing recorded, nothing signed")
	w.record(t, tenant.DefaultID)
	w.record(t, tenant.DefaultID)
	w.clock.Advance(59 * time.Second)
	require.NoError(t, c.Tick(ctx))
	assert.Empty(t, w.checkpoints(t, tenant.DefaultID), "2 entries of 3, 59s of a minute")
	w.record(t, tenant.DefaultID)
	require.NoError(t, c.Tick(ctx))
	cps := w.checkpoints(t, tenant.DefaultID)
	require.Len(t, cps, 1, "3 entries")
	first := cps[0]
	entries, err := w.store.Entries(ctx, tenant.DefaultID, 0, math.MaxInt64, 100)
	require.NoError(t, err)
	require.Len(t, entries, 3)
	leaves := []ledger.Hash{entries[0].LeafHash(), entries[1].LeafHash(), entries[2].LeafHash()}
	assert.Equal(t, ledger.Checkpoint{TenantID: tenant.DefaultID, Number: 1, FirstSeq: entries[0].Seq, LastSeq: entries[2].Seq,
		Entries: 3, Root: ledger.MerkleRoot(leaves), CreatedAt: w.clock.Now(), KeyID: w.key.ID, Signature: first.Signature,
		Hash: first.ComputeHash()}, first)
	require.NoError(t, first.CheckSignature(keys))

	require.NoError(t, c.Tick(ctx))
	assert.Len(t, w.checkpoints(t, tenant.DefaultID), 1, "no new entry")
	w.record(t, tenant.DefaultID)
	w.clock.Advance(59 * time.Second)
	require.NoError(t, c.Tick(ctx))
	assert.Len(t, w.checkpoints(t, tenant.DefaultID), 1, "1 entry, 59s old")
	w.clock.Advance(time.Second)
	require.NoError(t, c.Tick(ctx))
	cps = w.checkpoints(t, tenant.DefaultID)
	require.Len(t, cps, 2, "the entry waited a minute")
	second := cps[0]
	assert.EqualValues(t, 2, second.Number)
	assert.Equal(t, first.Hash, second.Prev, "chained to the first")
	assert.Equal(t, 1, second.Entries)
	assert.Greater(t, second.FirstSeq, first.LastSeq)
	require.NoError(t, second.CheckSignature(keys))
}

// Each tenant's entries go into checkpoints of its own, delivered to its
// own webhook; another tenant's are never listed. Close covers what is
// left.
func TestCheckpointsArePerTenant(t *testing.T) {
	ctx := context.Background()
	w := newLedgerWorld(t)
	other, err := w.store.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	c := w.checkpointer(1000, time.Hour)
	c.Start()
	w.record(t, tenant.DefaultID)
	w.record(t, other.ID)
	w.record(t, tenant.DefaultID)
	c.Close()

	mine, theirs := w.checkpoints(t, tenant.DefaultID), w.checkpoints(t, other.ID)
	require.Len(t, mine, 1)
	require.Len(t, theirs, 1)
	assert.Equal(t, 2, mine[0].Entries)
	assert.Equal(t, 1, theirs[0].Entries)
	assert.Equal(t, ledger.Hash{}, theirs[0].Prev, "each tenant's chain starts on its own")
	listed, total, err := c.List(ctx, tenant.DefaultID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, mine, listed)

	w.sent.mu.Lock()
	defer w.sent.mu.Unlock()
	require.Len(t, w.sent.events, 2)
	byTenant := map[string]ledger.Checkpoint{}
	for _, n := range w.sent.events {
		assert.Equal(t, ledger.CheckpointEvent, n.eventType)
		byTenant[n.tenantID] = n.data.(ledger.Checkpoint)
	}
	assert.Equal(t, mine[0], byTenant[tenant.DefaultID])
	assert.Equal(t, theirs[0], byTenant[other.ID])
}

// A checkpoint's signature covers every field: any change, or another key,
// fails it.
func TestCheckpointSignatureCoversEveryField(t *testing.T) {
	ctx := context.Background()
	w := newLedgerWorld(t)
	w.record(t, tenant.DefaultID)
	cps, err := w.checkpointer(1, time.Minute).Seal(ctx)
	require.NoError(t, err)
	require.Len(t, cps, 1)
	cp := cps[0]
	keys := []ed25519.PublicKey{w.key.Public}
	require.NoError(t, cp.CheckSignature(keys))

	for name, change := range map[string]func(c *ledger.Checkpoint){
		"tenant":    func(c *ledger.Checkpoint) { c.TenantID += "x" },
		"number":    func(c *ledger.Checkpoint) { c.Number++ },
		"firstSeq":  func(c *ledger.Checkpoint) { c.FirstSeq++ },
		"lastSeq":   func(c *ledger.Checkpoint) { c.LastSeq++ },
		"entries":   func(c *ledger.Checkpoint) { c.Entries++ },
		"root":      func(c *ledger.Checkpoint) { c.Root[0] ^= 1 },
		"prev":      func(c *ledger.Checkpoint) { c.Prev[0] ^= 1 },
		"createdAt": func(c *ledger.Checkpoint) { c.CreatedAt = c.CreatedAt.Add(time.Millisecond) },
		"signature": func(c *ledger.Checkpoint) { c.Signature[0] ^= 1 },
		"hash":      func(c *ledger.Checkpoint) { c.Hash[0] ^= 1 },
	} {
		changed := cp
		change(&changed)
		assert.ErrorIs(t, changed.CheckSignature(keys), ledger.ErrBadSignature, name)
	}
	other, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "other.key"))
	require.NoError(t, err)
	assert.ErrorIs(t, cp.CheckSignature([]ed25519.PublicKey{other.Public}), ledger.ErrBadSignature, "another key")

	var back ledger.Checkpoint
	b, err := json.Marshal(cp)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, cp, back, "the JSON the API and webhooks show reads back whole")
	require.NoError(t, back.CheckSignature(keys))
}

// failingEntries is a store whose reads of one tenant's entries fail.
type failingEntries struct {
	ledger.CheckpointStore
	tenantID string
}

func (f failingEntries) Entries(ctx context.Context, tenantID string, after, upTo int64, limit int) ([]ledger.Entry, error) {
	if tenantID == f.tenantID {
		return nil, errors.New("disk on fire")
	}
	return f.CheckpointStore.Entries(ctx, tenantID, after, upTo, limit)
}

// A round of checkpoints is stored whole or not at all: no reader sees one
// tenant sealed up to a seq and another not, which svc verify would take
// for deleted checkpoints.
func TestCheckpointRoundIsWholeOrNothing(t *testing.T) {
	ctx := context.Background()
	w := newLedgerWorld(t)
	other, err := w.store.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	w.record(t, tenant.DefaultID)
	w.record(t, other.ID)
	failing := ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: failingEntries{w.store, other.ID}, Key: w.key,
		Notifier: w.sent, Now: w.clock.Now})
	_, err = failing.Seal(ctx)
	require.Error(t, err)
	assert.Empty(t, w.checkpoints(t, tenant.DefaultID), "the tenant sealed before the failure is not stored either")
	assert.Empty(t, w.checkpoints(t, other.ID))

	made, err := w.checkpointer(1000, time.Minute).Seal(ctx)
	require.NoError(t, err)
	assert.Len(t, made, 2)
}
