package audit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

func TestFilterValidate(t *testing.T) {
	f := audit.Filter{}
	require.NoError(t, f.Validate())
	assert.Equal(t, audit.DefaultLimit, f.Limit)
	f = audit.Filter{Limit: 5000}
	require.NoError(t, f.Validate())
	assert.Equal(t, audit.MaxLimit, f.Limit)
	for _, bad := range []audit.Filter{{Limit: -1}, {Decision: "maybe"}} {
		assert.Equal(t, errs.Invalid, errs.KindOf(bad.Validate()))
	}
	at := time.Unix(1_700_000_000, 0)
	for param, bad := range map[string]audit.Filter{
		"action": {Action: string(make([]byte, 201))},
		"actor":  {Actor: "\xff"},
		"until":  {Since: at, Until: at},
	} {
		err := bad.Validate()
		assert.Equal(t, errs.Invalid, errs.KindOf(err), param)
		assert.Equal(t, param, errs.As(err).Param, param)
	}
}

func TestRecordFillsIDAndTimeAndSurvivesCancellation(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	l := audit.NewLog(storetest.Open(t), hclog.NewNullLogger(), func() time.Time { return now })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Record(ctx, audit.Event{TenantID: tenant.DefaultID, Actor: "open", Action: "key.create", Decision: audit.Allow})

	events, err := l.List(context.Background(), tenant.DefaultID, audit.Filter{})
	require.NoError(t, err)
	require.Len(t, events, 1)
	assert.NotEmpty(t, events[0].ID)
	assert.True(t, now.Equal(events[0].At))
	assert.Equal(t, map[string]any{}, events[0].Details)
}

type failingStore struct{}

func (failingStore) AppendAudit(context.Context, *audit.Event) error { return errors.New("disk full") }
func (failingStore) ListAudit(context.Context, string, audit.Filter) ([]audit.Event, error) {
	return nil, nil
}

func TestRecordFailureIsLoggedNotReturned(t *testing.T) {
	var logged []string
	logger := hclog.New(&hclog.LoggerOptions{Output: writerFunc(func(p []byte) { logged = append(logged, string(p)) })})
	audit.NewLog(failingStore{}, logger, nil).Record(context.Background(), audit.Event{Action: "x"})
	require.Len(t, logged, 1)
	assert.Contains(t, logged[0], "disk full")
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }
