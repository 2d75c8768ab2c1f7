package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/learning/synth"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

const replicaToken = "replica-bootstrap-token-0123456789"

// twoReplicas builds two svcs on one new PostgreSQL database, refresh
// their SVC_DB_REFRESH, and waits until each listens for the other's
// changes.
func twoReplicas(t *testing.T, refresh time.Duration) (*app.App, *app.App) {
	t.Helper()
	return twoReplicasWith(t, refresh, &heldProvider{})
}

// twoReplicasWith is twoReplicas with provider the one both call.
func twoReplicasWith(t *testing.T, refresh time.Duration, provider pluginapi.Provider) (*app.App, *app.App) {
	t.Helper()
	return twoReplicasEnv(t, refresh, provider, nil)
}

// twoReplicasEnv is twoReplicasWith with env added to both replicas'
// configuration.
func twoReplicasEnv(t *testing.T, refresh time.Duration, provider pluginapi.Provider, env map[string]string) (*app.App, *app.App) {
	t.Helper()
	dsn := storetest.DSN(t)
	keyFile := filepath.Join(t.TempDir(), "ledger.key")
	open := func() *app.App {
		e := map[string]string{
			"SVC_DB": dsn, "SVC_DB_REFRESH": refresh.String(), "SVC_API_KEY": replicaToken,
			"SVC_JOURNAL_DIR": t.TempDir(), "SVC_LEDGER_KEY_FILE": keyFile,
		}
		maps.Copy(e, env)
		cfg := configFor(t, e)
		a, err := app.New(context.Background(), app.Options{Config: cfg, Provider: provider, Mailer: noMail{}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	a, b := open(), open()
	for _, r := range []*app.App{a, b} {
		require.Eventually(t, func() bool { return r.Store.FeedConnects() > 0 }, 20*time.Second, 5*time.Millisecond)
	}
	return a, b
}

// call serves one request on a replica, with a bearer token or a session
// cookie, and returns its status and body.
func call(a *app.App, method, path, body, bearer, cookie string) (int, string) {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: cookie})
	}
	w := httptest.NewRecorder()
	a.Handler().ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// becomes waits, with a deadline, until a request on a replica answers
// status.
func becomes(t *testing.T, status int, req func() (int, string), why string) {
	t.Helper()
	require.Eventually(t, func() bool { s, _ := req(); return s == status }, 20*time.Second, 5*time.Millisecond, why)
}

// never is a refresh bound no test waits for: what these tests see, the
// notification brought.
const never = time.Hour

func TestRevokedKeyIsRefusedOnEveryReplica(t *testing.T) {
	a, b := twoReplicas(t, never)
	ctx := context.Background()
	k, token, err := a.Keys.Create(ctx, tenant.DefaultID, auth.NewKey{Name: "ci", Mode: auth.Observe, Admin: true})
	require.NoError(t, err)
	get := func() (int, string) { return call(b, "GET", "/api/v1/settings", "", token, "") }
	status, body := get()
	require.Equal(t, http.StatusOK, status, body) // cached on B now

	_, err = a.Keys.Revoke(ctx, tenant.DefaultID, k.ID)
	require.NoError(t, err)
	becomes(t, http.StatusUnauthorized, get, "B refuses the key A revoked")
}

// signedIn makes a user (the bootstrap admin when first) and a session of
// theirs, returning the user's id and the session's cookie value.
func signedIn(t *testing.T, a *app.App, userID string) string {
	t.Helper()
	return signedInTo(t, a, userID, tenant.DefaultID)
}

// signedInTo is signedIn with tenantID the session's active organization.
func signedInTo(t *testing.T, a *app.App, userID, tenantID string) string {
	t.Helper()
	cookie := ids.Secret()
	require.NoError(t, a.Store.CreateSession(context.Background(), sha256.Sum256([]byte(cookie)), userID, tenantID, time.Now()))
	return cookie
}

func adminID(t *testing.T, a *app.App) string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, a.Accounts.Bootstrap(ctx, "owner@example.com", "correct horse battery staple"))
	u, _, err := a.Accounts.Login(ctx, "owner@example.com", "correct horse battery staple")
	require.NoError(t, err)
	return u.ID
}

