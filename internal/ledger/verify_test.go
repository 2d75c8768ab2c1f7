package ledger_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

// signedLedger is a world with runs of two tenants, a traced event, and
// checkpoints covering all of it but one run recorded after them.
type signedLedger struct {
	*ledgerWorld
	other  string
	runs   []*ledger.Record // the default tenant's, covered
	traced *ledger.Record   // covered, with an event appended after it was stored
	theirs *ledger.Record
	latest *ledger.Record // recorded after the checkpoints
	sealed []ledger.Checkpoint
}

func newSignedLedger(t *testing.T) *signedLedger {
	t.Helper()
	ctx := context.Background()
	w := &signedLedger{ledgerWorld: newLedgerWorld(t)}
	other, err := w.store.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	w.other = other.ID
	for range 3 {
		w.runs = append(w.runs, w.record(t, tenant.DefaultID))
		w.clock.Advance(time.Second)
	}
	w.traced = w.runs[1]
	_, err = w.store.AppendEvent(ctx, tenant.DefaultID, w.traced.Run.ID, "tool.called", w.clock.Now(), json.RawMessage(`{"name":"lookup"}`))
	require.NoError(t, err)
	w.theirs = w.record(t, w.other)
	w.sealed, err = w.checkpointer(1000, time.Minute).Seal(ctx)
	require.NoError(t, err)
	require.Len(t, w.sealed, 2)
	w.clock.Advance(time.Second)
	w.latest = w.record(t, tenant.DefaultID)
	return w
}

func (w *signedLedger) verify(t *testing.T, kept ...ledger.Checkpoint) *ledger.Report {
	t.Helper()
	return w.verifyWith(t, w.key.Public, kept...)
}

func (w *signedLedger) verifyWith(t *testing.T, key ed25519.PublicKey, kept ...ledger.Checkpoint) *ledger.Report {
	t.Helper()
	sn, err := w.store.LedgerSnapshot(context.Background())
	require.NoError(t, err)
	defer sn.Close()
	r, err := ledger.VerifyLedger(context.Background(), sn, []ed25519.PublicKey{key}, kept)
	require.NoError(t, err)
	return r
}

// dropTrigger drops one of the ledger's guards, as an attacker with the
// database's file or owner role can.
func (w *signedLedger) dropTrigger(t *testing.T, table, name string) {
	t.Helper()
	if storetest.Postgres() {
		w.exec(t, `DROP TRIGGER `+name+` ON `+table)
		return
	}
	w.exec(t, `DROP TRIGGER `+name)
}

// exec runs q on the database directly, with $n placeholders, which both
// engines read.
func (w *signedLedger) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	_, err := w.store.DB().Exec(q, args...)
	require.NoError(t, err, q)
}

