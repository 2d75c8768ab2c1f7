package accounts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/audit/audittest"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/email"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/tenant"
)

// The in-memory stores below stand for internal/store, so that the
// accounts rules are tested without SQL or HTTP.

var (
	_ accounts.Store    = (*memAccounts)(nil)
	_ accounts.Mailer   = (*outbox)(nil)
	_ auth.SessionStore = (*memSessions)(nil)
)

type userRow struct {
	user accounts.User
	hash string
}

type membership struct{ tenantID, role string }

type tokenRow struct {
	kind, userID string
	expires      time.Time
	used         bool
}

type inviteRow struct {
	inv  accounts.Invite
	hash [32]byte
}

// memAccounts keeps people, organizations, one-time tokens and invites as
// internal/store does. fail, when set, fails every call.
type memAccounts struct {
	mu       sync.Mutex
	users    []*userRow // in creation order
	members  map[string][]membership
	tenants  map[string]tenant.Tenant
	tokens   map[[32]byte]*tokenRow
	invites  []*inviteRow
	verified map[string]time.Time
	deleted  []string // the tenants DeleteOrg deleted
	fail     error
}

func newMemAccounts(now time.Time) *memAccounts {
	return &memAccounts{members: map[string][]membership{}, tokens: map[[32]byte]*tokenRow{}, verified: map[string]time.Time{},
		tenants: map[string]tenant.Tenant{tenant.DefaultID: {ID: tenant.DefaultID, Name: tenant.DefaultName, CreatedAt: now}}}
}

func (m *memAccounts) byEmail(e string) *userRow {
	for _, u := range m.users {
		if u.user.Email == e {
			return u
		}
	}
	return nil
}

func (m *memAccounts) byID(id string) *userRow {
	for _, u := range m.users {
		if u.user.ID == id {
			return u
		}
	}
	return nil
}

func (m *memAccounts) UserByEmail(_ context.Context, e string) (accounts.User, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return accounts.User{}, "", m.fail
	}
	if u := m.byEmail(e); u != nil {
		return u.user, u.hash, nil
	}
	return accounts.User{}, "", errs.NotFoundf("user not found")
}

func (m *memAccounts) UserByID(_ context.Context, id string) (accounts.User, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.byID(id); u != nil {
		return u.user, u.hash, nil
	}
	return accounts.User{}, "", errs.NotFoundf("user not found")
}

// create adds u and its first membership; the caller holds mu.
func (m *memAccounts) create(u accounts.NewUser) error {
	if m.byEmail(u.Email) != nil {
		return errs.E(errs.Conflict, "email_taken", "email taken")
	}
	if u.OrgName != "" {
		m.tenants[u.TenantID] = tenant.Tenant{ID: u.TenantID, Name: u.OrgName, CreatedAt: u.CreatedAt}
	}
	m.users = append(m.users, &userRow{user: u.User, hash: u.PasswordHash})
	m.members[u.ID] = append(m.members[u.ID], membership{u.TenantID, u.OrgRole})
	return nil
}

func (m *memAccounts) CreateUser(_ context.Context, u accounts.NewUser) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.create(u)
}

func (m *memAccounts) EnsureAdmin(_ context.Context, u accounts.NewUser) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.byEmail(u.Email)
	if old == nil {
		return true, m.create(u)
	}
	old.user.Role, old.user.EmailVerified = accounts.PlatformAdmin, true
	for i, ms := range m.members[old.user.ID] {
		if ms.tenantID == u.TenantID {
			m.members[old.user.ID][i].role = auth.RoleOwner
			return false, nil
		}
	}
	m.members[old.user.ID] = append(m.members[old.user.ID], membership{u.TenantID, auth.RoleOwner})
	return false, nil
}

func (m *memAccounts) SetPassword(_ context.Context, userID, hash string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.byID(userID)
	if u == nil {
		return errs.NotFoundf("user not found")
	}
	u.hash = hash
	return nil
}

func (m *memAccounts) SetEmailVerified(_ context.Context, userID string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.byID(userID)
	if u == nil {
		return errs.NotFoundf("user not found")
	}
	u.user.EmailVerified = true
	m.verified[userID] = at
	return nil
}

func (m *memAccounts) Tenant(_ context.Context, id string) (tenant.Tenant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tenants[id]
	if !ok {
		return tenant.Tenant{}, errs.NotFoundf("tenant not found")
	}
	return t, nil
}

