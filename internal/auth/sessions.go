package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/errs"
)

// SessionCookie is the name of the cookie that carries a signed-in
// person's session.
const SessionCookie = "svc_session"

// Session lifetimes: a session ends after IdleLifetime without use, and
// after AbsoluteLifetime whatever its use.
const (
	IdleLifetime     = 7 * 24 * time.Hour
	AbsoluteLifetime = 30 * 24 * time.Hour
)

// Per-org roles. Owner and admin are the elevated ones.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Elevated reports whether an org role grants the admin right.
func Elevated(role string) bool { return role == RoleOwner || role == RoleAdmin }

// Membership is a user's role in one organization.
type Membership struct {
	TenantID string
	Role     string
}

// SessionRecord is a stored session with what resolving it needs: the user's
// platform role and memberships, oldest first.
type SessionRecord struct {
	UserID         string
	PlatformAdmin  bool
	ActiveTenantID string
	CreatedAt      time.Time
	LastSeenAt     time.Time
	Memberships    []Membership
}

// SessionStore keeps sessions by the sha256 of their cookie value.
type SessionStore interface {
	CreateSession(ctx context.Context, hash [32]byte, userID, tenantID string, at time.Time) error
	// RotateSession replaces userID's session old with next, active in
	// tenantID and last seen at, keeping old's creation time, all or
	// nothing. It returns that creation time, or errs.NotFound when old is
	// not a session of userID.
	RotateSession(ctx context.Context, old, next [32]byte, userID, tenantID string, at time.Time) (time.Time, error)
	// LookupSession returns errs.NotFound for an unknown session.
	LookupSession(ctx context.Context, hash [32]byte) (SessionRecord, error)
	TouchSession(ctx context.Context, hash [32]byte, at time.Time) error
	DeleteSession(ctx context.Context, hash [32]byte) error
	DeleteUserSessions(ctx context.Context, userID string) error
	HasUsers(ctx context.Context) (bool, error)
}

// SessionManager creates, resolves and ends sessions. Resolved identities
// are cached in memory, so a signed-in request costs a hash and a map
// lookup; any change to sessions, users or memberships calls Invalidate,
// which makes every cached entry re-read the store on its next use.
type SessionManager struct {
	store        SessionStore
	now          func() time.Time
	secure       bool // the cookie's Secure flag: on when the base URL is https
	requireLogin bool

	hasUsers atomic.Bool // once true, stays true: users are never deleted
	gen      atomic.Uint64

	mu    sync.RWMutex
	cache map[[32]byte]cachedSession

	// recheck is how long a cached session goes without reading the
	// store: cacheRecheck, or the refresh bound when Replicate set a
	// shorter one.
	recheck time.Duration
	// With several replicas (Replicate): every Invalidate is announced on
	// feed and heard from the others; until a user exists, whether one
	// does is read again once per refresh (usersChecked, unix nanoseconds).
	feed         changes.Feed
	refresh      time.Duration
	usersChecked atomic.Int64
}

// The topics of the sessions' changes: sessionsTopic drops every cached
// resolution (sessions, users or memberships changed), usersTopic tells
// that a user exists.
const (
	sessionsTopic = "sessions"
	usersTopic    = "users"
)

type cachedSession struct {
	id       Identity
	gen      uint64
	checked  time.Time // when the store was last read
	lastSeen time.Time
	created  time.Time
}

// cacheRecheck bounds how long a cached session goes without reading the
// store, and how stale last_seen_at may be.
const cacheRecheck = time.Minute

// maxCachedSessions bounds the cache; past it the cache starts over.
const maxCachedSessions = 50_000

// NewSessionManager returns a manager over store. secure sets the cookie's
// Secure flag; requireLogin is SVC_REQUIRE_LOGIN. now may be nil.
func NewSessionManager(ctx context.Context, store SessionStore, secure, requireLogin bool, now func() time.Time) (*SessionManager, error) {
	if now == nil {
		now = time.Now
	}
	m := &SessionManager{store: store, now: now, secure: secure, requireLogin: requireLogin,
		cache: make(map[[32]byte]cachedSession), recheck: cacheRecheck}
	has, err := store.HasUsers(ctx)
	if err != nil {
		return nil, err
	}
	m.hasUsers.Store(has)
	return m, nil
}

