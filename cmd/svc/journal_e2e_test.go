package main_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/testbin"
)

// Replicas on one PostgreSQL keep a run journal each: a second process on
// a journal folder another one holds is refused, naming SVC_JOURNAL_DIR;
// a replica killed with SIGKILL finds its journal again when it restarts
// on the same folder and stores its acknowledged runs, which every other
// replica then serves.
func TestReplicaJournalsOnPostgres(t *testing.T) {
	dsn := storetest.DSN(t)
	dir := t.TempDir()
	journalA, journalB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	env := func(journal string) []string {
		return []string{"SVC_JOURNAL_DIR=" + journal, "SVC_LEDGER_KEY_FILE=" + filepath.Join(dir, "ledger.key")}
	}
	a := startWithDB(t, dsn, env(journalA)...)
	b := startWithDB(t, dsn, env(journalB)...)

	cmd := execSVC(t, append([]string{"SVC_DB=" + dsn, "SVC_PLUGIN_DIR=" + testbin.PluginDir(t)}, env(journalA)...)...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a second process on replica a's journal starts")
	assert.Contains(t, string(out), "SVC_JOURNAL_DIR")
	assert.Contains(t, string(out), journalA)

	const n = 20
	ids := make([]string, n)
	for i := range n {
		body := strings.Replace(chatBody, "Hamlet", fmt.Sprintf("Hamlet, take %d", i), 1)
		status, id, answer := a.chat(t, "", body)
		require.Equal(t, http.StatusOK, status, answer)
		ids[i] = id
	}
	plugins := childPIDs(t, a.cmd.Process.Pid)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.waitExit(t)
	for _, pid := range plugins { // orphaned by the SIGKILL
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}

	startWithDB(t, dsn, env(journalA)...) // stores what a's journal holds before it listens
	for _, id := range ids {
		status, integrity := b.call(t, "GET", "/api/v1/runs/"+id+"/integrity", "", "")
		require.Equal(t, http.StatusOK, status, id)
		assert.Equal(t, true, integrity["ok"], id)
	}
}
