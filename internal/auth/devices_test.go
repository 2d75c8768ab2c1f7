package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
)

// expiringDevices is a DeviceStore that records what it is asked to expire.
type expiringDevices struct {
	auth.DeviceStore
	before time.Time
}

func (e *expiringDevices) ExpireDevices(_ context.Context, before time.Time) (int, error) {
	e.before = before
	return 2, nil
}

func TestDevicesExpireAfterTheirLifetime(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	store := &expiringDevices{}
	n, err := auth.NewDevices(store, false, func() time.Time { return now }).Expire(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, now.Add(-auth.DeviceLifetime), store.before, "a device unused for its lifetime goes")

	var none *auth.Devices
	n, err = none.Expire(context.Background())
	assert.NoError(t, err)
	assert.Zero(t, n)
}
