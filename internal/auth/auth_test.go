package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/changes/changestest"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
)

const bootstrap = "bootstrap-token-0123456789"

type fixture struct {
	store *store.Store
	keys  *auth.Keys
	other string // a second tenant's id
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s := storetest.Open(t)
	other, err := s.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	return &fixture{store: s, keys: auth.NewKeys(s, nil), other: other.ID}
}

func (f *fixture) key(t *testing.T, tenantID string, nk auth.NewKey) (auth.Key, string) {
	t.Helper()
	k, token, err := f.keys.Create(context.Background(), tenantID, nk)
	require.NoError(t, err)
	return k, token
}

func request(authz string, headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/settings", nil)
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	return r
}

func TestCreatedKeyToken(t *testing.T) {
	f := newFixture(t)
	k, token := f.key(t, tenant.DefaultID, auth.NewKey{Name: "ci", Mode: auth.Observe})
	assert.True(t, strings.HasPrefix(token, "svc_"))
	assert.Len(t, token, 4+43, "svc_ + 256 bits in base64url")
	assert.Equal(t, token[:12], k.Prefix)

	// The token is stored only as a hash.
	var n int
	q := `SELECT COUNT(*) FROM api_keys WHERE instr(CAST(token_hash AS TEXT), $1) > 0 OR instr(prefix, $1) > 0`
	if storetest.Postgres() {
		q = `SELECT COUNT(*) FROM api_keys WHERE strpos(encode(token_hash, 'escape'), $1) > 0 OR strpos(prefix, $1) > 0`
	}
	require.NoError(t, f.store.DB().QueryRow(q, token).Scan(&n))
	assert.Zero(t, n)
}

func TestNewKeyValidation(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name  string
		nk    auth.NewKey
		param string
	}{
		{"no name", auth.NewKey{Mode: auth.Observe}, "name"},
		{"blank name", auth.NewKey{Name: "  ", Mode: auth.Observe}, "name"},
		{"long name", auth.NewKey{Name: strings.Repeat("n", 201), Mode: auth.Observe}, "name"},
		{"bad mode", auth.NewKey{Name: "n", Mode: "turbo"}, "mode"},
		{"no mode", auth.NewKey{Name: "n"}, "mode"},
		{"control char app", auth.NewKey{Name: "n", Mode: auth.Observe, AppID: "a\nb"}, "appId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.keys.Create(context.Background(), tenant.DefaultID, tc.nk)
			e := errs.As(err)
			require.NotNil(t, e)
			assert.Equal(t, errs.Invalid, e.Kind)
			assert.Equal(t, tc.param, e.Param)
		})
	}
}

