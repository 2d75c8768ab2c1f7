package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
)

// memSessions is a SessionStore in memory that counts lookups, so tests see
// when the cache answers. failWrites, when set, fails every session
// rotation before it changes anything.
type memSessions struct {
	sessions   map[[32]byte]*auth.SessionRecord
	members    map[string][]auth.Membership
	lookups    atomic.Int64
	failWrites error
}

func newMemSessions() *memSessions {
	return &memSessions{sessions: map[[32]byte]*auth.SessionRecord{}, members: map[string][]auth.Membership{}}
}

func (m *memSessions) CreateSession(_ context.Context, h [32]byte, userID, tenantID string, at time.Time) error {
	m.sessions[h] = &auth.SessionRecord{UserID: userID, ActiveTenantID: tenantID, CreatedAt: at, LastSeenAt: at}
	return nil
}

func (m *memSessions) RotateSession(_ context.Context, old, next [32]byte, userID, tenantID string, at time.Time) (time.Time, error) {
	s, ok := m.sessions[old]
	if !ok || s.UserID != userID {
		return time.Time{}, errs.NotFoundf("session not found")
	}
	if m.failWrites != nil {
		return time.Time{}, m.failWrites
	}
	m.sessions[next] = &auth.SessionRecord{UserID: userID, ActiveTenantID: tenantID, CreatedAt: s.CreatedAt, LastSeenAt: at}
	delete(m.sessions, old)
	return s.CreatedAt, nil
}

func (m *memSessions) LookupSession(_ context.Context, h [32]byte) (auth.SessionRecord, error) {
	m.lookups.Add(1)
	s, ok := m.sessions[h]
	if !ok {
		return auth.SessionRecord{}, errs.NotFoundf("session not found")
	}
	rec := *s
	rec.Memberships = m.members[s.UserID]
	return rec, nil
}

func (m *memSessions) TouchSession(_ context.Context, h [32]byte, at time.Time) error {
	if s, ok := m.sessions[h]; ok {
		s.LastSeenAt = at
	}
	return nil
}

func (m *memSessions) DeleteSession(_ context.Context, h [32]byte) error {
	delete(m.sessions, h)
	return nil
}

func (m *memSessions) DeleteUserSessions(_ context.Context, userID string) error {
	for h, s := range m.sessions {
		if s.UserID == userID {
			delete(m.sessions, h)
		}
	}
	return nil
}

func (m *memSessions) HasUsers(context.Context) (bool, error) { return len(m.members) > 0, nil }

// signIn starts a session and returns a request carrying its cookie.
func signIn(t testing.TB, m *auth.SessionManager, userID, tenantID string) *http.Request {
	t.Helper()
	rec := httptest.NewRecorder()
	require.NoError(t, m.Start(context.Background(), rec, httptest.NewRequest("POST", "/api/v1/auth/login", nil), userID, tenantID))
	req := httptest.NewRequest("GET", "/api/v1/runs", nil)
	for _, c := range rec.Result().Cookies() {
		req.AddCookie(c)
	}
	return req
}

func newManager(t testing.TB, store *memSessions, c *fakeclock.Clock) *auth.SessionManager {
	m, err := auth.NewSessionManager(context.Background(), store, false, false, c.Now)
	require.NoError(t, err)
	return m
}

func TestSessionIdentityIsCachedAndInvalidated(t *testing.T) {
	store := newMemSessions()
	store.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleMember}}
	c := fakeclock.New(time.Unix(1_800_000_000, 0))
	m := newManager(t, store, c)
	req := signIn(t, m, "u1", "t1")

	id, err := m.FromRequest(req)
	require.NoError(t, err)
	require.NotNil(t, id)
	assert.Equal(t, auth.Identity{TenantID: "t1", UserID: "u1", Via: auth.ViaSession, Mode: auth.Optimize, OrgRole: auth.RoleMember}, *id)
	for range 10 {
		_, _ = m.FromRequest(req)
	}
	assert.EqualValues(t, 1, store.lookups.Load(), "the cache answers repeated requests")

	store.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleAdmin}}
	m.Invalidate()
	id, _ = m.FromRequest(req)
	assert.True(t, id.Admin, "a change is seen after Invalidate")

	c.Advance(2 * time.Minute)
	_, _ = m.FromRequest(req)
	assert.EqualValues(t, 3, store.lookups.Load(), "the cache re-reads the store at least once a minute")

	require.NoError(t, m.End(context.Background(), httptest.NewRecorder(), req))
	id, err = m.FromRequest(req)
	require.NoError(t, err)
	assert.Nil(t, id, "logout ends the cached session at once")
}

