package httpapi_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/ledger"
)

// A tenant lists its own signed checkpoints, never another's, and reads the
// key that verifies them; each checkpoint went to its tenant's webhook.
func TestLedgerCheckpointsAndKey(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirToken, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Observe})
	require.NoError(t, err)

	empty := ts.call(t, "GET", "/api/v1/ledger/checkpoints", bootstrap, "")
	require.Equal(t, http.StatusOK, empty.status, empty.body)
	assert.Equal(t, `{"checkpoints":[],"total":0}`, strings.TrimSpace(empty.body))

	ts.chatRun(t, bootstrap, triage)
	ts.chatRun(t, bootstrap, strings.Replace(triage, "this month", "last month", 1))
	ts.chatRun(t, theirToken, triage)
	ts.call(t, "GET", "/api/v1/runs", bootstrap, "") // the runs are stored once a read asks
	made, err := ts.checkpoints.Seal(context.Background())
	require.NoError(t, err)
	require.Len(t, made, 2)
	assert.Equal(t, []string{ledger.CheckpointEvent, ledger.CheckpointEvent}, ts.notified.list())

	keyRes := ts.call(t, "GET", "/api/v1/ledger/key", bootstrap, "")
	require.Equal(t, http.StatusOK, keyRes.status, keyRes.body)
	assert.Equal(t, "ed25519", keyRes.json["algorithm"])
	pub, err := ledger.ParsePublicKey(keyRes.body)
	require.NoError(t, err)
	assert.Equal(t, keyRes.json["keyId"], ledger.KeyID(pub))
	assert.Equal(t, keyRes.body, ts.call(t, "GET", "/api/v1/ledger/key", theirToken, "").body, "one key signs for every tenant")

	list := func(token string) []ledger.Checkpoint {
		t.Helper()
		res := ts.call(t, "GET", "/api/v1/ledger/checkpoints", token, "")
		require.Equal(t, http.StatusOK, res.status, res.body)
		var out struct {
			Checkpoints []ledger.Checkpoint `json:"checkpoints"`
			Total       int                 `json:"total"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.body), &out))
		assert.Len(t, out.Checkpoints, out.Total)
		return out.Checkpoints
	}
	mine, theirs := list(bootstrap), list(theirToken)
	require.Len(t, mine, 1)
	require.Len(t, theirs, 1)
	assert.Equal(t, 2, mine[0].Entries)
	assert.Equal(t, 1, theirs[0].Entries)
	assert.NotEqual(t, mine[0].TenantID, theirs[0].TenantID)
	assert.Equal(t, other.ID, theirs[0].TenantID)
	for _, cp := range append(mine, theirs...) {
		assert.NoError(t, cp.CheckSignature([]ed25519.PublicKey{pub}), "verifies with the key the API shows")
	}

	for _, q := range []string{"limit=-1", "limit=ten", "offset=-1"} {
		bad := ts.call(t, "GET", "/api/v1/ledger/checkpoints?"+q, bootstrap, "")
		assert.Equal(t, http.StatusBadRequest, bad.status, q)
	}
	paged := ts.call(t, "GET", "/api/v1/ledger/checkpoints?limit=1&offset=1", bootstrap, "")
	assert.Equal(t, http.StatusOK, paged.status)
	assert.Empty(t, paged.json["checkpoints"])
	assert.InDelta(t, 1, paged.json["total"], 0)
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "GET", "/api/v1/ledger/checkpoints", "", "").status)
}