func TestIdentify(t *testing.T) {
	f := newFixture(t)
	_, plain := f.key(t, f.other, auth.NewKey{Name: "plain", Mode: auth.Observe})
	pinnedKey, pinned := f.key(t, f.other, auth.NewKey{Name: "pinned", Mode: auth.Optimize, AppID: "billing", Admin: true})
	revokedKey, revoked := f.key(t, f.other, auth.NewKey{Name: "gone", Mode: auth.Optimize})
	_, err := f.keys.Revoke(context.Background(), f.other, revokedKey.ID)
	require.NoError(t, err)

	bearerMode := auth.NewAuthenticator(bootstrap, f.keys, nil)
	openMode := auth.NewAuthenticator("", f.keys, nil)

	type want struct {
		kind    errs.Kind // Internal means success
		tenant  string
		via     auth.Via
		mode    auth.Mode
		admin   bool
		app     string
		agent   string
		subject string
	}
	for _, tc := range []struct {
		name string
		a    *auth.Authenticator
		r    *http.Request
		want want
	}{
		{"open mode headerless is default admin", openMode, request(""),
			want{tenant: tenant.DefaultID, via: auth.ViaOpen, mode: auth.Optimize, admin: true}},
		{"open mode honours identity headers", openMode, request("", "X-Svc-App", "web", "X-Svc-Agent", "bot-1", "X-Svc-Subject", "u-9"),
			want{tenant: tenant.DefaultID, via: auth.ViaOpen, mode: auth.Optimize, admin: true, app: "web", agent: "bot-1", subject: "u-9"}},
		{"open mode still checks a presented token", openMode, request("Bearer svc_nope"), want{kind: errs.Unauthorized}},
		{"open mode accepts a tenant key", openMode, request("Bearer " + plain),
			want{tenant: f.other, via: auth.ViaKey, mode: auth.Observe}},
		{"open mode: a tenant key keeps its pin", openMode, request("Bearer "+pinned, "X-Svc-App", "web"),
			want{tenant: f.other, via: auth.ViaKey, mode: auth.Optimize, admin: true, app: "billing"}},
		{"open mode: a revoked key is refused", openMode, request("Bearer " + revoked), want{kind: errs.Unauthorized}},
		{"open mode: a placeholder token is no token", openMode, request("Bearer anything"),
			want{tenant: tenant.DefaultID, via: auth.ViaOpen, mode: auth.Optimize, admin: true}},
		{"open mode: an OpenAI-looking key is no token", openMode, request("Bearer sk-proj-abc", "X-Svc-App", "web"),
			want{tenant: tenant.DefaultID, via: auth.ViaOpen, mode: auth.Optimize, admin: true, app: "web"}},
		{"open mode: the prefix is case-sensitive", openMode, request("Bearer SVC_nope"),
			want{tenant: tenant.DefaultID, via: auth.ViaOpen, mode: auth.Optimize, admin: true}},
		{"open mode: a bare prefix is looked up", openMode, request("Bearer svc_"), want{kind: errs.Unauthorized}},
		{"open mode: another scheme is still refused", openMode, request("Basic abc"), want{kind: errs.Unauthorized}},
		{"bearer mode: a placeholder token is refused", bearerMode, request("Bearer anything"), want{kind: errs.Unauthorized}},
		{"bearer mode needs a token", bearerMode, request(""), want{kind: errs.Unauthorized}},
		{"bearer mode wrong scheme", bearerMode, request("Basic " + bootstrap), want{kind: errs.Unauthorized}},
		{"bearer mode empty token", bearerMode, request("Bearer "), want{kind: errs.Unauthorized}},
		{"bearer mode bad token", bearerMode, request("Bearer not-the-token"), want{kind: errs.Unauthorized}},
		{"bearer mode bootstrap token", bearerMode, request("Bearer " + bootstrap),
			want{tenant: tenant.DefaultID, via: auth.ViaBootstrap, mode: auth.Optimize, admin: true}},
		{"scheme is case-insensitive", bearerMode, request("bearer " + bootstrap),
			want{tenant: tenant.DefaultID, via: auth.ViaBootstrap, mode: auth.Optimize, admin: true}},
		{"tenant key", bearerMode, request("Bearer "+plain, "X-Svc-App", "web"),
			want{tenant: f.other, via: auth.ViaKey, mode: auth.Observe, app: "web"}},
		{"pinned app overrides the header", bearerMode, request("Bearer "+pinned, "X-Svc-App", "web", "X-Svc-Agent", "a"),
			want{tenant: f.other, via: auth.ViaKey, mode: auth.Optimize, admin: true, app: "billing", agent: "a"}},
		{"revoked key", bearerMode, request("Bearer " + revoked), want{kind: errs.Unauthorized}},
		{"overlong header", bearerMode, request("Bearer "+bootstrap, "X-Svc-Subject", strings.Repeat("s", 201)), want{kind: errs.Invalid}},
		{"control character in header", bearerMode, request("Bearer "+bootstrap, "X-Svc-Agent", "a\x01b"), want{kind: errs.Invalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := tc.a.Identify(tc.r, auth.ScopeManagement)
			if tc.r.Header.Get("X-Svc-Subject") == "" && tc.r.Header.Get("X-Svc-Agent") == "" {
				// Without a session seam, both surfaces admit alike.
				gid, gerr := tc.a.Identify(tc.r, auth.ScopeGateway)
				assert.Equal(t, errs.KindOf(err), errs.KindOf(gerr))
				assert.Equal(t, id, gid)
			}
			if tc.want.kind != errs.Internal {
				require.Error(t, err)
				assert.Equal(t, tc.want.kind, errs.KindOf(err), err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want.tenant, id.TenantID)
			assert.Equal(t, tc.want.via, id.Via)
			assert.Equal(t, tc.want.mode, id.Mode)
			assert.Equal(t, tc.want.admin, id.Admin)
			assert.Equal(t, tc.want.app, id.App)
			assert.Equal(t, tc.want.agent, id.Agent)
			assert.Equal(t, tc.want.subject, id.Subject)
			if id.Via == auth.ViaKey {
				assert.NotEmpty(t, id.KeyID)
			}
		})
	}
	assert.NotEmpty(t, pinnedKey.ID)
}

func TestRevokedKeyRefusedOnItsNextRequest(t *testing.T) {
	f := newFixture(t)
	a := auth.NewAuthenticator(bootstrap, f.keys, nil)
	k, token := f.key(t, tenant.DefaultID, auth.NewKey{Name: "k", Mode: auth.Optimize})

	_, err := a.Identify(request("Bearer "+token), auth.ScopeGateway) // now cached
	require.NoError(t, err)
	_, err = f.keys.Revoke(context.Background(), tenant.DefaultID, k.ID)
	require.NoError(t, err)
	_, err = a.Identify(request("Bearer "+token), auth.ScopeGateway)
	assert.Equal(t, errs.Unauthorized, errs.KindOf(err))
}

func TestRevokeOtherTenantsKeyIsNotFound(t *testing.T) {
	f := newFixture(t)
	k, token := f.key(t, f.other, auth.NewKey{Name: "k", Mode: auth.Optimize})
	_, err := f.keys.Revoke(context.Background(), tenant.DefaultID, k.ID)
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	_, err = f.keys.Revoke(context.Background(), tenant.DefaultID, "key_../../etc")
	assert.Equal(t, errs.NotFound, errs.KindOf(err))
	_, err = f.keys.Lookup(context.Background(), token)
	assert.NoError(t, err, "the key stays usable")
}

// A lookup racing a revocation must never leave the revoked key cached.
func TestRevokeRacingLookups(t *testing.T) {
	f := newFixture(t)
	for range 20 {
		k, token := f.key(t, tenant.DefaultID, auth.NewKey{Name: "k", Mode: auth.Optimize})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _, _ = f.keys.Lookup(context.Background(), token) })
		}
		_, err := f.keys.Revoke(context.Background(), tenant.DefaultID, k.ID)
		require.NoError(t, err)
		wg.Wait()
		_, err = f.keys.Lookup(context.Background(), token)
		require.Equal(t, errs.Unauthorized, errs.KindOf(err))
	}
}