func TestSessionLifetimes(t *testing.T) {
	store := newMemSessions()
	store.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleOwner}}
	c := fakeclock.New(time.Unix(1_800_000_000, 0))
	m := newManager(t, store, c)

	idle := signIn(t, m, "u1", "t1")
	c.Advance(auth.IdleLifetime + time.Second)
	id, _ := m.FromRequest(idle)
	assert.Nil(t, id, "a week without use ends a session")

	busy := signIn(t, m, "u1", "t1")
	start := c.Now()
	for c.Now().Sub(start) < auth.AbsoluteLifetime-3*24*time.Hour {
		c.Advance(3 * 24 * time.Hour)
		id, _ := m.FromRequest(busy)
		require.NotNil(t, id, "a session in use lives on")
	}
	c.Set(start.Add(auth.AbsoluteLifetime))
	id, _ = m.FromRequest(busy)
	assert.Nil(t, id, "no session outlives the absolute lifetime however busy")
}

// switchTo switches req's session to tenantID and returns a request carrying
// the new cookie, and that cookie.
func switchTo(t *testing.T, m *auth.SessionManager, req *http.Request, userID, tenantID string) (*http.Request, *http.Cookie) {
	t.Helper()
	rec := httptest.NewRecorder()
	require.NoError(t, m.Switch(context.Background(), rec, req, userID, tenantID))
	cookies := rec.Result().Cookies()
	require.Len(t, cookies, 1)
	next := httptest.NewRequest("GET", "/api/v1/runs", nil)
	next.AddCookie(cookies[0])
	return next, cookies[0]
}

func TestSwitchKeepsTheAbsoluteLifetime(t *testing.T) {
	store := newMemSessions()
	store.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleOwner}, {TenantID: "t2", Role: auth.RoleMember}}
	c := fakeclock.New(time.Unix(1_800_000_000, 0))
	m := newManager(t, store, c)
	start := c.Now()
	req := signIn(t, m, "u1", "t1")

	c.Advance(5 * 24 * time.Hour)
	require.NotNil(t, resolve(t, m, req))
	next, cookie := switchTo(t, m, req, "u1", "t2")
	assert.Nil(t, resolve(t, m, req), "the session before the switch ended")
	id := resolve(t, m, next)
	require.NotNil(t, id)
	assert.Equal(t, "t2", id.TenantID)
	assert.Equal(t, int((auth.AbsoluteLifetime-5*24*time.Hour)/time.Second), cookie.MaxAge,
		"the cookie lives as long as the first sign-in allows")

	// Switching back and forth, in use every few days, up to the deadline.
	tenants := []string{"t1", "t2"}
	for i := 0; c.Now().Sub(start) < auth.AbsoluteLifetime-3*24*time.Hour; i++ {
		c.Advance(3 * 24 * time.Hour)
		next, _ = switchTo(t, m, next, "u1", tenants[i%2])
		require.NotNil(t, resolve(t, m, next), "a switched session lives on")
	}
	c.Set(start.Add(auth.AbsoluteLifetime - time.Second))
	require.NotNil(t, resolve(t, m, next))
	c.Set(start.Add(auth.AbsoluteLifetime))
	assert.Nil(t, resolve(t, m, next), "switching never outlives the first sign-in's absolute lifetime")
}

func TestFailedSwitchKeepsTheSession(t *testing.T) {
	store := newMemSessions()
	store.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleOwner}, {TenantID: "t2", Role: auth.RoleMember}}
	m := newManager(t, store, fakeclock.New(time.Unix(1_800_000_000, 0)))
	req := signIn(t, m, "u1", "t1")

	store.failWrites = errors.New("disk full")
	rec := httptest.NewRecorder()
	require.Error(t, m.Switch(context.Background(), rec, req, "u1", "t2"))
	assert.Empty(t, rec.Result().Cookies(), "no new cookie")
	m.Invalidate() // read the store, not the cache
	id := resolve(t, m, req)
	require.NotNil(t, id, "a failed switch leaves the session signed in")
	assert.Equal(t, "t1", id.TenantID)
}

func TestSwitchNeedsASessionOfTheUser(t *testing.T) {
	store := newMemSessions()
	store.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleOwner}}
	store.members["u2"] = []auth.Membership{{TenantID: "t2", Role: auth.RoleOwner}}
	m := newManager(t, store, fakeclock.New(time.Unix(1_800_000_000, 0)))
	req := signIn(t, m, "u1", "t1")

	for _, r := range []*http.Request{httptest.NewRequest("POST", "/", nil), req} {
		rec := httptest.NewRecorder()
		err := m.Switch(context.Background(), rec, r, "u2", "t2")
		assert.True(t, errs.Is(err, errs.Unauthorized), "%v", err)
		assert.Empty(t, rec.Result().Cookies())
	}
	id := resolve(t, m, req)
	require.NotNil(t, id, "u1's session is untouched")
	assert.Equal(t, "u1", id.UserID)
	assert.Len(t, store.sessions, 1)
}

// resolve returns the identity of req's session, nil when there is none.
func resolve(t *testing.T, m *auth.SessionManager, req *http.Request) *auth.Identity {
	t.Helper()
	id, err := m.FromRequest(req)
	require.NoError(t, err)
	return id
}