func TestEndedSessionsAreRefusedOnEveryReplica(t *testing.T) {
	a, b := twoReplicas(t, never)
	owner := adminID(t, a)
	me := func(cookie string) func() (int, string) {
		return func() (int, string) { return call(b, "GET", "/api/v1/auth/me", "", "", cookie) }
	}

	// Signing out on A.
	c1 := signedIn(t, a, owner)
	status, body := me(c1)()
	require.Equal(t, http.StatusOK, status, body)
	r := httptest.NewRequest("POST", "/api/v1/auth/logout", nil)
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: c1})
	require.NoError(t, a.Sessions.End(context.Background(), httptest.NewRecorder(), r))
	becomes(t, http.StatusUnauthorized, me(c1), "B refuses a session ended on A")

	// Every session of a user, as a password reset ends them.
	c2 := signedIn(t, a, owner)
	status, body = me(c2)()
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, a.Sessions.EndAll(context.Background(), owner))
	becomes(t, http.StatusUnauthorized, me(c2), "B refuses the sessions a reset on A ended")
}

// loginRequired reports whether a replica is in account mode.
func loginRequired(a *app.App) func() (int, string) {
	return func() (int, string) {
		if a.Sessions.LoginRequired(context.Background()) {
			return 1, "accounts"
		}
		return 0, "open"
	}
}

func TestFirstUserStartsAccountModeOnEveryReplica(t *testing.T) {
	a, b := twoReplicas(t, never)
	require.False(t, b.Sessions.LoginRequired(context.Background()))
	adminID(t, a)
	becomes(t, 1, loginRequired(b), "B asks for a sign-in once A has a user")
}

func TestRemovedMemberIsRefusedOnEveryReplica(t *testing.T) {
	a, b := twoReplicas(t, never)
	ctx := context.Background()
	owner := adminID(t, a)
	ownerID, err := a.Sessions.FromRequest(withCookie(signedIn(t, a, owner)))
	require.NoError(t, err)
	require.NotNil(t, ownerID)
	_, link, err := a.Accounts.CreateInvite(ctx, ownerID, "member@example.com", auth.RoleMember)
	require.NoError(t, err)
	_, raw, _ := strings.Cut(link, "?token=")
	acc, err := a.Accounts.AcceptInvite(ctx, nil, raw, "Member", "another long enough password")
	require.NoError(t, err)
	cookie := signedIn(t, a, acc.User.ID)
	me := func() (int, string) { return call(b, "GET", "/api/v1/auth/me", "", "", cookie) }
	status, body := me()
	require.Equal(t, http.StatusOK, status, body)

	require.NoError(t, a.Accounts.RemoveMember(ctx, ownerID, acc.User.ID))
	becomes(t, http.StatusForbidden, me, "B refuses a member A removed")
}

func TestDeletedOrganizationIsForgottenOnEveryReplica(t *testing.T) {
	a, b := twoReplicas(t, never)
	ctx := context.Background()
	owner := adminID(t, a)
	id, err := a.Sessions.FromRequest(withCookie(signedIn(t, a, owner)))
	require.NoError(t, err)
	org, err := a.Accounts.CreateOrg(ctx, id, "Doomed")
	require.NoError(t, err)
	_, token, err := a.Keys.Create(ctx, org.TenantID, auth.NewKey{Name: "ci", Mode: auth.Observe, Admin: true})
	require.NoError(t, err)
	get := func() (int, string) { return call(b, "GET", "/api/v1/settings", "", token, "") }
	status, body := get()
	require.Equal(t, http.StatusOK, status, body) // cached on B now

	inOrg, err := a.Sessions.FromRequest(withCookie(signedInTo(t, a, owner, org.TenantID)))
	require.NoError(t, err)
	require.Equal(t, org.TenantID, inOrg.TenantID)
	_, err = a.Accounts.DeleteOrg(ctx, inOrg, "Doomed")
	require.NoError(t, err)
	becomes(t, http.StatusUnauthorized, get, "B forgets the keys of an organization A deleted")
}

func withCookie(value string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: value})
	return r
}