// rechain recomputes the run's chain from its seed over its stored events,
// as they now are, and sets its head: what an attacker who knows the
// algorithm does after an edit.
func (w *signedLedger) rechain(t *testing.T, runID string) {
	t.Helper()
	c, err := w.store.RunChain(context.Background(), tenant.DefaultID, runID)
	require.NoError(t, err)
	prev := c.Seed()
	for i := range c.Events {
		e := &c.Events[i]
		e.Seq, e.PrevHash = i, prev
		e.Hash = ledger.Link(prev, e)
		prev = e.Hash
	}
	w.exec(t, `DELETE FROM run_events WHERE run_id = $1`, runID)
	for _, e := range c.Events {
		w.exec(t, `INSERT INTO run_events (run_id, seq, tenant_id, at, type, payload, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			runID, e.Seq, tenant.DefaultID, e.At.UnixMilli(), e.Type, []byte(e.Payload), e.PrevHash[:], e.Hash[:])
	}
	w.exec(t, `UPDATE runs SET event_count = $1, head_hash = $2 WHERE id = $3`, len(c.Events), prev[:], runID)
}

// An untouched database verifies: every run matched, the one recorded
// after the checkpoints reported as not yet covered.
func TestVerifyLedgerWhole(t *testing.T) {
	w := newSignedLedger(t)
	r := w.verify(t, w.sealed...)
	assert.Empty(t, r.Problems)
	assert.True(t, r.OK())
	assert.Equal(t, 2, r.Tenants)
	assert.Equal(t, 2, r.Checkpoints)
	assert.Equal(t, 5, r.Covered, "4 runs and a traced event")
	assert.Equal(t, 1, r.Uncovered)
	assert.Equal(t, 5, r.Runs)
	assert.Equal(t, []ledger.RunRef{{TenantID: tenant.DefaultID, RunID: w.latest.Run.ID}}, r.UncoveredRuns)
}

// Each way of tampering with the database is found, and names the run (or
// the checkpoint) that does not match.
func TestVerifyLedgerFindsEachTamper(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, w *signedLedger) (runID string)
		reason string
		// checkpoint is the checkpoint named; -1 for the default tenant's.
		checkpoint int64
	}{
		{"edited answer", func(t *testing.T, w *signedLedger) string {
			w.exec(t, `UPDATE runs SET response = $1 WHERE id = $2`, []byte(`{"id":"forged"}`), w.runs[0].Run.ID)
			return w.runs[0].Run.ID
		}, ledger.ProblemRunMismatch, 1},
		{"edited cost, chain recomputed to match", func(t *testing.T, w *signedLedger) string {
			w.exec(t, `UPDATE runs SET cost_usd = 0 WHERE id = $1`, w.runs[2].Run.ID)
			w.rechain(t, w.runs[2].Run.ID)
			return w.runs[2].Run.ID
		}, ledger.ProblemRunMismatch, 1},
		{"edited run not yet covered", func(t *testing.T, w *signedLedger) string {
			w.exec(t, `UPDATE runs SET model = 'gpt-5' WHERE id = $1`, w.latest.Run.ID)
			return w.latest.Run.ID
		}, ledger.ProblemRunMismatch, 0},
		{"deleted run", func(t *testing.T, w *signedLedger) string {
			w.exec(t, `DELETE FROM runs WHERE id = $1`, w.runs[1].Run.ID)
			return w.runs[1].Run.ID
		}, ledger.ProblemRunDeleted, 1},
		{"deleted tail event, count and head fixed", func(t *testing.T, w *signedLedger) string {
			id := w.runs[0].Run.ID
			w.exec(t, `DELETE FROM run_events WHERE run_id = $1 AND seq = 2`, id)
			w.exec(t, `UPDATE runs SET event_count = 2, head_hash = (SELECT hash FROM run_events WHERE run_id = $1 AND seq = 1) WHERE id = $2`, id, id)
			return id
		}, ledger.ProblemEventsDeleted, 1},
		{"every event deleted, count 0", func(t *testing.T, w *signedLedger) string {
			id := w.runs[2].Run.ID
			w.exec(t, `DELETE FROM run_events WHERE run_id = $1`, id)
			w.exec(t, `UPDATE runs SET event_count = 0 WHERE id = $1`, id)
			return id
		}, ledger.ProblemEventsDeleted, 1},
		{"deleted traced event, chain recomputed", func(t *testing.T, w *signedLedger) string {
			id := w.traced.Run.ID
			w.exec(t, `DELETE FROM run_events WHERE run_id = $1 AND seq = 3`, id)
			w.rechain(t, id)
			return id
		}, ledger.ProblemEventsDeleted, 1},
		{"reordered events", func(t *testing.T, w *signedLedger) string {
			id := w.runs[0].Run.ID
			w.exec(t, `UPDATE run_events SET seq = 9 WHERE run_id = $1 AND seq = 0`, id)
			w.exec(t, `UPDATE run_events SET seq = 0 WHERE run_id = $1 AND seq = 1`, id)
			w.exec(t, `UPDATE run_events SET seq = 1 WHERE run_id = $1 AND seq = 9`, id)
			return id
		}, ledger.ProblemEventMismatch, 1},
		{"reordered events, chain recomputed", func(t *testing.T, w *signedLedger) string {
			id := w.runs[0].Run.ID
			w.exec(t, `UPDATE run_events SET seq = 9 WHERE run_id = $1 AND seq = 0`, id)
			w.exec(t, `UPDATE run_events SET seq = 0 WHERE run_id = $1 AND seq = 1`, id)
			w.exec(t, `UPDATE run_events SET seq = 1 WHERE run_id = $1 AND seq = 9`, id)
			w.rechain(t, id)
			return id
		}, ledger.ProblemChainRewritten, 1},
		{"edited payload, chain recomputed, head fixed", func(t *testing.T, w *signedLedger) string {
			id := w.runs[1].Run.ID
			w.exec(t, `UPDATE run_events SET payload = $1 WHERE run_id = $2 AND seq = 1`, []byte(`{"route":"artifact"}`), id)
			w.rechain(t, id)
			return id
		}, ledger.ProblemChainRewritten, 1},
		{"inserted event, linked, count and head fixed", func(t *testing.T, w *signedLedger) string {
			id := w.runs[2].Run.ID
			e := ledger.Event{Seq: 3, Type: "tool.called", At: w.clock.Now(), Payload: json.RawMessage(`{}`), PrevHash: w.runs[2].Head.Hash}
			e.Hash = ledger.Link(e.PrevHash, &e)
			w.exec(t, `INSERT INTO run_events (run_id, seq, tenant_id, at, type, payload, prev_hash, hash) VALUES ($1, 3, $2, $3, $4, $5, $6, $7)`,
				id, tenant.DefaultID, e.At.UnixMilli(), e.Type, []byte(e.Payload), e.PrevHash[:], e.Hash[:])
			w.exec(t, `UPDATE runs SET event_count = 4, head_hash = $1 WHERE id = $2`, e.Hash[:], id)
			return id
		}, ledger.ProblemEventsInserted, 1},
		{"inserted run", func(t *testing.T, w *signedLedger) string {
			w.exec(t, `INSERT INTO runs (id, tenant_id, created_at, route, status, http_status, model, app, agent,
				subject, mode, key_id, provider, stream, prompt_tokens, completion_tokens, total_tokens, usage_unknown, cost_usd,
				price_unknown, latency_ms, explanation, error, request, response, event_count, head_hash, saved_usd, saved_ms,
				ghost_saved_usd, chain_version, trace_id)
				SELECT 'run_forged', tenant_id, created_at, route, status, http_status, model, app, agent,
				subject, mode, key_id, provider, stream, prompt_tokens, completion_tokens, total_tokens, usage_unknown, cost_usd,
				price_unknown, latency_ms, explanation, error, request, response, event_count, head_hash, saved_usd, saved_ms,
				ghost_saved_usd, chain_version, trace_id FROM runs WHERE id = $1`, w.runs[0].Run.ID)
			return "run_forged"
		}, ledger.ProblemRunInserted, 0},
		{"inserted run of chain v1, its v1 chain made", func(t *testing.T, w *signedLedger) string {
			w.exec(t, `INSERT INTO runs (id, tenant_id, created_at, route, status, http_status, model, app, agent,
				subject, mode, key_id, provider, stream, prompt_tokens, completion_tokens, total_tokens, usage_unknown, cost_usd,
				price_unknown, latency_ms, explanation, error, request, response, event_count, head_hash, saved_usd, saved_ms,
				ghost_saved_usd, chain_version, trace_id)
				SELECT 'run_forged', tenant_id, created_at, route, status, http_status, model, app, agent,
				subject, mode, key_id, provider, stream, prompt_tokens, completion_tokens, total_tokens, usage_unknown, cost_usd,
				price_unknown, latency_ms, explanation, error, request, response, event_count, head_hash, saved_usd, saved_ms,
				ghost_saved_usd, 1, trace_id FROM runs WHERE id = $1`, w.runs[0].Run.ID)
			w.exec(t, `INSERT INTO run_events SELECT 'run_forged', seq, tenant_id, at, type, payload, prev_hash, hash
				FROM run_events WHERE run_id = $1`, w.runs[0].Run.ID)
			w.rechain(t, "run_forged")
			return "run_forged"
		}, ledger.ProblemRunInserted, 0},
		{"head moved back", func(t *testing.T, w *signedLedger) string {
			id := w.traced.Run.ID
			w.exec(t, `UPDATE runs SET event_count = 3, head_hash = $1 WHERE id = $2`, w.traced.Head.Hash[:], id)
			return id
		}, ledger.ProblemHeadMismatch, 1},
		{"changed entry", func(t *testing.T, w *signedLedger) string {
			w.dropTrigger(t, "ledger_entries", "ledger_entries_no_update")
			w.exec(t, `UPDATE ledger_entries SET event_count = 3 WHERE run_id = $1 AND kind = 'event'`, w.traced.Run.ID)
			return ""
		}, ledger.ProblemEntries, -1},
		{"deleted run and its entry", func(t *testing.T, w *signedLedger) string {
			w.dropTrigger(t, "ledger_entries", "ledger_entries_no_delete")
			w.exec(t, `DELETE FROM ledger_entries WHERE run_id = $1`, w.runs[0].Run.ID)
			w.exec(t, `DELETE FROM runs WHERE id = $1`, w.runs[0].Run.ID)
			return ""
		}, ledger.ProblemEntries, -1},
		{"forged checkpoint", func(t *testing.T, w *signedLedger) string {
			w.dropTrigger(t, "ledger_checkpoints", "ledger_checkpoints_no_update")
			w.exec(t, `UPDATE ledger_checkpoints SET entries = entries - 1 WHERE tenant_id = $1`, tenant.DefaultID)
			return ""
		}, ledger.ProblemSignature, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSignedLedger(t)
			runID := tc.tamper(t, w)
			r := w.verify(t)
			require.NotEmpty(t, r.Problems)
			p := r.Problems[0]
			assert.Equal(t, tc.reason, p.Reason, p.String())
			assert.Equal(t, runID, p.RunID, p.String())
			want := tc.checkpoint
			if want < 0 {
				want = 1 // the default tenant's only checkpoint
			}
			assert.Equal(t, want, p.Checkpoint, p.String())
			if runID != "" {
				assert.Contains(t, p.String(), runID)
			}
			assert.False(t, r.OK())
		})
	}
}

// Deleted checkpoints are named as missing against checkpoints kept
// elsewhere; so is a rewritten chain of checkpoints.
func TestVerifyLedgerAgainstKeptCheckpoints(t *testing.T) {
	w := newSignedLedger(t)
	var mine ledger.Checkpoint
	for _, cp := range w.sealed {
		if cp.TenantID == tenant.DefaultID {
			mine = cp
		}
	}
	r := w.verify(t, w.sealed...)
	require.Empty(t, r.Problems)
	w.dropTrigger(t, "ledger_checkpoints", "ledger_checkpoints_no_delete")
	w.exec(t, `DELETE FROM ledger_checkpoints WHERE tenant_id = $1`, tenant.DefaultID)
	r = w.verify(t, w.sealed...)
	require.NotEmpty(t, r.Problems)
	assert.Equal(t, ledger.ProblemCheckpointMissing, r.Problems[0].Reason)
	assert.Equal(t, tenant.DefaultID, r.Problems[0].TenantID)

	// The checkpoints signed again, with another key: the kept one does
	// not match, and the key the operator gives does not verify.
	original := w.key.Public
	other := newLedgerWorld(t)
	w.key = other.key
	_, err := w.checkpointer(1000, time.Minute).Seal(context.Background())
	require.NoError(t, err)
	r = w.verifyWith(t, other.key.Public, mine)
	require.NotEmpty(t, r.Problems)
	assert.Equal(t, ledger.ProblemCheckpointDiffers, r.Problems[0].Reason)
	r = w.verifyWith(t, original)
	require.NotEmpty(t, r.Problems)
	assert.Equal(t, ledger.ProblemSignature, r.Problems[0].Reason)
}

// A checkpoint deleted from the middle of a tenant's chain breaks it.
func TestVerifyLedgerFindsADeletedCheckpoint(t *testing.T) {
	w := newSignedLedger(t)
	_, err := w.checkpointer(1000, time.Minute).Seal(context.Background()) // covers the latest run: checkpoint 2
	require.NoError(t, err)
	require.True(t, w.verify(t).OK())
	w.dropTrigger(t, "ledger_checkpoints", "ledger_checkpoints_no_delete")
	w.exec(t, `DELETE FROM ledger_checkpoints WHERE tenant_id = $1 AND number = 1`, tenant.DefaultID)
	r := w.verify(t)
	require.NotEmpty(t, r.Problems)
	assert.Equal(t, ledger.ProblemCheckpointChain, r.Problems[0].Reason)
	assert.EqualValues(t, 2, r.Problems[0].Checkpoint)
}

// Runs the retention sweep deleted are reported as pruned, once a
// checkpoint covers the sweep; before that, the sweep's entry is only
// svc's word, which an attacker could have written.
func TestVerifyLedgerTellsPrunedFromDeleted(t *testing.T) {
	ctx := context.Background()
	w := newSignedLedger(t)
	w.clock.Advance(31 * 24 * time.Hour)
	n, err := ledger.NewRetention(w.store, retention(30), w.clock.Now).Sweep(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	r := w.verify(t)
	assert.Empty(t, r.Problems, "an honest sweep is pending until a checkpoint covers it, not a mismatch")
	assert.Equal(t, 4, r.Pruned)
	assert.Len(t, r.UncoveredRuns, 4, "runs gone by a sweep no checkpoint covers yet are listed as not yet covered")

	_, err = w.checkpointer(1000, time.Minute).Seal(ctx)
	require.NoError(t, err)
	r = w.verify(t)
	assert.Empty(t, r.Problems)
	assert.Empty(t, r.UncoveredRuns)
	assert.Equal(t, 4, r.Pruned)
	assert.Equal(t, 1, r.Runs, "the other tenant's run, kept by its own retention")
}

// A run deleted after a sweep's cutoff is deleted, sweep or not.
func TestVerifyLedgerSweepExcusesOnlyItsCutoff(t *testing.T) {
	ctx := context.Background()
	w := newSignedLedger(t)
	_, err := ledger.NewRetention(w.store, retention(30), func() time.Time { return w.clock.Now().Add(31 * 24 * time.Hour) }).
		Sweep(ctx, w.other)
	require.NoError(t, err)
	w.exec(t, `DELETE FROM runs WHERE id = $1`, w.runs[0].Run.ID)
	r := w.verify(t)
	require.Len(t, r.Problems, 1, "the other tenant's sweep excuses none of the default tenant's runs")
	assert.Equal(t, ledger.ProblemRunDeleted, r.Problems[0].Reason)
	assert.Equal(t, w.runs[0].Run.ID, r.Problems[0].RunID)
}

// One tenant's checkpoints deleted, its runs then edited and its entries
// rewritten to match, while other tenants keep theirs: the database alone
// tells, since every round seals every tenant up to one seq.
func TestVerifyLedgerFindsOneTenantsCheckpointsDeleted(t *testing.T) {
	w := newSignedLedger(t)
	w.dropTrigger(t, "ledger_checkpoints", "ledger_checkpoints_no_delete")
	w.exec(t, `DELETE FROM ledger_checkpoints WHERE tenant_id = $1`, tenant.DefaultID)
	r := w.verify(t)
	require.NotEmpty(t, r.Problems, "its entries are not merely pending: a round sealed them")
	p := r.Problems[0]
	assert.Equal(t, ledger.ProblemEntriesUncovered, p.Reason, p.String())
	assert.Equal(t, tenant.DefaultID, p.TenantID)
	assert.Equal(t, w.runs[0].Run.ID, p.RunID, "the first uncovered entry's run")

	// The entries rewritten after an edit: still found.
	id := w.runs[0].Run.ID
	w.exec(t, `UPDATE runs SET cost_usd = 0 WHERE id = $1`, id)
	w.rechain(t, id)
	c, err := w.store.RunChain(context.Background(), tenant.DefaultID, id)
	require.NoError(t, err)
	w.dropTrigger(t, "ledger_entries", "ledger_entries_no_update")
	w.exec(t, `UPDATE ledger_entries SET digest = $1, head_hash = $2 WHERE run_id = $3`, func() []byte { d := c.Digest(); return d[:] }(),
		c.Head.Hash[:], id)
	r = w.verify(t)
	require.NotEmpty(t, r.Problems)
	assert.Equal(t, ledger.ProblemEntriesUncovered, r.Problems[0].Reason, r.Problems[0].String())
}

// A round of checkpoints seals only tenants with new entries: a tenant
// without any in a later round is not taken for one whose checkpoints
// were deleted.
func TestVerifyLedgerAcceptsRoundsThatSkipATenant(t *testing.T) {
	ctx := context.Background()
	w := newSignedLedger(t)
	for range 3 {
		w.clock.Advance(time.Second)
		w.record(t, w.other)
		cps, err := w.checkpointer(1000, time.Minute).Seal(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, cps)
	}
	r := w.verify(t)
	assert.Empty(t, r.Problems)
	assert.Empty(t, r.UncoveredRuns)
	assert.Equal(t, 0, r.Uncovered)
}

// Every checkpoint and entry deleted, every run set to chain v1 and its v1
// chain made anew after an edit: runs no entry names are inserted ones,
// whatever their chain, and a database of runs without checkpoints is no
// whole one.
func TestVerifyLedgerFindsTheLedgerDeleted(t *testing.T) {
	w := newSignedLedger(t)
	w.dropTrigger(t, "ledger_checkpoints", "ledger_checkpoints_no_delete")
	w.dropTrigger(t, "ledger_entries", "ledger_entries_no_delete")
	w.exec(t, `DELETE FROM ledger_checkpoints`)
	w.exec(t, `DELETE FROM ledger_entries`)
	w.exec(t, `UPDATE runs SET chain_version = 1`)
	w.exec(t, `UPDATE runs SET cost_usd = 0 WHERE id = $1`, w.runs[0].Run.ID)
	for _, rec := range append([]*ledger.Record{w.latest}, w.runs...) {
		w.rechain(t, rec.Run.ID)
	}
	r := w.verify(t)
	require.False(t, r.OK())
	reasons := map[string]int{}
	for _, p := range r.Problems {
		reasons[p.Reason]++
	}
	assert.Equal(t, 5, reasons[ledger.ProblemRunInserted], "%v", r.Problems)
	assert.Equal(t, 1, reasons[ledger.ProblemNoCheckpoints], "%v", r.Problems)
}

type retention float64

func (d retention) RetentionDays(context.Context, string) (float64, error) { return float64(d), nil }

// Checkpoints kept elsewhere read back from every form svc gives them in:
// the list answer, a webhook delivery's body, a checkpoint alone, a file of
// delivery bodies one per line with other events among them.
func TestParseCheckpoints(t *testing.T) {
	w := newSignedLedger(t)
	cps := w.sealed
	one, err := json.Marshal(cps[0])
	require.NoError(t, err)
	two, err := json.Marshal(cps[1])
	require.NoError(t, err)
	list, err := json.Marshal(map[string]any{"checkpoints": cps, "total": len(cps)})
	require.NoError(t, err)
	delivery := func(cp ledger.Checkpoint) string {
		b, err := json.Marshal(map[string]any{"id": "job_1", "type": ledger.CheckpointEvent, "tenantId": cp.TenantID, "data": cp})
		require.NoError(t, err)
		return string(b)
	}
	for name, in := range map[string]string{
		"alone":      string(one) + "\n" + string(two),
		"list":       string(list),
		"deliveries": delivery(cps[0]) + "\n" + `{"type":"policy.blocked","data":{}}` + "\n" + delivery(cps[1]) + "\n",
		"array":      "[" + delivery(cps[0]) + "," + string(one) + "]",
	} {
		got, err := ledger.ParseCheckpoints(strings.NewReader(in))
		require.NoError(t, err, name)
		require.Len(t, got, 2, name)
		for _, cp := range got {
			assert.NoError(t, cp.CheckSignature([]ed25519.PublicKey{w.key.Public}), name)
		}
	}
	for _, bad := range []string{`{"x":1}`, `{`, `"x"`} {
		_, err := ledger.ParseCheckpoints(bytes.NewReader([]byte(bad)))
		assert.Error(t, err, bad)
	}
}