// Replicate makes the manager follow the other replicas of the database:
// each Invalidate and the first user are announced on feed, and heard from
// the others; a cached session reads the store again once it is older than
// refresh (when shorter than a minute), the bound on a lost notification.
// Call it before use.
func (m *SessionManager) Replicate(feed changes.Feed, refresh time.Duration) {
	m.feed, m.refresh = feed, refresh
	if refresh > 0 && refresh < m.recheck {
		m.recheck = refresh
	}
	feed.Subscribe(sessionsTopic, func(string) { m.gen.Add(1) })
	feed.Subscribe(usersTopic, func(p string) {
		if p == changes.Everything {
			m.usersChecked.Store(0) // read again on the next request
			return
		}
		m.hasUsers.Store(true)
	})
}

// UserCreated tells the manager a user exists: account mode begins.
func (m *SessionManager) UserCreated() {
	if m.hasUsers.CompareAndSwap(false, true) && m.feed != nil {
		changes.Announce(context.Background(), m.feed, usersTopic, "1")
	}
}

// LoginRequired implements Sessions. With replicas, until a user exists
// it reads the store again once per refresh, since another replica may
// have made the first.
func (m *SessionManager) LoginRequired(ctx context.Context) bool {
	if m.requireLogin || m.hasUsers.Load() {
		return true
	}
	if m.feed == nil {
		return false
	}
	now := m.now().UnixNano()
	if last := m.usersChecked.Load(); now-last < int64(m.refresh) || !m.usersChecked.CompareAndSwap(last, now) {
		return false
	}
	has, err := m.store.HasUsers(ctx)
	if err != nil {
		m.usersChecked.Store(0) // try again on the next request
		return true             // the careful side
	}
	if has {
		m.hasUsers.Store(true)
	}
	return has
}

// Invalidate drops every cached resolution; the next request of each
// session reads the store again, on every replica.
func (m *SessionManager) Invalidate() {
	m.gen.Add(1)
	if m.feed != nil {
		changes.Announce(context.Background(), m.feed, sessionsTopic, changes.Everything)
	}
}

// Start creates a session for userID with tenantID active and sets its
// cookie on w. A session cookie already on r is ended first: every login
// gets a fresh id.
func (m *SessionManager) Start(ctx context.Context, w http.ResponseWriter, r *http.Request, userID, tenantID string) error {
	if old, ok := cookieHash(r, SessionCookie); ok {
		m.end(ctx, old)
	}
	token, h, err := newCookieValue()
	if err != nil {
		return err
	}
	if err := m.store.CreateSession(ctx, h, userID, tenantID, m.now()); err != nil {
		return err
	}
	http.SetCookie(w, m.cookie(token, int(AbsoluteLifetime/time.Second)))
	return nil
}

// newCookieValue returns a fresh cookie value and its hash.
func newCookieValue() (string, [32]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", [32]byte{}, err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	return token, sha256.Sum256([]byte(token)), nil
}

// End ends r's session, if any, and clears the cookie.
func (m *SessionManager) End(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, m.cookie("", -1))
	if h, ok := cookieHash(r, SessionCookie); ok {
		return m.end(ctx, h)
	}
	return nil
}

func (m *SessionManager) end(ctx context.Context, h [32]byte) error {
	err := m.store.DeleteSession(ctx, h)
	m.dropCached(h)
	return err
}

// dropCached forgets, once h's row is gone (deleted or replaced), every
// cached resolution: the row goes first so that a request that read it
// before cannot cache the session again.
func (m *SessionManager) dropCached(h [32]byte) {
	m.Invalidate()
	m.forget(h)
}

// EndAll ends every session of userID, as after a password reset.
func (m *SessionManager) EndAll(ctx context.Context, userID string) error {
	err := m.store.DeleteUserSessions(ctx, userID)
	m.Invalidate()
	return err
}