func (m *memAccounts) UserOrgs(_ context.Context, userID string) ([]accounts.Org, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []accounts.Org
	for _, ms := range m.members[userID] {
		t := m.tenants[ms.tenantID]
		out = append(out, accounts.Org{TenantID: t.ID, Name: t.Name, Role: ms.role, CreatedAt: t.CreatedAt})
	}
	return out, nil
}

func (m *memAccounts) CreateOrg(_ context.Context, t tenant.Tenant, ownerID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.CreatedAt = time.UnixMilli(t.CreatedAt.UnixMilli()).UTC()
	m.tenants[t.ID] = t
	m.members[ownerID] = append(m.members[ownerID], membership{t.ID, auth.RoleOwner})
	return nil
}

func (m *memAccounts) RenameOrg(_ context.Context, tenantID, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tenants[tenantID]
	if !ok {
		return errs.NotFoundf("tenant not found")
	}
	t.Name = name
	m.tenants[tenantID] = t
	return nil
}

func (m *memAccounts) Members(_ context.Context, tenantID string) ([]accounts.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []accounts.Member{}
	for _, u := range m.users {
		for _, ms := range m.members[u.user.ID] {
			if ms.tenantID == tenantID {
				out = append(out, accounts.Member{UserID: u.user.ID, Email: u.user.Email, Name: u.user.Name, Role: ms.role})
			}
		}
	}
	return out, nil
}

func (m *memAccounts) CreateUserToken(_ context.Context, hash [32]byte, kind, userID string, _, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[hash] = &tokenRow{kind: kind, userID: userID, expires: expires}
	return nil
}

func (m *memAccounts) ConsumeUserToken(_ context.Context, hash [32]byte, kind string, at time.Time) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[hash]
	if !ok || t.used || t.kind != kind || !at.Before(t.expires) {
		return "", errs.NotFoundf("token not found")
	}
	t.used = true
	return t.userID, nil
}

func (m *memAccounts) DropUserTokens(_ context.Context, userID, kind string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, t := range m.tokens {
		if t.userID == userID && t.kind == kind && !t.used {
			delete(m.tokens, h)
		}
	}
	return nil
}

func (m *memAccounts) CreateInvite(_ context.Context, inv accounts.Invite, hash [32]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.invites = append(m.invites, &inviteRow{inv: inv, hash: hash})
	return nil
}

func (m *memAccounts) Invites(_ context.Context, tenantID string) ([]accounts.Invite, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []accounts.Invite
	for i := len(m.invites) - 1; i >= 0; i-- {
		if m.invites[i].inv.TenantID == tenantID {
			out = append(out, m.invites[i].inv)
		}
	}
	return out, nil
}

func (m *memAccounts) PendingInvite(_ context.Context, tenantID, e string) (accounts.Invite, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.invites {
		if r.inv.TenantID == tenantID && r.inv.Email == e && r.inv.Status == accounts.InvitePending {
			return r.inv, nil
		}
	}
	return accounts.Invite{}, errs.NotFoundf("invite not found")
}

func (m *memAccounts) InviteByToken(_ context.Context, hash [32]byte) (accounts.Invite, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.invites {
		if r.hash == hash {
			return r.inv, m.tenants[r.inv.TenantID].Name, nil
		}
	}
	return accounts.Invite{}, "", errs.NotFoundf("invite not found")
}

func (m *memAccounts) SetInviteStatus(_ context.Context, tenantID, id, status string, at time.Time) (accounts.Invite, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.invites {
		if r.inv.TenantID != tenantID || r.inv.ID != id {
			continue
		}
		if r.inv.Status != accounts.InvitePending {
			return accounts.Invite{}, errs.E(errs.Conflict, "invite_"+r.inv.Status, "not pending")
		}
		r.inv.Status, r.inv.DecidedAt = status, &at
		return r.inv, nil
	}
	return accounts.Invite{}, errs.NotFoundf("invite not found")
}