func TestResolveHealsAStaleActiveOrg(t *testing.T) {
	rec := auth.SessionRecord{UserID: "u", ActiveTenantID: "gone", Memberships: []auth.Membership{
		{TenantID: "first", Role: auth.RoleMember}, {TenantID: "second", Role: auth.RoleOwner}}}
	id, err := auth.Resolve(rec)
	require.NoError(t, err)
	assert.Equal(t, "first", id.TenantID)
	assert.False(t, id.Admin)

	rec.ActiveTenantID = "second"
	id, _ = auth.Resolve(rec)
	assert.Equal(t, "second", id.TenantID)
	assert.True(t, id.Admin, "owner is elevated")

	rec.ActiveTenantID, rec.PlatformAdmin = "first", true
	id, _ = auth.Resolve(rec)
	assert.True(t, id.Admin, "the platform admin is admin everywhere")

	_, err = auth.Resolve(auth.SessionRecord{UserID: "u"})
	assert.True(t, errs.Is(err, errs.Forbidden))
}

func TestForgedOrOversizedCookiesAreNoSession(t *testing.T) {
	m := newManager(t, newMemSessions(), fakeclock.New(time.Now()))
	for _, v := range []string{"forged", string(make([]byte, 500))} {
		req := httptest.NewRequest("GET", "/", nil)
		req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: v})
		id, err := m.FromRequest(req)
		assert.NoError(t, err)
		assert.Nil(t, id)
	}
}

// BenchmarkSessionIdentityCached is the cost of resolving a signed-in
// request's identity once its session is cached.
func BenchmarkSessionIdentityCached(b *testing.B) {
	store := newMemSessions()
	store.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleOwner}}
	m, err := auth.NewSessionManager(context.Background(), store, false, false, nil)
	require.NoError(b, err)
	req := signIn(b, m, "u1", "t1")
	if id, _ := m.FromRequest(req); id == nil {
		b.Fatal("no identity")
	}
	b.ReportAllocs()
	for b.Loop() {
		if id, _ := m.FromRequest(req); id == nil {
			b.Fatal("no identity")
		}
	}
}

// slowLookup holds a lookup after it read the session, as a request in
// flight while the same session logs out.
type slowLookup struct {
	*memSessions
	mu      sync.Mutex
	read    chan struct{}
	release chan struct{}
	block   bool
}

func (s *slowLookup) LookupSession(ctx context.Context, h [32]byte) (auth.SessionRecord, error) {
	s.mu.Lock()
	rec, err := s.memSessions.LookupSession(ctx, h)
	block := s.block
	s.mu.Unlock()
	if block {
		close(s.read)
		<-s.release
	}
	return rec, err
}

func (s *slowLookup) DeleteSession(ctx context.Context, h [32]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memSessions.DeleteSession(ctx, h)
}

func TestLogoutWinsOverARequestInFlight(t *testing.T) {
	st := &slowLookup{memSessions: newMemSessions(), read: make(chan struct{}), release: make(chan struct{})}
	st.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleMember}}
	ctx := context.Background()
	m, err := auth.NewSessionManager(ctx, st, false, false, nil)
	require.NoError(t, err)
	w := httptest.NewRecorder()
	require.NoError(t, m.Start(ctx, w, httptest.NewRequest("POST", "/", nil), "u1", "t1"))
	cookie := w.Result().Cookies()[0]
	req := func() *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(cookie)
		return r
	}

	st.block = true
	done := make(chan *auth.Identity)
	go func() { id, _ := m.FromRequest(req()); done <- id }() // a request in flight
	<-st.read
	st.mu.Lock()
	st.block = false
	st.mu.Unlock()
	require.NoError(t, m.End(ctx, httptest.NewRecorder(), req())) // logout
	close(st.release)
	<-done // the request in flight has returned: whatever it cached is in the cache
	id, err := m.FromRequest(req())
	require.NoError(t, err)
	require.Nil(t, id, "the logged-out session still resolves from the cache")
}

// nopFeed is a change feed that carries nothing: the replicated caches'
// request path, measured alone.
type nopFeed struct{}

func (nopFeed) Notify(context.Context, string, string) error { return nil }
func (nopFeed) Subscribe(string, func(string))               {}

// BenchmarkSessionIdentityCachedReplicated is BenchmarkSessionIdentityCached
// with the refresh bound of several replicas.
func BenchmarkSessionIdentityCachedReplicated(b *testing.B) {
	store := newMemSessions()
	store.members["u1"] = []auth.Membership{{TenantID: "t1", Role: auth.RoleOwner}}
	m, err := auth.NewSessionManager(context.Background(), store, false, false, nil)
	require.NoError(b, err)
	m.Replicate(nopFeed{}, 5*time.Second)
	req := signIn(b, m, "u1", "t1")
	if id, _ := m.FromRequest(req); id == nil {
		b.Fatal("no identity")
	}
	b.ReportAllocs()
	for b.Loop() {
		if id, _ := m.FromRequest(req); id == nil {
			b.Fatal("no identity")
		}
	}
}
