package main_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/internal/webhook"
)

// verifyDB runs `svc verify` and returns its exit code and what it
// printed.
func verifyDB(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(testbin.SVC(t), append([]string{"verify"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	}
	t.Fatalf("svc verify: %v", err)
	return 0, ""
}

// hookFile is a webhook receiver that checks each delivery's signature and
// appends the bodies of ledger.checkpoint deliveries to a file, one per
// line, as an operator's receiver would keep them.
type hookFile struct {
	*httptest.Server
	path string
	mu   sync.Mutex
	n    int
}

func newHookFile(t *testing.T, secret string) *hookFile {
	h := &hookFile{path: filepath.Join(t.TempDir(), "checkpoints.jsonl")}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header.Get(webhook.HeaderTimestamp), body, r.Header.Get(webhook.HeaderSignature),
			time.Now(), webhook.DefaultTolerance); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if r.Header.Get(webhook.HeaderEvent) != ledger.CheckpointEvent {
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, err = f.Write(append(body, '\n'))
			f.Close()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h.n++
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookFile) received() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// copyDB copies a stopped svc's database (and its WAL, if one was left)
// to a new folder.
func copyDB(t *testing.T, db string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "svc.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(db + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst+suffix, b, 0o600))
	}
	return dst
}

// tamper edits a copy of the database the way someone with write access
// to the file, and no key, could.
func tamper(t *testing.T, db string, edit func(s *store.Store)) {
	t.Helper()
	s, err := store.Open(context.Background(), db)
	require.NoError(t, err)
	edit(s)
	require.NoError(t, s.Close())
}

func exec1(t *testing.T, s *store.Store, q string, args ...any) {
	t.Helper()
	res, err := s.DB().Exec(q, args...)
	require.NoError(t, err, q)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Positive(t, n, "%s changed nothing", q)
}

// rechain recomputes a run's chain over its stored events, as they now
// are, from its seed, and fixes its head and event count.
func rechain(t *testing.T, s *store.Store, runID string) {
	t.Helper()
	c, err := s.RunChain(context.Background(), tenant.DefaultID, runID)
	require.NoError(t, err)
	prev := c.Seed()
	exec1(t, s, `DELETE FROM run_events WHERE run_id = ?`, runID)
	for i := range c.Events {
		e := &c.Events[i]
		e.Seq, e.PrevHash = i, prev
		e.Hash = ledger.Link(prev, e)
		prev = e.Hash
		exec1(t, s, `INSERT INTO run_events (run_id, seq, tenant_id, at, type, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			runID, e.Seq, tenant.DefaultID, e.At.UnixMilli(), e.Type, []byte(e.Payload), e.PrevHash[:], e.Hash[:])
	}
	exec1(t, s, `UPDATE runs SET event_count = ?, head_hash = ? WHERE id = ?`, len(c.Events), prev[:], runID)
}

// Runs recorded through the real binary, checkpoints made while it serves
// and delivered to a webhook, svc stopped: `svc verify` finds the database
// whole, then names the run each way of editing the file touched, even
// with the run's own integrity made to look intact.
func TestSvcVerifyNamesTheTamperedRun(t *testing.T) {
	const secret = "whsec-ledger-0123456789"
	hook := newHookFile(t, secret)
	db := filepath.Join(t.TempDir(), "svc.db")
	p := startWithDB(t, db, "SVC_LEDGER_CHECKPOINT_RUNS=5", "SVC_LEDGER_CHECKPOINT_INTERVAL=1h",
		"SVC_WEB_ALLOW_PRIVATE="+strings.TrimPrefix(hook.URL, "http://"))
	for key, value := range map[string]string{"webhook_url": hook.URL, "webhook_secret": secret} {
		body, _ := json.Marshal(map[string]string{"key": key, "value": value})
		status, out := p.call(t, "PUT", "/api/v1/settings", "", string(body))
		require.Equal(t, http.StatusOK, status, out)
	}
	info, err := os.Stat(filepath.Join(filepath.Dir(db), "ledger.key"))
	require.NoError(t, err, "the key is made beside the database at the first start")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	var runs []string
	for i := range 8 {
		status, id, body := p.chat(t, "", strings.Replace(chatBody, "Hamlet", fmt.Sprintf("Hamlet, act %d", i), 1))
		require.Equal(t, http.StatusOK, status, body)
		runs = append(runs, id)
	}
	status, out := p.call(t, "POST", "/api/v1/trace", "", `{"runId":"`+runs[4]+`","type":"tool.called","payload":{"name":"lookup"}}`)
	require.Equal(t, http.StatusCreated, status, out)

	// 8 runs and a traced event, 5 entries a checkpoint: one is signed
	// while svc serves, and delivered.
	require.Eventually(t, func() bool {
		_, list := p.call(t, "GET", "/api/v1/ledger/checkpoints", "", "")
		total, _ := list["total"].(float64)
		return total >= 1 && hook.received() >= 1
	}, 30*time.Second, 50*time.Millisecond, "a checkpoint is signed and delivered")
	keyFile := filepath.Join(t.TempDir(), "ledger-key.json")
	res, err := http.Get("http://" + p.addr + "/api/v1/ledger/key")
	require.NoError(t, err)
	keyJSON, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, keyJSON, 0o600))

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.waitExit(t))

	code, report := verifyDB(t, "-db", db, "-public-key", keyFile, "-checkpoints", hook.path)
	require.Equal(t, 0, code, report)
	assert.Contains(t, report, "ok: the database matches its signed checkpoints")
	assert.Contains(t, report, "runs: 8 match the ledger")
	assert.Contains(t, report, "0 not yet", "the stop sealed the rest")
	var key struct{ PublicKey string }
	require.NoError(t, json.Unmarshal(keyJSON, &key))
	code, report = verifyDB(t, "-db", db, "-public-key", key.PublicKey)
	assert.Equal(t, 0, code, report)

	for _, tc := range []struct {
		name   string
		run    string
		reason string
		edit   func(t *testing.T, s *store.Store)
	}{
		{"edited answer", runs[0], ledger.ProblemRunMismatch, func(t *testing.T, s *store.Store) {
			exec1(t, s, `UPDATE runs SET response = CAST('{"choices":[{"message":{"content":"forged"}}]}' AS BLOB) WHERE id = ?`, runs[0])
		}},
		{"edited cost, chain recomputed", runs[1], ledger.ProblemRunMismatch, func(t *testing.T, s *store.Store) {
			exec1(t, s, `UPDATE runs SET cost_usd = 0 WHERE id = ?`, runs[1])
			rechain(t, s, runs[1])
		}},
		{"deleted run", runs[2], ledger.ProblemRunDeleted, func(t *testing.T, s *store.Store) {
			exec1(t, s, `DELETE FROM runs WHERE id = ?`, runs[2])
		}},
		{"deleted event, count and head fixed", runs[3], ledger.ProblemEventsDeleted, func(t *testing.T, s *store.Store) {
			exec1(t, s, `DELETE FROM run_events WHERE run_id = ? AND seq = 2`, runs[3])
			exec1(t, s, `UPDATE runs SET event_count = 2, head_hash = (SELECT hash FROM run_events WHERE run_id = ? AND seq = 1)
				WHERE id = ?`, runs[3], runs[3])
		}},
		{"deleted traced event, chain recomputed", runs[4], ledger.ProblemEventsDeleted, func(t *testing.T, s *store.Store) {
			exec1(t, s, `DELETE FROM run_events WHERE run_id = ? AND seq = 3`, runs[4])
			rechain(t, s, runs[4])
		}},
		{"reordered events", runs[5], ledger.ProblemEventMismatch, func(t *testing.T, s *store.Store) {
			exec1(t, s, `UPDATE run_events SET seq = 9 WHERE run_id = ? AND seq = 0`, runs[5])
			exec1(t, s, `UPDATE run_events SET seq = 0 WHERE run_id = ? AND seq = 1`, runs[5])
			exec1(t, s, `UPDATE run_events SET seq = 1 WHERE run_id = ? AND seq = 9`, runs[5])
		}},
		{"inserted event, linked, count and head fixed", runs[6], ledger.ProblemEventsInserted, func(t *testing.T, s *store.Store) {
			c, err := s.RunChain(context.Background(), tenant.DefaultID, runs[6])
			require.NoError(t, err)
			e := ledger.Event{Seq: c.Head.Count, Type: "tool.called", At: time.Now(), Payload: json.RawMessage(`{}`), PrevHash: c.Head.Hash}
			e.Hash = ledger.Link(e.PrevHash, &e)
			exec1(t, s, `INSERT INTO run_events (run_id, seq, tenant_id, at, type, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				runs[6], e.Seq, tenant.DefaultID, e.At.UnixMilli(), e.Type, []byte(e.Payload), e.PrevHash[:], e.Hash[:])
			exec1(t, s, `UPDATE runs SET event_count = event_count + 1, head_hash = ? WHERE id = ?`, e.Hash[:], runs[6])
		}},
		{"edited event, chain recomputed, head and count fixed", runs[7], ledger.ProblemChainRewritten, func(t *testing.T, s *store.Store) {
			exec1(t, s, `UPDATE run_events SET payload = CAST('{"policy":"allow","reason":"forged","route":"exact_cache"}' AS BLOB)
				WHERE run_id = ? AND seq = 1`, runs[7])
			rechain(t, s, runs[7])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copied := copyDB(t, db)
			tamper(t, copied, func(s *store.Store) { tc.edit(t, s) })
			code, report := verifyDB(t, "-db", copied, "-public-key", keyFile, "-checkpoints", hook.path)
			assert.Equal(t, 1, code, report)
			first := report[strings.Index(report, "MISMATCH: "):]
			first = first[:strings.IndexByte(first, '\n')]
			assert.Contains(t, first, "run "+tc.run, report)
			assert.Contains(t, first, tc.reason, report)
		})
	}

	t.Run("the run's own integrity is fooled by a recomputed chain", func(t *testing.T) {
		copied := copyDB(t, db)
		tamper(t, copied, func(s *store.Store) {
			exec1(t, s, `UPDATE run_events SET payload = CAST('{"route":"exact_cache"}' AS BLOB) WHERE run_id = ? AND seq = 1`, runs[7])
			rechain(t, s, runs[7])
		})
		p := startWithDB(t, copied)
		status, integrity := p.call(t, "GET", "/api/v1/runs/"+runs[7]+"/integrity", "", "")
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, true, integrity["ok"], "only the signed ledger catches this")
		status, integrity = p.call(t, "GET", "/api/v1/runs/"+runs[1]+"/integrity", "", "")
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, true, integrity["ok"], "an untouched run")
	})

	t.Run("a deleted newest checkpoint, against the kept ones", func(t *testing.T) {
		copied := copyDB(t, db)
		tamper(t, copied, func(s *store.Store) {
			_, err := s.DB().Exec(`DROP TRIGGER ledger_checkpoints_no_delete`)
			require.NoError(t, err)
			exec1(t, s, `DELETE FROM ledger_checkpoints WHERE number = 1`)
		})
		code, report := verifyDB(t, "-db", copied, "-public-key", keyFile, "-checkpoints", hook.path)
		assert.Equal(t, 1, code, report)
		assert.Contains(t, report, ledger.ProblemCheckpointMissing)
	})

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{},
			{"-db", db},
			{"-db", db, "-public-key", "not-a-key"},
			{"-db", filepath.Join(t.TempDir(), "none.db"), "-public-key", keyFile},
			{"-db", db, "-public-key", keyFile, "-checkpoints", keyFile},
			{"-db", db, "-public-key", keyFile, "extra"},
		} {
			code, report := verifyDB(t, args...)
			assert.Equal(t, 2, code, "%q: %s", args, report)
		}
		other := filepath.Join(t.TempDir(), "other.key")
		otherKey, _, err := ledger.LoadOrCreateKey(other)
		require.NoError(t, err)
		code, report := verifyDB(t, "-db", db, "-public-key", otherKey.Info().PublicKey)
		assert.Equal(t, 1, code, report)
		assert.Contains(t, report, ledger.ProblemSignature)
	})
}