type fakeSessions struct {
	id       *auth.Identity
	required bool
}

func (s fakeSessions) FromRequest(*http.Request) (*auth.Identity, error) { return s.id, nil }
func (s fakeSessions) LoginRequired(context.Context) bool                { return s.required }

func TestAccountModeSeam(t *testing.T) {
	f := newFixture(t)
	user := &auth.Identity{TenantID: f.other, UserID: "usr_1", Via: auth.ViaSession, Mode: auth.Optimize}

	withSession := auth.NewAuthenticator("", f.keys, fakeSessions{id: user, required: true})
	id, err := withSession.Identify(request(""), auth.ScopeManagement)
	require.NoError(t, err)
	assert.Equal(t, "usr_1", id.UserID)

	noSession := auth.NewAuthenticator("", f.keys, fakeSessions{required: true})
	_, err = noSession.Identify(request(""), auth.ScopeManagement)
	assert.Equal(t, errs.Unauthorized, errs.KindOf(err), "users exist: management needs a session")
	id, err = noSession.Identify(request(""), auth.ScopeGateway)
	require.NoError(t, err, "gateway traffic keeps the API-key rule")
	assert.Equal(t, auth.ViaOpen, id.Via)
}

// In account mode a token that is not an svc_ key is no better than no
// token: the gateway admits it as it admits a headerless call, the
// management API refuses it (or sees the session) as it would without it.
func TestAccountModePlaceholderToken(t *testing.T) {
	f := newFixture(t)
	_, plain := f.key(t, f.other, auth.NewKey{Name: "plain", Mode: auth.Observe})
	user := &auth.Identity{TenantID: f.other, UserID: "usr_1", Via: auth.ViaSession, Mode: auth.Optimize}
	noSession := auth.NewAuthenticator("", f.keys, fakeSessions{required: true})
	withSession := auth.NewAuthenticator("", f.keys, fakeSessions{id: user, required: true})

	_, err := noSession.Identify(request("Bearer anything"), auth.ScopeManagement)
	require.Error(t, err)
	assert.Equal(t, errs.Unauthorized, errs.KindOf(err), "management needs a sign-in")
	assert.Equal(t, "invalid_token", errs.Code(err))

	id, err := noSession.Identify(request("Bearer anything"), auth.ScopeGateway)
	require.NoError(t, err)
	headerless, err := noSession.Identify(request(""), auth.ScopeGateway)
	require.NoError(t, err)
	assert.Equal(t, headerless, id, "the gateway admits it as a headerless call")

	id, err = withSession.Identify(request("Bearer anything"), auth.ScopeManagement)
	require.NoError(t, err)
	assert.Equal(t, "usr_1", id.UserID, "the session identifies, as without the token")

	id, err = noSession.Identify(request("Bearer "+plain), auth.ScopeManagement)
	require.NoError(t, err)
	assert.Equal(t, auth.ViaKey, id.Via, "an svc_ key is still looked up")
	_, err = noSession.Identify(request("Bearer svc_nope"), auth.ScopeGateway)
	assert.Equal(t, errs.Unauthorized, errs.KindOf(err), "an unknown svc_ key is refused")
}