// Switch moves userID, signed in on r, to tenantID: a new session with that
// org active replaces r's, so that a session id never carries over from
// one organization to another. The new session keeps the old one's creation
// time, so that switching never extends the absolute lifetime, and the
// store swaps the two at once, so that a failure leaves r's session as it
// was.
func (m *SessionManager) Switch(ctx context.Context, w http.ResponseWriter, r *http.Request, userID, tenantID string) error {
	old, ok := cookieHash(r, SessionCookie)
	if !ok {
		return errs.E(errs.Unauthorized, "session_required", "sign in first")
	}
	token, h, err := newCookieValue()
	if err != nil {
		return err
	}
	now := m.now()
	created, err := m.store.RotateSession(ctx, old, h, userID, tenantID, now)
	if errs.Is(err, errs.NotFound) {
		return errs.E(errs.Unauthorized, "session_required", "sign in first")
	} else if err != nil {
		return err
	}
	m.dropCached(old)
	left := created.Add(AbsoluteLifetime).Sub(now)
	if left < time.Second {
		_ = m.end(ctx, h)
		return errs.E(errs.Unauthorized, "session_required", "sign in first")
	}
	http.SetCookie(w, m.cookie(token, int(left/time.Second)))
	return nil
}

func (m *SessionManager) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: m.secure, SameSite: http.SameSiteLaxMode}
}

// cookieHash returns the sha256 of the value of r's cookie name.
func cookieHash(r *http.Request, name string) ([32]byte, bool) {
	c, err := r.Cookie(name)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return [32]byte{}, false
	}
	return sha256.Sum256([]byte(c.Value)), true
}

// FromRequest implements Sessions: the identity of r's session, from the
// cache when it is fresh. An unknown or expired session is nil.
func (m *SessionManager) FromRequest(r *http.Request) (*Identity, error) {
	h, ok := cookieHash(r, SessionCookie)
	if !ok {
		return nil, nil
	}
	now := m.now()
	gen := m.gen.Load()
	m.mu.RLock()
	c, hit := m.cache[h]
	m.mu.RUnlock()
	if hit && c.gen == gen && now.Sub(c.checked) < m.recheck && live(c.created, c.lastSeen, now) {
		id := c.id // a copy: the request adds its headers to it
		return &id, nil
	}
	return m.load(r.Context(), h, gen, now)
}

// live reports whether a session created and last seen at these times may
// still be used at now.
func live(created, lastSeen, now time.Time) bool {
	return now.Sub(created) < AbsoluteLifetime && now.Sub(lastSeen) < IdleLifetime
}

func (m *SessionManager) load(ctx context.Context, h [32]byte, gen uint64, now time.Time) (*Identity, error) {
	rec, err := m.store.LookupSession(ctx, h)
	if errs.Is(err, errs.NotFound) {
		m.forget(h)
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if !live(rec.CreatedAt, rec.LastSeenAt, now) {
		_ = m.end(ctx, h)
		return nil, nil
	}
	id, err := Resolve(rec)
	if err != nil {
		return nil, err
	}
	if now.Sub(rec.LastSeenAt) >= cacheRecheck {
		if err := m.store.TouchSession(ctx, h, now); err != nil {
			return nil, err
		}
		rec.LastSeenAt = now
	}
	m.mu.Lock()
	if len(m.cache) >= maxCachedSessions {
		clear(m.cache)
	}
	m.cache[h] = cachedSession{id: id, gen: gen, checked: now, lastSeen: rec.LastSeenAt, created: rec.CreatedAt}
	m.mu.Unlock()
	return &id, nil
}

func (m *SessionManager) forget(h [32]byte) {
	m.mu.Lock()
	delete(m.cache, h)
	m.mu.Unlock()
}

// Resolve turns a stored session into the identity it grants: the tenant is
// the active org while the user is still a member of it, otherwise the
// user's first membership (a stale active org heals itself); admin comes
// from the role in that org or the platform role.
func Resolve(rec SessionRecord) (Identity, error) {
	if len(rec.Memberships) == 0 {
		return Identity{}, errs.E(errs.Forbidden, "no_organization", "your account belongs to no organization")
	}
	m := rec.Memberships[0]
	for _, c := range rec.Memberships {
		if c.TenantID == rec.ActiveTenantID {
			m = c
			break
		}
	}
	return Identity{
		TenantID: m.TenantID, UserID: rec.UserID, Via: ViaSession, Mode: Optimize,
		Admin: Elevated(m.Role) || rec.PlatformAdmin, OrgRole: m.Role,
	}, nil
}