func TestSettingChangedOnOneReplicaHoldsOnEvery(t *testing.T) {
	a, b := twoReplicas(t, never)
	redaction := func() (int, string) {
		_, body := call(b, "GET", "/api/v1/settings", "", replicaToken, "")
		var got struct{ Settings map[string]any }
		_ = json.Unmarshal([]byte(body), &got)
		if got.Settings["redaction"] == true {
			return 1, body
		}
		return 0, body
	}
	status, body := redaction()
	require.Zero(t, status, body) // B has read and cached the settings

	status, body = call(a, "PUT", "/api/v1/settings", `{"key":"redaction","value":true}`, replicaToken, "")
	require.Equal(t, http.StatusOK, status, body)
	becomes(t, 1, redaction, "B masks once A turned redaction on")
}

func TestCacheInvalidatedOnOneReplicaIsDroppedOnEvery(t *testing.T) {
	a, b := twoReplicas(t, never)
	_, ok := b.Cache.Store(tenant.DefaultID, cache.ExactResponse, "k1", []byte(`{}`), cache.Meta{}, time.Hour)
	require.True(t, ok)
	cached := func() (int, string) {
		_, f := b.Cache.Lookup(tenant.DefaultID, cache.ExactResponse, "k1")
		return int(f), ""
	}
	require.Equal(t, int(cache.Fresh), func() int { s, _ := cached(); return s }())

	status, body := call(a, "POST", "/api/v1/cache/invalidate", "", replicaToken, "")
	require.Equal(t, http.StatusOK, status, body)
	becomes(t, int(cache.Miss), cached, "B drops what A invalidated")
}

// servingArtifact stores a pattern and a shadow artifact of it whose
// evidence passes the promotion gate, as the learning pass would, and
// returns the artifact's id.
func servingArtifact(t *testing.T, a *app.App) string {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	p := synth.Pattern{ID: ids.New("pat"), TenantID: tenant.DefaultID, Key: "shape-1", State: synth.PatternShadow,
		CreatedAt: now, UpdatedAt: now, LastRunAt: now}
	require.NoError(t, a.Store.SavePatterns(ctx, tenant.DefaultID, []synth.Pattern{p}))
	art := synth.Artifact{ID: ids.New("art"), TenantID: tenant.DefaultID, PatternID: p.ID, State: synth.ArtifactShadow,
		Type: synth.TypeTemplate, Representation: json.RawMessage(`{"text":"ok","slots":[]}`),
		ReplayPass: 200, ShadowPass: 200, Alpha: 401, Beta: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, a.Store.InsertArtifact(ctx, &art, nil))
	return art.ID
}

// served reports how a replica's serving index holds the shape.
func served(a *app.App) func() (int, string) {
	return func() (int, string) {
		e, ok := a.Learning.Index().Match(tenant.DefaultID, "shape-1")
		switch {
		case !ok:
			return 0, "none"
		case e.Promoted != nil:
			return 2, "promoted"
		default:
			return 1, "shadow"
		}
	}
}

func TestPromotionAndQuarantineReachEveryReplica(t *testing.T) {
	a, b := twoReplicas(t, never)
	ctx := context.Background()
	id := servingArtifact(t, a)
	require.NoError(t, b.Learning.Load(ctx))
	require.Equal(t, 1, func() int { s, _ := served(b)(); return s }())

	_, err := a.Learning.Promote(ctx, tenant.DefaultID, id, false, "test")
	require.NoError(t, err)
	becomes(t, 2, served(b), "B serves what A promoted")

	_, err = a.Learning.Quarantine(ctx, tenant.DefaultID, id, "test", "")
	require.NoError(t, err)
	becomes(t, 0, served(b), "B stops serving what A quarantined")
}