// svc refuses to start with a ledger key that others may read.
func TestAnExposedLedgerKeyStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "ledger.key")
	_, _, err := ledger.LoadOrCreateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(key, 0o644))
	cmd := execSVC(t, "SVC_DB="+filepath.Join(dir, "svc.db"), "SVC_PLUGIN_DIR="+testbin.PluginDir(t))
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "SVC_LEDGER_KEY_FILE")
	assert.Contains(t, string(out), "chmod 600")
}

// svc verify takes a PostgreSQL address as -db, the database replicas
// share: it finds it whole, then names a run edited in it.
func TestSvcVerifyReadsAPostgreSQLDatabase(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	s := storetest.OpenAt(t, dsn)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	var recs []*ledger.Record
	for range 2 {
		run := &ledger.Run{ID: ids.New("run"), TenantID: tenant.DefaultID, CreatedAt: at, Route: ledger.RouteLive,
			Status: ledger.StatusOK, HTTPStatus: 200, Model: "gpt-4o-mini", Mode: "optimize", Provider: "mock",
			Explanation: ledger.RouteExplanation{Route: ledger.RouteLive, Rejected: []ledger.Alternative{}},
			Request:     json.RawMessage(`{}`)}
		recs = append(recs, ledger.NewRecord(run, []ledger.Event{{Type: "request.received", At: at, Payload: json.RawMessage(`{}`)}}, at))
	}
	require.NoError(t, s.InsertRuns(ctx, recs))
	key, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)
	_, err = ledger.NewCheckpointer(ledger.CheckpointerOptions{Store: s, Key: key, Entries: 1, Interval: time.Hour}).Seal(ctx)
	require.NoError(t, err)
	pub := hex.EncodeToString(key.Public)

	code, report := verifyDB(t, "-db", dsn, "-public-key", pub)
	require.Equal(t, 0, code, report)
	assert.Contains(t, report, "ok: the database matches its signed checkpoints")
	assert.Contains(t, report, "runs: 2 match the ledger")

	_, err = s.DB().Exec(`UPDATE runs SET cost_usd = 1 WHERE id = $1`, recs[1].Run.ID)
	require.NoError(t, err)
	code, report = verifyDB(t, "-db", dsn, "-public-key", pub)
	assert.Equal(t, 1, code, report)
	assert.Contains(t, report, recs[1].Run.ID)
}
