package settings_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/changes/changestest"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// memStore keeps settings in memory; what a test writes to it directly is
// a change made by another replica.
type memStore struct {
	mu   sync.Mutex
	vals map[string]map[string]json.RawMessage
	// fail, when set, is every read's error.
	fail error
	// afterRead, when set, runs inside a read once its values are taken:
	// a change racing the read.
	afterRead func()
	// afterPut, when set, runs once a value is stored.
	afterPut func()
}

func newMemStore() *memStore { return &memStore{vals: map[string]map[string]json.RawMessage{}} }

func (m *memStore) TenantSettings(_ context.Context, tenantID string) (map[string]json.RawMessage, error) {
	m.mu.Lock()
	if m.fail != nil {
		defer m.mu.Unlock()
		return nil, m.fail
	}
	out := map[string]json.RawMessage{}
	for k, v := range m.vals[tenantID] {
		out[k] = v
	}
	hook := m.afterRead
	m.afterRead = nil
	m.mu.Unlock()
	if hook != nil {
		hook()
	}
	return out, nil
}

func (m *memStore) PutTenantSetting(_ context.Context, tenantID, key string, value json.RawMessage, _ time.Time) error {
	m.put(tenantID, key, string(value))
	if m.afterPut != nil {
		m.afterPut()
	}
	return nil
}

func (m *memStore) put(tenantID, key, value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.vals[tenantID] == nil {
		m.vals[tenantID] = map[string]json.RawMessage{}
	}
	m.vals[tenantID][key] = json.RawMessage(value)
}

const refresh = 5 * time.Second

// replica is a settings service replicated through a fake feed on a fake
// clock.
func replica(t *testing.T, st *memStore) (*settings.Service, *changestest.Feed, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := settings.NewService(st, &netguard.Guard{Resolver: dns}, clock.Now)
	feed := changestest.New()
	s.Replicate(feed, refresh)
	return s, feed, clock
}

func retention(t *testing.T, s *settings.Service, tenantID string) float64 {
	t.Helper()
	days, err := s.RetentionDays(context.Background(), tenantID)
	require.NoError(t, err)
	return days
}

func TestSetIsAnnouncedEvenWhenTheClientHangsUp(t *testing.T) {
	st := newMemStore()
	s, feed, _ := replica(t, st)
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	st.afterPut = hangUp

	_, _ = s.Set(ctx, "t1", settings.RetentionDays, json.RawMessage("7"))
	notices := feed.Notices()
	require.Len(t, notices, 1)
	assert.Equal(t, "t1", notices[0].Payload)
	assert.NoError(t, notices[0].Err, "the other replicas must hear of the change")
	assert.True(t, notices[0].Deadline)
}

func TestANoticeDropsTheTenant(t *testing.T) {
	st := newMemStore()
	s, feed, _ := replica(t, st)
	st.put("t1", settings.RetentionDays, "7")
	st.put("t2", settings.RetentionDays, "8")
	require.Equal(t, 7.0, retention(t, s, "t1"))
	require.Equal(t, 8.0, retention(t, s, "t2"))

	st.put("t1", settings.RetentionDays, "9") // on another replica
	st.put("t2", settings.RetentionDays, "10")
	assert.Equal(t, 7.0, retention(t, s, "t1"), "cached until told")
	feed.Publish("settings", "t1")
	assert.Equal(t, 9.0, retention(t, s, "t1"))
	assert.Equal(t, 8.0, retention(t, s, "t2"), "another tenant's entry stays")

	feed.Publish("settings", changes.Everything)
	assert.Equal(t, 10.0, retention(t, s, "t2"), "everything is dropped on a reconnect")
}

func TestALostNoticeIsHealedWithinTheRefreshBound(t *testing.T) {
	st := newMemStore()
	s, _, clock := replica(t, st)
	st.put("t1", settings.RetentionDays, "7")
	require.Equal(t, 7.0, retention(t, s, "t1"))

	st.put("t1", settings.RetentionDays, "9") // its notice lost
	clock.Advance(refresh - time.Millisecond)
	assert.Equal(t, 7.0, retention(t, s, "t1"), "trusted within the bound")
	clock.Advance(time.Millisecond)
	assert.Equal(t, 9.0, retention(t, s, "t1"), "read again at the bound")
}

func TestAReadInFlightDoesNotCacheADroppedEntry(t *testing.T) {
	for _, payload := range []string{"t1", changes.Everything} {
		st := newMemStore()
		s, feed, _ := replica(t, st)
		st.put("t1", settings.RetentionDays, "7")
		// The change lands, and is announced, while a read holds the old
		// value.
		st.afterRead = func() {
			st.put("t1", settings.RetentionDays, "9")
			feed.Publish("settings", payload)
		}
		assert.Equal(t, 7.0, retention(t, s, "t1"), "the read in flight answers what it read")
		assert.Equal(t, 9.0, retention(t, s, "t1"), "but does not keep it (payload %q)", payload)
	}
}

// A tenant's zone outlives a read of its settings that fails: its spend
// stays in its own windows.
func TestZoneOutlivesAFailedRead(t *testing.T) {
	st := newMemStore()
	s, _, clock := replica(t, st)
	st.put("t1", settings.Timezone, `"Asia/Kolkata"`)
	ctx := context.Background()
	require.Equal(t, "Asia/Kolkata", s.Zone(ctx, "t1").String())
	st.mu.Lock()
	st.fail = errors.New("database gone")
	st.mu.Unlock()
	clock.Advance(2 * refresh)
	assert.Equal(t, "Asia/Kolkata", s.Zone(ctx, "t1").String(), "the zone last read")
	assert.Equal(t, time.UTC, s.Zone(ctx, "t2"), "UTC for a tenant never read")
}