func TestAccess(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		a    *auth.Authenticator
		want auth.Access
	}{
		{auth.NewAuthenticator(bootstrap, f.keys, nil), auth.AccessBearer},
		{auth.NewAuthenticator(bootstrap, f.keys, fakeSessions{required: true}), auth.AccessBearer},
		{auth.NewAuthenticator("", f.keys, fakeSessions{required: true}), auth.AccessAccount},
		{auth.NewAuthenticator("", f.keys, fakeSessions{}), auth.AccessOpen},
		{auth.NewAuthenticator("", f.keys, nil), auth.AccessOpen},
	} {
		assert.Equal(t, tc.want, tc.a.Access(ctx))
	}
	assert.Contains(t, auth.AccessAccount.Describe(), "account mode")
	assert.Contains(t, auth.AccessOpen.Describe(), "open dev mode")
	assert.NotContains(t, auth.AccessBearer.Describe(), "open dev mode")
}

func TestRequireAdmin(t *testing.T) {
	assert.NoError(t, auth.RequireAdmin(&auth.Identity{Admin: true}))
	assert.Equal(t, errs.Forbidden, errs.KindOf(auth.RequireAdmin(&auth.Identity{})))
	assert.Equal(t, errs.Forbidden, errs.KindOf(auth.RequireAdmin(nil)))
}

