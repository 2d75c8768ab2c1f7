package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func TestOpenAppliesMigrationsOnceAndCreatesDefaultTenant(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "svc.db")

	s, err := store.Open(ctx, path)
	require.NoError(t, err)
	def, err := s.Tenant(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, tenant.DefaultName, def.Name)
	first := def.CreatedAt
	migrations := count(t, s, `SELECT COUNT(*) FROM schema_migrations`)
	require.Positive(t, migrations)
	require.NoError(t, s.Close())

	// A second start changes nothing: same tenant row, migrations not re-run.
	s, err = store.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	def, err = s.Tenant(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, first, def.CreatedAt)
	assert.Equal(t, 1, count(t, s, `SELECT COUNT(*) FROM tenants`))
	assert.Equal(t, migrations, count(t, s, `SELECT COUNT(*) FROM schema_migrations`))
}

func TestPragmas(t *testing.T) {
	if storetest.Postgres() {
		t.Skip("SQLite's connection pragmas; PostgreSQL has none")
	}
	s := storetest.Open(t)
	var mode string
	require.NoError(t, s.DB().QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "wal", mode)
	assert.Equal(t, 1, count(t, s, `PRAGMA foreign_keys`))
	assert.Equal(t, 10000, count(t, s, `PRAGMA busy_timeout`))
	assert.Equal(t, 2, count(t, s, `PRAGMA temp_store`), "MEMORY")
}

func TestForeignKeysEnforced(t *testing.T) {
	s := storetest.Open(t)
	err := s.CreateKey(context.Background(), &auth.Key{ID: "key_x", TenantID: "t_nope", Name: "n", Mode: auth.Observe})
	require.Error(t, err)
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
}

func newKey(tenantID, id string) *auth.Key {
	return &auth.Key{
		ID: id, TenantID: tenantID, Name: "name " + id, Mode: auth.Optimize, AppID: "app",
		Prefix: "svc_abcdefgh", Hash: sha256.Sum256([]byte(id)), CreatedAt: time.UnixMilli(1_700_000_000_000).UTC(),
	}
}

func TestKeysAreTenantScoped(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)

	mine := newKey(tenant.DefaultID, "key_mine")
	theirs := newKey(other.ID, "key_theirs")
	require.NoError(t, s.CreateKey(ctx, mine))
	require.NoError(t, s.CreateKey(ctx, theirs))

	list, err := s.ListKeys(ctx, tenant.DefaultID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, *mine, list[0])

	// Another tenant's key is "not found", and stays active.
	_, err = s.RevokeKey(ctx, tenant.DefaultID, theirs.ID, time.Now())
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	got, err := s.KeyByHash(ctx, theirs.Hash)
	require.NoError(t, err)
	assert.Nil(t, got.RevokedAt)

	at := time.UnixMilli(1_800_000_000_000)
	revoked, err := s.RevokeKey(ctx, other.ID, theirs.ID, at)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	assert.True(t, at.Equal(*revoked.RevokedAt))

	_, err = s.RevokeKey(ctx, other.ID, theirs.ID, at)
	assert.Equal(t, errs.Conflict, errs.KindOf(err))

	_, err = s.KeyByHash(ctx, sha256.Sum256([]byte("unknown")))
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
}

func TestDuplicateKeyHashIsConflict(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	require.NoError(t, s.CreateKey(ctx, newKey(tenant.DefaultID, "key_a")))
	dup := newKey(tenant.DefaultID, "key_b")
	dup.Hash = sha256.Sum256([]byte("key_a"))
	assert.Equal(t, errs.Conflict, errs.KindOf(s.CreateKey(ctx, dup)))
}