// With every notification to B lost, what A changes still holds on B
// within SVC_DB_REFRESH: B reads its copies again once they are older.
// TestLostNotificationsHealWithinTheRefreshBound cuts every notification
// to B and checks that each change made on A reaches B by the refresh
// bound alone. The bound is proved from both sides without trusting the
// machine's speed. From below: a copy B first read at a known instant
// (a key, a session) must still answer the old truth when asked again
// before the bound has passed since that instant, which shows that the
// notice really was cut and that nothing but the bound heals it; the check
// is made only when the clock says the second request ended inside the
// bound, so a stalled machine skips it (and logs so) rather than fail. From
// above: each change must be seen within a generous multiple of the bound
// (20x), wide enough for a loaded 2-core box, narrow enough that a cache
// trusted for ever fails. A fake clock would be exact, but the refreshes
// run on tickers and the keys' and settings' clocks are not the app's.
func TestLostNotificationsHealWithinTheRefreshBound(t *testing.T) {
	const refresh = time.Second
	a, b := twoReplicas(t, refresh)
	b.Store.LoseChanges(func(string, string) bool { return true })
	ctx := context.Background()
	// Each change below is seen on B within a generous multiple of the
	// bound, or the test fails.
	within := func(want int, req func() (int, string), why string) {
		t.Helper()
		start := time.Now()
		// Asked every 50 ms: faster would trip the rate limit the
		// replicas share.
		require.Eventually(t, func() bool { s, _ := req(); return s == want }, 20*refresh, 50*time.Millisecond, why)
		t.Logf("%s: %v", why, time.Since(start).Round(time.Millisecond))
	}
	// notBefore checks that a copy B read first at read, and asked again
	// now, still answers the old truth while the bound has not passed.
	notBefore := func(read time.Time, want int, req func() (int, string), why string) {
		t.Helper()
		status, body := req()
		if elapsed := time.Since(read); elapsed >= refresh {
			t.Logf("%s: the check came %v after the read, past the bound; not judged", why, elapsed.Round(time.Millisecond))
			return
		}
		require.NotEqual(t, want, status, "%s was seen before the refresh bound, with its notice cut: %s", why, body)
	}

	k, token, err := a.Keys.Create(ctx, tenant.DefaultID, auth.NewKey{Name: "ci", Mode: auth.Observe, Admin: true})
	require.NoError(t, err)
	settingsWith := func() (int, string) { return call(b, "GET", "/api/v1/settings", "", token, "") }
	read := time.Now()
	status, body := settingsWith()
	require.Equal(t, http.StatusOK, status, body)
	_, err = a.Keys.Revoke(ctx, tenant.DefaultID, k.ID)
	require.NoError(t, err)
	notBefore(read, http.StatusUnauthorized, settingsWith, "a revoked key")
	within(http.StatusUnauthorized, settingsWith, "a revoked key")

	require.False(t, b.Sessions.LoginRequired(ctx))
	owner := adminID(t, a)
	within(1, loginRequired(b), "the first user")
	cookie := signedIn(t, a, owner)
	me := func() (int, string) { return call(b, "GET", "/api/v1/auth/me", "", "", cookie) }
	read = time.Now()
	status, body = me()
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, a.Sessions.EndAll(ctx, owner))
	notBefore(read, http.StatusUnauthorized, me, "an ended session")
	within(http.StatusUnauthorized, me, "an ended session")

	redaction := func() (int, string) {
		_, body := call(b, "GET", "/api/v1/settings", "", replicaToken, "")
		if strings.Contains(body, `"redaction":true`) {
			return 1, body
		}
		return 0, body
	}
	status, body = redaction()
	require.Zero(t, status, body)
	status, body = call(a, "PUT", "/api/v1/settings", `{"key":"redaction","value":true}`, replicaToken, "")
	require.Equal(t, http.StatusOK, status, body)
	within(1, redaction, "a changed setting")

	_, ok := b.Cache.Store(tenant.DefaultID, cache.ExactResponse, "k1", []byte(`{}`), cache.Meta{}, time.Hour)
	require.True(t, ok)
	cached := func() (int, string) {
		_, f := b.Cache.Lookup(tenant.DefaultID, cache.ExactResponse, "k1")
		return int(f), ""
	}
	status, body = call(a, "POST", "/api/v1/cache/invalidate", `{"cacheType":"exact_response"}`, replicaToken, "")
	require.Equal(t, http.StatusOK, status, body)
	within(int(cache.Miss), cached, "a cache invalidation")

	id := servingArtifact(t, a)
	within(1, served(b), "a new shadow artifact")
	_, err = a.Learning.Promote(ctx, tenant.DefaultID, id, false, "test")
	require.NoError(t, err)
	within(2, served(b), "a promotion")
	_, err = a.Learning.Quarantine(ctx, tenant.DefaultID, id, "test", "")
	require.NoError(t, err)
	within(0, served(b), "a quarantine")
}