func (m *memAccounts) AcceptInvite(_ context.Context, inv accounts.Invite, userID string, newUser *accounts.NewUser, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.invites {
		if r.inv.ID != inv.ID {
			continue
		}
		if r.inv.Status != accounts.InvitePending {
			return errs.E(errs.Conflict, "invite_"+r.inv.Status, "not pending")
		}
		if newUser != nil {
			if err := m.create(*newUser); err != nil {
				return err
			}
		} else {
			m.members[userID] = append(m.members[userID], membership{inv.TenantID, inv.Role})
		}
		r.inv.Status, r.inv.DecidedAt, r.inv.AcceptedBy = accounts.InviteAccepted, &at, userID
		return nil
	}
	return errs.NotFoundf("invite not found")
}

func (m *memAccounts) ExpireInvites(_ context.Context, at time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.invites {
		if r.inv.Status == accounts.InvitePending && !at.Before(r.inv.ExpiresAt) {
			r.inv.Status = accounts.InviteExpired
			n++
		}
	}
	return n, nil
}

// invite returns the stored invite of id.
func (m *memAccounts) invite(id string) accounts.Invite {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.invites {
		if r.inv.ID == id {
			return r.inv
		}
	}
	return accounts.Invite{}
}

// mail is one message sent.
type mail struct {
	to  string
	msg email.Message
}

type outbox struct {
	mu   sync.Mutex
	sent []mail
}

func (o *outbox) Send(to string, msg email.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, mail{to, msg})
}

func (o *outbox) all() []mail {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]mail(nil), o.sent...)
}

var linkToken = regexp.MustCompile(`https://svc\.example\.com(/[a-z-]+)\?token=([A-Za-z0-9_-]+)`)

// link returns the path and the token of the link in the last message to
// addr.
func (o *outbox) link(t *testing.T, addr string) (path, token string) {
	t.Helper()
	all := o.all()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].to == addr {
			m := linkToken.FindStringSubmatch(all[i].msg.Text)
			require.NotNil(t, m, "no link in %q", all[i].msg.Text)
			return m[1], m[2]
		}
	}
	t.Fatalf("no mail to %s", addr)
	return "", ""
}

// actions lists the audited actions, oldest first, as "tenant action".
func actions(m *audittest.Memory) []string {
	var out []string
	for _, e := range m.Events() {
		out = append(out, e.TenantID+" "+e.Action)
	}
	return out
}

// lastAudit is the newest audited event.
func lastAudit(m *audittest.Memory) audit.Event {
	events := m.Events()
	return events[len(events)-1]
}

// memSessions is the session store behind the real SessionManager: one
// probe session whose lookups show when the manager's cache was
// invalidated, and the users whose sessions were all ended.
type memSessions struct {
	mu       sync.Mutex
	lookups  int
	endedAll []string
}

func (s *memSessions) CreateSession(context.Context, [32]byte, string, string, time.Time) error {
	return nil
}
func (s *memSessions) RotateSession(context.Context, [32]byte, [32]byte, string, string, time.Time) (time.Time, error) {
	return time.Time{}, nil
}

func (s *memSessions) LookupSession(context.Context, [32]byte) (auth.SessionRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups++
	now := time.Now()
	return auth.SessionRecord{UserID: "usr_probe", ActiveTenantID: tenant.DefaultID, CreatedAt: now, LastSeenAt: now,
		Memberships: []auth.Membership{{TenantID: tenant.DefaultID, Role: auth.RoleMember}}}, nil
}
func (s *memSessions) TouchSession(context.Context, [32]byte, time.Time) error { return nil }
func (s *memSessions) DeleteSession(context.Context, [32]byte) error           { return nil }
func (s *memSessions) DeleteUserSessions(_ context.Context, userID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endedAll = append(s.endedAll, userID)
	return nil
}
func (s *memSessions) HasUsers(context.Context) (bool, error) { return false, nil }

// world is an accounts service over in-memory stores, on a fake clock.
type world struct {
	svc      *accounts.Service
	store    *memAccounts
	mail     *outbox
	audit    *audittest.Memory
	sessions *memSessions
	manager  *auth.SessionManager
	forgot   *forgotten
	clock    *fakeclock.Clock
	probe    *http.Request // a request of a session, to see the cache invalidated
}

const baseURL = "https://svc.example.com"

// cheap hashes: the tests are about the rules, not argon2id's cost.
var hasher = auth.NewHasher(auth.Argon2Params{MemoryKiB: 64, Time: 1, Threads: 1})