func TestSettingsAreTenantScoped(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)

	require.NoError(t, s.PutTenantSetting(ctx, tenant.DefaultID, "redaction", json.RawMessage("true"), time.Now()))
	require.NoError(t, s.PutTenantSetting(ctx, tenant.DefaultID, "redaction", json.RawMessage("false"), time.Now()))
	require.NoError(t, s.PutTenantSetting(ctx, other.ID, "retention_days", json.RawMessage("7"), time.Now()))

	mine, err := s.TenantSettings(ctx, tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, map[string]json.RawMessage{"redaction": json.RawMessage("false")}, mine)
	theirs, err := s.TenantSettings(ctx, other.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]json.RawMessage{"retention_days": json.RawMessage("7")}, theirs)
}

func TestAuditNewestFirstFilteredAndScoped(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	for i, d := range []string{audit.Allow, audit.Deny, audit.Allow, audit.RequireApproval} {
		require.NoError(t, s.AppendAudit(ctx, &audit.Event{
			ID: "aud_" + string(rune('a'+i)), TenantID: tenant.DefaultID, At: at, Actor: "open",
			Action: "x", Decision: d, Details: map[string]any{"i": float64(i)},
		}))
	}
	require.NoError(t, s.AppendAudit(ctx, &audit.Event{ID: "aud_z", TenantID: other.ID, At: at, Actor: "open", Action: "x", Decision: audit.Deny}))

	all, err := s.ListAudit(ctx, tenant.DefaultID, audit.Filter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, all, 4)
	assert.Equal(t, "aud_d", all[0].ID)
	assert.Equal(t, map[string]any{"i": float64(3)}, all[0].Details)

	denies, err := s.ListAudit(ctx, tenant.DefaultID, audit.Filter{Decision: audit.Deny, Limit: 10})
	require.NoError(t, err)
	require.Len(t, denies, 1)
	assert.Equal(t, "aud_b", denies[0].ID)

	limited, err := s.ListAudit(ctx, tenant.DefaultID, audit.Filter{Limit: 2})
	require.NoError(t, err)
	assert.Len(t, limited, 2)
}

func TestAuditFiltersByActionActorAndTime(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	other, err := s.CreateTenant(ctx, "Other")
	require.NoError(t, err)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	for i, e := range []struct{ actor, action string }{
		{"user:a", "key.create"}, {"user:b", "key.create"}, {"user:a", "key.revoke"}, {"key:k", "policy.chat"},
	} {
		require.NoError(t, s.AppendAudit(ctx, &audit.Event{ID: fmt.Sprint("aud_", i), TenantID: tenant.DefaultID,
			At: at.Add(time.Duration(i) * time.Minute), Actor: e.actor, Action: e.action, Decision: audit.Allow}))
	}
	require.NoError(t, s.AppendAudit(ctx, &audit.Event{ID: "aud_z", TenantID: other.ID, At: at, Actor: "user:a",
		Action: "key.create", Decision: audit.Allow}))
	ids := func(f audit.Filter) []string {
		t.Helper()
		f.Limit = 10
		events, err := s.ListAudit(ctx, tenant.DefaultID, f)
		require.NoError(t, err)
		out := []string{}
		for _, e := range events {
			out = append(out, e.ID)
		}
		return out
	}
	assert.Equal(t, []string{"aud_1", "aud_0"}, ids(audit.Filter{Action: "key.create"}), "another tenant's events never match")
	assert.Equal(t, []string{"aud_2", "aud_0"}, ids(audit.Filter{Actor: "user:a"}))
	assert.Equal(t, []string{"aud_0"}, ids(audit.Filter{Actor: "user:a", Action: "key.create"}))
	assert.Equal(t, []string{"aud_3", "aud_2", "aud_1"}, ids(audit.Filter{Since: at.Add(time.Minute)}), "since is included")
	assert.Equal(t, []string{"aud_1", "aud_0"}, ids(audit.Filter{Until: at.Add(2 * time.Minute)}), "until is not")
	assert.Equal(t, []string{"aud_1"}, ids(audit.Filter{Action: "key.create", Since: at.Add(30 * time.Second)}))
}

func count(t *testing.T, s *store.Store, q string) int {
	t.Helper()
	var n int
	require.NoError(t, s.DB().QueryRow(q).Scan(&n))
	return n
}
