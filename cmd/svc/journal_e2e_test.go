package main_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/testbin"
)

// Replicas on one PostgreSQL keep a run journal each: two start side by
// side on their own folders, and a third process on a folder one of them
// holds is refused, naming SVC_JOURNAL_DIR and the folder.
func TestReplicaJournalsOnPostgres(t *testing.T) {
	dsn := storetest.DSN(t)
	dir := t.TempDir()
	journalA, journalB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	env := func(journal string) []string {
		return []string{"SVC_JOURNAL_DIR=" + journal, "SVC_LEDGER_KEY_FILE=" + filepath.Join(dir, "ledger.key")}
	}
	startWithDB(t, dsn, env(journalA)...)
	startWithDB(t, dsn, env(journalB)...)

	cmd := execSVC(t, append([]string{"SVC_DB=" + dsn, "SVC_PLUGIN_DIR=" + testbin.PluginDir(t)}, env(journalA)...)...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a second process on replica a's journal starts")
	assert.Contains(t, string(out), "SVC_JOURNAL_DIR")
	assert.Contains(t, string(out), journalA)
}
