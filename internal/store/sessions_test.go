package store_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func sessionUser(t *testing.T, s *store.Store, id string, at time.Time) {
	t.Helper()
	require.NoError(t, s.CreateUser(context.Background(), accounts.NewUser{
		User:         accounts.User{ID: id, Email: id + "@example.com", Name: id, Role: accounts.PlatformMember, CreatedAt: at},
		PasswordHash: "x", TenantID: tenant.DefaultID, OrgRole: auth.RoleOwner,
	}))
}

func TestRotateSessionKeepsCreationAndSwapsAtOnce(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	t0 := time.UnixMilli(1_800_000_000_000).UTC()
	sessionUser(t, s, "usr_1", t0)
	sessionUser(t, s, "usr_2", t0)
	h1, h2, h3 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two")), sha256.Sum256([]byte("three"))
	require.NoError(t, s.CreateSession(ctx, h1, "usr_1", tenant.DefaultID, t0))

	t1 := t0.Add(5 * 24 * time.Hour)
	created, err := s.RotateSession(ctx, h1, h2, "usr_1", "t_other", t1)
	require.NoError(t, err)
	assert.Equal(t, t0, created)
	rec, err := s.LookupSession(ctx, h2)
	require.NoError(t, err)
	assert.Equal(t, "usr_1", rec.UserID)
	assert.Equal(t, "t_other", rec.ActiveTenantID)
	assert.Equal(t, t0, rec.CreatedAt, "the absolute lifetime counts from the first sign-in")
	assert.Equal(t, t1, rec.LastSeenAt)
	_, err = s.LookupSession(ctx, h1)
	assert.True(t, errs.Is(err, errs.NotFound), "the old session is gone: %v", err)

	// The insert fails on the primary key: nothing changes.
	require.NoError(t, s.CreateSession(ctx, h3, "usr_2", tenant.DefaultID, t1))
	_, err = s.RotateSession(ctx, h2, h3, "usr_1", tenant.DefaultID, t1.Add(time.Hour))
	assert.True(t, errs.Is(err, errs.Conflict), "%v", err)
	rec, err = s.LookupSession(ctx, h2)
	require.NoError(t, err, "a failed rotation leaves the old session")
	assert.Equal(t, "t_other", rec.ActiveTenantID)
	assert.Equal(t, t1, rec.LastSeenAt)
	rec, err = s.LookupSession(ctx, h3)
	require.NoError(t, err)
	assert.Equal(t, "usr_2", rec.UserID, "nor touches the row it collided with")

	// Another user's session, or an unknown one, is not rotated.
	h4 := sha256.Sum256([]byte("four"))
	for _, old := range [][32]byte{h3, h1} {
		_, err = s.RotateSession(ctx, old, h4, "usr_1", tenant.DefaultID, t1)
		assert.True(t, errs.Is(err, errs.NotFound), "%v", err)
	}
	_, err = s.LookupSession(ctx, h4)
	assert.True(t, errs.Is(err, errs.NotFound))
	_, err = s.LookupSession(ctx, h3)
	assert.NoError(t, err)
}

// A device belongs to the account whose email it is asked with, until its
// lifetime runs out; a replaced device is forgotten, but only by its own
// account; an account keeps its most recently used devices only.
func TestSignInDevicesAreKeptPerAccount(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	t0 := time.UnixMilli(1_800_000_000_000).UTC()
	sessionUser(t, s, "usr_1", t0)
	sessionUser(t, s, "usr_2", t0)
	dev := func(i int) [32]byte { return sha256.Sum256([]byte{byte(i)}) }
	known := func(h [32]byte, email string, since time.Time) bool {
		t.Helper()
		ok, err := s.DeviceOf(ctx, h, email, since)
		require.NoError(t, err)
		return ok
	}
	never := time.Time{}
	var none [32]byte

	require.NoError(t, s.ReplaceDevice(ctx, none, dev(1), "usr_1", t0, 20))
	assert.True(t, known(dev(1), "usr_1@example.com", t0))
	assert.False(t, known(dev(1), "usr_2@example.com", t0), "another account's device")
	assert.False(t, known(dev(2), "usr_1@example.com", t0), "an unknown device")
	assert.False(t, known(dev(1), "usr_1@example.com", t0.Add(time.Millisecond)), "a device unused since")

	// Another account cannot replace usr_1's device; usr_1 can.
	require.NoError(t, s.ReplaceDevice(ctx, dev(1), dev(2), "usr_2", t0, 20))
	assert.True(t, known(dev(1), "usr_1@example.com", t0))
	require.NoError(t, s.ReplaceDevice(ctx, dev(1), dev(3), "usr_1", t0.Add(time.Hour), 20))
	assert.False(t, known(dev(1), "usr_1@example.com", t0))
	assert.True(t, known(dev(3), "usr_1@example.com", t0.Add(time.Hour)))

	// Past keep, the least recently used go; the new one always stays,
	// even among devices used at the same moment.
	for i := 10; i < 15; i++ {
		require.NoError(t, s.ReplaceDevice(ctx, none, dev(i), "usr_1", t0.Add(2*time.Hour), 3))
		assert.True(t, known(dev(i), "usr_1@example.com", t0), "device %d", i)
	}
	kept := 0
	for i := 0; i < 15; i++ {
		if known(dev(i), "usr_1@example.com", t0) {
			kept++
		}
	}
	assert.Equal(t, 3, kept)
	assert.False(t, known(dev(3), "usr_1@example.com", t0), "the least recently used went first")
	assert.True(t, known(dev(2), "usr_2@example.com", t0), "another account's devices are not counted")

	// Devices unused before the expiry are forgotten, whoever they belong to.
	n, err := s.ExpireDevices(ctx, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.False(t, known(dev(2), "usr_2@example.com", never), "usr_2's device expired")
	assert.True(t, known(dev(14), "usr_1@example.com", never))
}

// HasUsers is what decides account mode at start, on either engine.
func TestHasUsers(t *testing.T) {
	s := storetest.Open(t)
	has, err := s.HasUsers(context.Background())
	require.NoError(t, err)
	assert.False(t, has, "a new database has no user")
	sessionUser(t, s, "usr_first", time.UnixMilli(1_800_000_000_000))
	has, err = s.HasUsers(context.Background())
	require.NoError(t, err)
	assert.True(t, has)
}