// BenchmarkIdentifyTenantKey measures resolving a tenant key with identity
// headers: a hash and a cached lookup, no query.
func BenchmarkIdentifyTenantKey(b *testing.B) {
	s := storetest.Open(b)
	keys := auth.NewKeys(s, nil)
	_, token, err := keys.Create(context.Background(), tenant.DefaultID, auth.NewKey{Name: "bench", Mode: auth.Optimize, AppID: "app"})
	require.NoError(b, err)
	a := auth.NewAuthenticator(bootstrap, keys, nil)
	r := request("Bearer "+token, "X-Svc-Agent", "agent-7", "X-Svc-Subject", "user-42")
	_, err = a.Identify(r, auth.ScopeGateway)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Identify(r, auth.ScopeGateway); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdentifyTenantKeyReplicated is BenchmarkIdentifyTenantKey with
// the refresh bound of several replicas: one clock read more.
func BenchmarkIdentifyTenantKeyReplicated(b *testing.B) {
	s := storetest.Open(b)
	keys := auth.NewKeys(s, nil)
	keys.Replicate(nopFeed{}, 5*time.Second)
	_, token, err := keys.Create(context.Background(), tenant.DefaultID, auth.NewKey{Name: "bench", Mode: auth.Optimize, AppID: "app"})
	require.NoError(b, err)
	a := auth.NewAuthenticator(bootstrap, keys, nil)
	r := request("Bearer "+token, "X-Svc-Agent", "agent-7", "X-Svc-Subject", "user-42")
	_, err = a.Identify(r, auth.ScopeGateway)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Identify(r, auth.ScopeGateway); err != nil {
			b.Fatal(err)
		}
	}
}

// A deleted tenant's keys are refused at their next request, though they
// were cached; another tenant's cached key keeps working.
func TestKeysOfADeletedTenantAreRefusedAtOnce(t *testing.T) {
	f := newFixture(t)
	a := auth.NewAuthenticator(bootstrap, f.keys, nil)
	_, gone := f.key(t, f.other, auth.NewKey{Name: "gone", Mode: auth.Optimize})
	_, kept := f.key(t, tenant.DefaultID, auth.NewKey{Name: "kept", Mode: auth.Optimize})
	for _, token := range []string{gone, kept} {
		_, err := a.Identify(request("Bearer "+token), auth.ScopeGateway) // now cached
		require.NoError(t, err)
	}
	require.NoError(t, f.store.DeleteOrg(context.Background(), f.other))
	f.keys.ForgetTenant(f.other)
	_, err := a.Identify(request("Bearer "+gone), auth.ScopeGateway)
	assert.Equal(t, errs.Unauthorized, errs.KindOf(err))
	id, err := a.Identify(request("Bearer "+kept), auth.ScopeGateway)
	require.NoError(t, err)
	assert.Equal(t, tenant.DefaultID, id.TenantID)
}

// revokeThenHangUp is the client hanging up the moment its revocation
// commits.
type revokeThenHangUp struct {
	*store.Store
	hangUp context.CancelFunc
}

func (s revokeThenHangUp) RevokeKey(ctx context.Context, tenantID, id string, at time.Time) (auth.Key, error) {
	k, err := s.Store.RevokeKey(ctx, tenantID, id, at)
	s.hangUp()
	return k, err
}

func TestRevocationIsAnnouncedEvenWhenTheClientHangsUp(t *testing.T) {
	s := storetest.Open(t)
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	keys := auth.NewKeys(revokeThenHangUp{s, hangUp}, nil)
	feed := changestest.New()
	keys.Replicate(feed, time.Minute)
	k, _, err := keys.Create(context.Background(), tenant.DefaultID, auth.NewKey{Name: "k", Mode: auth.Optimize})
	require.NoError(t, err)

	_, err = keys.Revoke(ctx, tenant.DefaultID, k.ID)
	require.NoError(t, err)
	notices := feed.Notices()
	require.Len(t, notices, 1)
	assert.NoError(t, notices[0].Err, "the other replicas must hear of the revocation")
	assert.True(t, notices[0].Deadline, "the notice is bounded")
}