func newWorld(t *testing.T, allowSignup bool) *world {
	t.Helper()
	c := fakeclock.New(time.Date(2030, 3, 4, 5, 6, 7, 890_123_456, time.UTC))
	w := &world{store: newMemAccounts(c.Now()), mail: &outbox{}, audit: &audittest.Memory{}, sessions: &memSessions{}, forgot: &forgotten{}, clock: c}
	var err error
	w.manager, err = auth.NewSessionManager(context.Background(), w.sessions, false, false, nil)
	require.NoError(t, err)
	w.svc = accounts.NewService(accounts.Options{Store: w.store, Sessions: w.manager, Hasher: hasher, Mailer: w.mail,
		Audit: audit.NewLog(w.audit, hclog.NewNullLogger(), c.Now), BaseURL: baseURL, AllowSignup: allowSignup, Now: c.Now,
		Forget: []accounts.Forgetter{w.forgot}})

	rec := httptest.NewRecorder()
	require.NoError(t, w.manager.Start(context.Background(), rec, httptest.NewRequest("POST", "/", nil), "usr_probe", tenant.DefaultID))
	w.probe = httptest.NewRequest("GET", "/", nil)
	for _, c := range rec.Result().Cookies() {
		w.probe.AddCookie(c)
	}
	w.invalidated() // caches the probe
	return w
}

// invalidated reports whether the session cache was invalidated since the
// last call: whether the probe session had to be read from the store again.
func (w *world) invalidated() bool {
	w.sessions.mu.Lock()
	before := w.sessions.lookups
	w.sessions.mu.Unlock()
	if _, err := w.manager.FromRequest(w.probe); err != nil {
		panic(err)
	}
	w.sessions.mu.Lock()
	defer w.sessions.mu.Unlock()
	return w.sessions.lookups > before
}

func (m *memAccounts) Member(_ context.Context, tenantID, userID string) (accounts.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.member(tenantID, userID)
}

func (m *memAccounts) member(tenantID, userID string) (accounts.Member, error) {
	u := m.byID(userID)
	if u != nil {
		for _, ms := range m.members[userID] {
			if ms.tenantID == tenantID {
				return accounts.Member{UserID: userID, Email: u.user.Email, Name: u.user.Name, Role: ms.role}, nil
			}
		}
	}
	return accounts.Member{}, errs.NotFoundf("member not found")
}

// owners counts the tenant's owners.
func (m *memAccounts) owners(tenantID string) int {
	n := 0
	for _, list := range m.members {
		for _, ms := range list {
			if ms.tenantID == tenantID && ms.role == auth.RoleOwner {
				n++
			}
		}
	}
	return n
}

// change sets userID's role in tenantID (nil removes the membership)
// and undoes it when the tenant is left without an owner.
func (m *memAccounts) change(tenantID, userID string, role *string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.member(tenantID, userID); err != nil {
		return err
	}
	before := append([]membership(nil), m.members[userID]...)
	var after []membership
	for _, ms := range before {
		switch {
		case ms.tenantID != tenantID:
			after = append(after, ms)
		case role != nil:
			after = append(after, membership{tenantID, *role})
		}
	}
	m.members[userID] = after
	if m.owners(tenantID) == 0 {
		m.members[userID] = before
		return accounts.ErrLastOwner
	}
	return nil
}

func (m *memAccounts) SetMemberRole(ctx context.Context, tenantID, userID, role string) (accounts.Member, error) {
	if err := m.change(tenantID, userID, &role); err != nil {
		return accounts.Member{}, err
	}
	return m.Member(ctx, tenantID, userID)
}

func (m *memAccounts) RemoveMember(_ context.Context, tenantID, userID string) error {
	return m.change(tenantID, userID, nil)
}

func (m *memAccounts) DeleteOrg(_ context.Context, tenantID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tenants[tenantID]; !ok {
		return errs.NotFoundf("organization not found")
	}
	delete(m.tenants, tenantID)
	for userID, list := range m.members {
		var kept []membership
		for _, ms := range list {
			if ms.tenantID != tenantID {
				kept = append(kept, ms)
			}
		}
		m.members[userID] = kept
	}
	m.deleted = append(m.deleted, tenantID)
	return nil
}

// forgotten records the tenants the service told to forget.
type forgotten struct {
	mu  sync.Mutex
	ids []string
}

func (f *forgotten) ForgetTenant(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, id)
}
