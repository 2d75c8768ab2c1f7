package httpapi_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/email"
	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

const bootstrap = "bootstrap-token-0123456789"

type testServer struct {
	*httptest.Server
	store    *store.Store
	keys     *auth.Keys
	jobs     *jobs.Queue
	cache    *cache.Cache
	notified *notifications
	mail     *mailbox
	accounts *accounts.Service
	sessions *auth.SessionManager
	learning *learning.Service
	// webDNS is the DNS of every address check: it records each name and
	// resolves only webhookHosts, so no test sends a query.
	webDNS *recordingDNS
	// checkpoints signs the ledger's checkpoints when a test seals them.
	checkpoints *ledger.Checkpointer
	recorder    *ledger.Recorder
	clock       *fakeclock.Clock
	// handler is svc's handler, for a test that serves it another way.
	handler http.Handler
	// metrics are the app's; nil when SVC_METRICS is off.
	metrics *metrics.Metrics
	// runless is set by a test that records no run, whose ledger is then
	// not checked when it ends: the replicas of one PostgreSQL database,
	// whose shared ledger package ledger checks.
	runless bool
}

// testStreamPing is how often the live streams of the tests ping.
const testStreamPing = 20 * time.Millisecond

// recordingDNS records the names looked up and answers those of
// webhookHosts; any other is "no such host".
type recordingDNS struct {
	mu    sync.Mutex
	names []string
}

func (d *recordingDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.names = append(d.names, host)
	if a, ok := webhookHosts[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// webhookHosts are the webhook hosts the settings tests save: one public,
// one inside.
var webhookHosts = map[string]string{"hooks.example.com": "93.184.216.34", "inside.example.com": "10.0.0.7"}

func (d *recordingDNS) lookups() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.names...)
}

// mailbox records the emails svc sends.
type mailbox struct {
	mu   sync.Mutex
	sent []sentMail
}

type sentMail struct {
	to  string
	msg email.Message
}

func (m *mailbox) Send(to string, msg email.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, sentMail{to, msg})
}

// last returns the newest email sent to addr.
func (m *mailbox) last(t testing.TB, addr string) email.Message {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.sent) - 1; i >= 0; i-- {
		if m.sent[i].to == addr {
			return m.sent[i].msg
		}
	}
	t.Fatalf("no email was sent to %s", addr)
	return email.Message{}
}

func (m *mailbox) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sent)
}

// notifications records the webhook events svc sends.
type notifications struct {
	mu     sync.Mutex
	events []string
}

func (n *notifications) Notify(_ context.Context, _ string, eventType string, _ any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, eventType)
}

func (n *notifications) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.events)
}

// testArgon2 keeps the HTTP tests quick; the production parameters are
// tested in package auth.
var testArgon2 = auth.Argon2Params{MemoryKiB: 64, Time: 1, Threads: 1}

// newServer serves svc, as package app builds it, on a real listener with a
// temp data folder and the real mock provider plugin. apiKey "" is open dev
// mode. env adjusts the configuration. Nothing runs in the background: tests
// drive the job queue with RunDue and seal checkpoints with Seal.
func newServer(t testing.TB, apiKey string, env map[string]string) *testServer {
	t.Helper()
	return newServerWith(t, apiKey, env, mockProvider(t))
}

// newServerWith is newServer with the given provider behind the gateway.
func newServerWith(t testing.TB, apiKey string, env map[string]string, provider pluginapi.Provider) *testServer {
	t.Helper()
	return newServerOptions(t, apiKey, env, provider, nil)
}

// newServerOptions is newServerWith with adjust, when not nil, changing the
// app's options before it is built.
func newServerOptions(t testing.TB, apiKey string, env map[string]string, provider pluginapi.Provider, adjust func(*app.Options)) *testServer {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string {
		if k == "SVC_API_KEY" {
			return apiKey
		}
		return env[k]
	})
	require.NoError(t, err)
	ts := &testServer{clock: fakeclock.New(time.Unix(1_800_000_000, 0)), notified: &notifications{}, mail: &mailbox{}, webDNS: &recordingDNS{}}
	o := app.Options{
		Config:          cfg,
		DataDir:         t.TempDir(),
		Now:             ts.clock.Now,
		Provider:        provider,
		ProviderSecrets: []string{testProviderSecret},
		Mailer:          ts.mail,
		Resolver:        ts.webDNS,
		Notifier:        ts.notified,
		Argon2:          testArgon2,
		Files:           fstest.MapFS{"index.html": {Data: []byte("<h1>svc</h1>")}},
		StreamPing:      testStreamPing,
	}
	if adjust != nil {
		adjust(&o)
	}
	if o.DataDir != "" {
		seedDatabase(t, filepath.Join(o.DataDir, "svc.db"))
	}
	a, err := app.New(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	ts.store, ts.keys, ts.jobs, ts.cache = a.Store, a.Keys, a.Jobs, a.Cache
	ts.accounts, ts.sessions, ts.learning, ts.checkpoints = a.Accounts, a.Sessions, a.Learning, a.Checkpoints
	ts.recorder, ts.metrics = a.Recorder, a.Metrics
	ts.jobs.Register("test.ok", func(context.Context, jobs.Job) error { return nil })
	ts.jobs.Register("test.bad", func(context.Context, jobs.Job) error { return jobs.Permanent(errors.New("refused by the test")) })
	// Whatever a test did through the API, every run it left matches the
	// signed ledger: its fields were final when it was recorded, and every
	// change to it went through the ledger.
	t.Cleanup(func() {
		ctx := context.Background()
		if ts.runless || a.Recorder.Sync(ctx) != nil || a.Store.Ping(ctx) != nil {
			return // the test closed the database, or recorded no run
		}
		_, err := ts.checkpoints.Seal(ctx)
		require.NoError(t, err)
		sn, err := a.Store.LedgerSnapshot(ctx)
		require.NoError(t, err)
		defer sn.Close()
		r, err := ledger.VerifyLedger(ctx, sn, []ed25519.PublicKey{ts.checkpoints.Key().Public}, nil)
		require.NoError(t, err)
		assert.Empty(t, r.Problems, "the runs the test left do not match the ledger")
	})
	ts.handler = a.Handler()
	ts.Server = httptest.NewServer(ts.handler)
	t.Cleanup(ts.Close)
	return ts
}

var (
	migratedOnce sync.Once
	migrated     []byte
	migratedErr  error
)

// seedDatabase writes at path, unless a database is there, a copy of an
// SQLite database that store.Open migrated, made once per test binary: the
// migrations run from nothing once here (and in the store's tests, on both
// engines, and for every svc of internal/app and cmd/svc), not again under
// the race detector for each of this package's hundreds of servers.
func seedDatabase(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	migratedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "svc-httpapi-db-")
		if err != nil {
			migratedErr = err
			return
		}
		defer os.RemoveAll(dir)
		db := filepath.Join(dir, "svc.db")
		s, err := store.Open(context.Background(), db)
		if err != nil {
			migratedErr = err
			return
		}
		if migratedErr = s.Close(); migratedErr != nil {
			return
		}
		if wal, err := os.Stat(db + "-wal"); err == nil && wal.Size() > 0 {
			migratedErr = errors.New("the migrated database left a write-ahead log behind")
			return
		}
		migrated, migratedErr = os.ReadFile(db)
	})
	require.NoError(t, migratedErr, "a migrated database")
	require.NoError(t, os.WriteFile(path, migrated, 0o600))
}

type response struct {
	status int
	header http.Header
	body   string
	json   map[string]any
}

func (r response) errorCode() string {
	e, _ := r.json["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// call sends a request; headers are name, value pairs.
func (ts *testServer) call(t testing.TB, method, path, token, body string, headers ...string) response {
	t.Helper()
	if token != "" {
		headers = append([]string{"Authorization", "Bearer " + token}, headers...)
	}
	return send(t, http.DefaultClient, method, ts.URL+path, body, headers...)
}

// send sends a request through client, with a JSON body when body is not
// empty; headers are name, value pairs.
func send(t testing.TB, client *http.Client, method, url, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{status: res.StatusCode, header: res.Header, body: string(b)}
	_ = json.Unmarshal(b, &out.json)
	return out
}

// createKey makes a key through the API and returns its id and token.
func (ts *testServer) createKey(t *testing.T, token, body string) (string, string) {
	t.Helper()
	res := ts.call(t, "POST", "/api/v1/keys", token, body)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	return res.json["id"].(string), res.json["token"].(string)
}

func TestHealth(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_ALLOW_PUBLIC_SIGNUP": "true"})
	res := ts.call(t, "GET", "/health", "", "")
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, map[string]any{"ok": true, "version": "dev", "provider": "mock", "external": false, "publicSignup": true,
		"draining": false, "database": map[string]any{"engine": "sqlite", "ok": true}}, res.json)
	assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
	assert.Equal(t, "nosniff", res.header.Get("X-Content-Type-Options"))

	ts = newServer(t, "", map[string]string{"PROVIDER_API_KEY": "sk-test"})
	res = ts.call(t, "GET", "/health", "", "")
	assert.Equal(t, "openai", res.json["provider"])
	assert.Equal(t, false, res.json["publicSignup"])
}

func TestHealthReportsStorageDown(t *testing.T) {
	ts := newServer(t, "", nil)
	require.NoError(t, ts.store.Close())
	res := ts.call(t, "GET", "/health", "", "")
	assert.Equal(t, http.StatusServiceUnavailable, res.status)
	assert.Equal(t, false, res.json["ok"])
	assert.Equal(t, map[string]any{"engine": "sqlite", "ok": false}, res.json["database"])
	assert.Equal(t, false, res.json["draining"])
}

// newReplica serves svc on the PostgreSQL database dsn, as one replica of
// several: a run journal of its own, the ledger key in keyDir that every
// replica shares.
func newReplica(t *testing.T, dsn, keyDir string, env map[string]string) *testServer {
	t.Helper()
	ts := newServerOptions(t, "", env, mockProvider(t), func(o *app.Options) {
		journal := filepath.Join(o.DataDir, "journal")
		o.DataDir = ""
		o.Config.DBPath, o.Config.JournalDir = dsn, journal
		o.Config.LedgerKeyFile = filepath.Join(keyDir, "ledger.key")
	})
	// The tests of replicas record no runs: closing the store first leaves
	// out newServer's check of the ledger, which reads every engine alike
	// and is the ledger's tests' to make.
	t.Cleanup(func() { _ = ts.store.Close() })
	return ts
}

// With PostgreSQL, /health names the engine, and answers 503 once the
// database stops answering.
func TestHealthReportsPostgres(t *testing.T) {
	dsn := storetest.DSN(t)
	ts := newReplica(t, dsn, t.TempDir(), nil)
	res := ts.call(t, "GET", "/health", "", "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, map[string]any{"engine": "postgres", "ok": true}, res.json["database"])

	require.NoError(t, ts.store.Close())
	res = ts.call(t, "GET", "/health", "", "")
	assert.Equal(t, http.StatusServiceUnavailable, res.status)
	assert.Equal(t, map[string]any{"engine": "postgres", "ok": false}, res.json["database"])
}

func TestKeysLifecycle(t *testing.T) {
	ts := newServer(t, bootstrap, nil)

	res := ts.call(t, "POST", "/api/v1/keys", bootstrap, `{"name":"ci","mode":"observe","appId":"billing","admin":false}`)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	for _, f := range []string{"id", "name", "mode", "appId", "admin", "token", "createdAt"} {
		assert.Contains(t, res.json, f)
	}
	token := res.json["token"].(string)
	id := res.json["id"].(string)
	assert.True(t, strings.HasPrefix(token, "svc_"))
	assert.Equal(t, "billing", res.json["appId"])

	list := ts.call(t, "GET", "/api/v1/keys", bootstrap, "")
	require.Equal(t, http.StatusOK, list.status)
	keys := list.json["keys"].([]any)
	require.Len(t, keys, 1)
	k := keys[0].(map[string]any)
	assert.Equal(t, token[:12], k["prefix"])
	assert.Nil(t, k["revokedAt"])
	assert.NotContains(t, list.body, token, "the token is never shown again")

	// The key works, on the management API.
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/settings", token, "").status)

	res = ts.call(t, "POST", "/api/v1/keys/"+id+"/revoke", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.NotNil(t, res.json["key"].(map[string]any)["revokedAt"])

	// Refused on its very next request.
	res = ts.call(t, "GET", "/api/v1/settings", token, "")
	assert.Equal(t, http.StatusUnauthorized, res.status)
	assert.Equal(t, "invalid_token", res.errorCode())

	res = ts.call(t, "POST", "/api/v1/keys/"+id+"/revoke", bootstrap, "")
	assert.Equal(t, http.StatusConflict, res.status)

	events := ts.call(t, "GET", "/api/v1/audit", bootstrap, "").json["events"].([]any)
	require.Len(t, events, 2)
	assert.Equal(t, "key.revoke", events[0].(map[string]any)["action"])
	assert.Equal(t, "key.create", events[1].(map[string]any)["action"])
	assert.Equal(t, "bootstrap", events[1].(map[string]any)["actor"])
}

func TestCreateKeyRejectsBadBodies(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	for _, tc := range []struct {
		name, body string
		status     int
		param      string
	}{
		{"missing name", `{"mode":"observe"}`, 400, "name"},
		{"bad mode", `{"name":"x","mode":"fast"}`, 400, "mode"},
		{"missing mode", `{"name":"x"}`, 400, "mode"},
		{"name not a string", `{"name":5,"mode":"observe"}`, 400, "name"},
		{"admin not a bool", `{"name":"x","mode":"observe","admin":"yes"}`, 400, "admin"},
		{"unknown field", `{"name":"x","mode":"observe","tenantId":"t_other"}`, 400, "tenantId"},
		{"not json", `name=x`, 400, ""},
		{"truncated", `{"name":"x"`, 400, ""},
		{"trailing data", `{"name":"x","mode":"observe"} {}`, 400, ""},
		{"array", `[1,2]`, 400, ""},
		{"empty", ``, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", ts.URL+"/api/v1/keys", strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+bootstrap)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			var body struct {
				Error struct{ Code, Message, Param string }
			}
			require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
			assert.Equal(t, tc.status, res.StatusCode)
			assert.NotEmpty(t, body.Error.Code)
			assert.NotEmpty(t, body.Error.Message)
			assert.Equal(t, tc.param, body.Error.Param)
		})
	}
	assert.Empty(t, ts.call(t, "GET", "/api/v1/keys", bootstrap, "").json["keys"], "nothing was created")
}

func TestAuthErrors(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	_, plain := ts.createKey(t, bootstrap, `{"name":"plain","mode":"optimize"}`)

	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"no token", "GET", "/api/v1/settings", "", "", 401, "missing_credentials"},
		{"bad token", "GET", "/api/v1/settings", "svc_wrong", "", 401, "invalid_token"},
		{"not a key", "GET", "/api/v1/audit", "whatever-else", "", 401, "invalid_token"},
		{"non-admin lists keys", "GET", "/api/v1/keys", plain, "", 403, "admin_required"},
		{"non-admin creates key", "POST", "/api/v1/keys", plain, `{"name":"x","mode":"observe"}`, 403, "admin_required"},
		{"non-admin revokes key", "POST", "/api/v1/keys/key_aaaaaaaaaaaaaaaaaaaa/revoke", plain, "", 403, "admin_required"},
		{"non-admin updates settings", "PUT", "/api/v1/settings", plain, `{"key":"redaction","value":true}`, 403, "admin_required"},
		{"non-admin reads settings", "GET", "/api/v1/settings", plain, "", 200, ""},
		{"non-admin reads audit", "GET", "/api/v1/audit", plain, "", 200, ""},
		{"health needs nothing", "GET", "/health", "", "", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := ts.call(t, tc.method, tc.path, tc.token, tc.body)
			assert.Equal(t, tc.status, res.status, res.body)
			assert.Equal(t, tc.code, res.errorCode())
		})
	}
	denied := ts.call(t, "GET", "/api/v1/audit?decision=deny", bootstrap, "").json["events"].([]any)
	assert.Len(t, denied, 4, "every refused admin operation is audited")
	assert.Equal(t, "authz.denied", denied[0].(map[string]any)["action"])
}

func TestOpenDevMode(t *testing.T) {
	ts := newServer(t, "", nil)
	res := ts.call(t, "POST", "/api/v1/keys", "", `{"name":"x","mode":"optimize"}`)
	assert.Equal(t, http.StatusCreated, res.status, "headerless is admin")
	res = ts.call(t, "GET", "/api/v1/settings", "svc_bogus", "")
	assert.Equal(t, http.StatusUnauthorized, res.status, "a presented bad token is refused even in open mode")
}

func TestTenantIsolation(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	theirs, theirToken, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Optimize, Admin: true})
	require.NoError(t, err)

	// Another tenant's key is "not found", byte for byte like an unknown id.
	foreign := ts.call(t, "POST", "/api/v1/keys/"+theirs.ID+"/revoke", bootstrap, "")
	unknown := ts.call(t, "POST", "/api/v1/keys/key_aaaaaaaaaaaaaaaaaaaa/revoke", bootstrap, "")
	garbage := ts.call(t, "POST", "/api/v1/keys/..%2F..%2Fetc/revoke", bootstrap, "")
	assert.Equal(t, http.StatusNotFound, foreign.status)
	assert.Equal(t, unknown.body, foreign.body)
	assert.Equal(t, http.StatusNotFound, garbage.status)
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/settings", theirToken, "").status, "their key still works")

	// Lists and settings never show the other tenant's records.
	assert.NotContains(t, ts.call(t, "GET", "/api/v1/keys", bootstrap, "").body, theirs.ID)
	ts.call(t, "PUT", "/api/v1/settings", theirToken, `{"key":"retention_days","value":3}`)
	mine := ts.call(t, "GET", "/api/v1/settings", bootstrap, "").json["settings"].(map[string]any)
	assert.InDelta(t, 30.0, mine["retention_days"], 0)
	theirsSettings := ts.call(t, "GET", "/api/v1/settings", theirToken, "").json["settings"].(map[string]any)
	assert.InDelta(t, 3.0, theirsSettings["retention_days"], 0)
	assert.NotContains(t, ts.call(t, "GET", "/api/v1/audit", bootstrap, "").body, "retention_days")
	assert.Contains(t, ts.call(t, "GET", "/api/v1/audit", theirToken, "").body, "retention_days")
}

func TestSettingsAPI(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res := ts.call(t, "GET", "/api/v1/settings", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, map[string]any{
		"retention_days": float64(30), "redaction": false, "webhook_url": nil, "webhook_secret": nil,
		"approval_exception_ttl_hours": float64(24), "canary_enabled": false, "approval_pending_limit": float64(20),
		"timezone": "UTC",
	}, res.json["settings"])

	res = ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"timezone","value":"Mars/Olympus"}`)
	assert.Equal(t, http.StatusBadRequest, res.status, res.body)
	assert.Equal(t, "timezone", res.json["error"].(map[string]any)["param"], res.body)
	res = ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"timezone","value":"Europe/Paris"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "Europe/Paris", res.json["settings"].(map[string]any)["timezone"])

	res = ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"webhook_secret","value":"hunter2-secret"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "[set]", res.json["settings"].(map[string]any)["webhook_secret"])
	assert.NotContains(t, res.body, "hunter2-secret")
	assert.NotContains(t, ts.call(t, "GET", "/api/v1/settings", bootstrap, "").body, "hunter2-secret")
	assert.NotContains(t, ts.call(t, "GET", "/api/v1/audit", bootstrap, "").body, "hunter2-secret")

	res = ts.call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"webhook_url","value":"https://hooks.example.com/in"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "https://hooks.example.com/in", res.json["settings"].(map[string]any)["webhook_url"])

	for _, tc := range []struct{ body, code, param string }{
		{`{"key":"nope","value":1}`, "unsupported_setting", ""},
		{`{"key":"retention_days","value":-1}`, "invalid_setting", "retention_days"},
		{`{"key":"approval_exception_ttl_hours","value":"2"}`, "invalid_setting", "approval_exception_ttl_hours"},
		{`{"key":"redaction","value":"on"}`, "invalid_setting", "redaction"},
		{`{"key":"canary_enabled","value":1}`, "invalid_setting", "canary_enabled"},
		{`{"key":"approval_pending_limit","value":0.5}`, "invalid_setting", "approval_pending_limit"},
		{`{"key":"webhook_url","value":"http://0x7f000001/"}`, "invalid_setting", "webhook_url"},
		{`{"key":"webhook_url","value":"http://inside.example.com/"}`, "invalid_setting", "webhook_url"},
		{`{"key":"webhook_url","value":"http://[::ffff:169.254.169.254]/"}`, "invalid_setting", "webhook_url"},
		{`{"key":"webhook_secret","value":7}`, "invalid_setting", "webhook_secret"},
		{`{"key":"redaction"}`, "invalid_request", "value"},
		{`{"value":true}`, "invalid_request", "key"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			res := ts.call(t, "PUT", "/api/v1/settings", bootstrap, tc.body)
			assert.Equal(t, http.StatusBadRequest, res.status, res.body)
			assert.Equal(t, tc.code, res.errorCode())
			if tc.param != "" {
				assert.Contains(t, res.json["error"].(map[string]any)["message"], tc.param, "the error names the setting")
			}
		})
	}
}

func TestAuditQuery(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	for range 3 {
		ts.createKey(t, bootstrap, `{"name":"k","mode":"observe"}`)
	}
	res := ts.call(t, "GET", "/api/v1/audit?limit=2", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status)
	assert.Len(t, res.json["events"], 2)
	assert.Len(t, ts.call(t, "GET", "/api/v1/audit?decision=allow", bootstrap, "").json["events"], 3)
	assert.Empty(t, ts.call(t, "GET", "/api/v1/audit?decision=deny", bootstrap, "").json["events"])
	for _, q := range []string{"limit=abc", "limit=-1", "decision=maybe"} {
		assert.Equal(t, http.StatusBadRequest, ts.call(t, "GET", "/api/v1/audit?"+q, bootstrap, "").status, q)
	}
}

func TestAuditFilters(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	id, _ := ts.createKey(t, bootstrap, `{"name":"k","mode":"observe"}`)
	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/keys/"+id+"/revoke", bootstrap, "").status)
	events := func(q string) []any {
		t.Helper()
		res := ts.call(t, "GET", "/api/v1/audit?"+q, bootstrap, "")
		require.Equal(t, http.StatusOK, res.status, res.body)
		return res.json["events"].([]any)
	}
	revoked := events("action=key.revoke")
	require.Len(t, revoked, 1)
	e := revoked[0].(map[string]any)
	assert.Equal(t, id, e["target"])
	assert.Len(t, events("actor="+url.QueryEscape(e["actor"].(string))), 2)
	assert.Empty(t, events("actor=user:nobody"))
	at := e["at"].(string)
	assert.Len(t, events("action=key.revoke&since="+url.QueryEscape(at)), 1, "since is included")
	assert.Empty(t, events("action=key.revoke&until="+url.QueryEscape(at)), "until is not")
	for _, tc := range []struct{ q, param string }{
		{"since=soon", "since"}, {"until=1", "until"}, {"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "until"},
		{"action=" + strings.Repeat("a", 201), "action"}, {"actor=%FF", "actor"},
	} {
		res := ts.call(t, "GET", "/api/v1/audit?"+tc.q, bootstrap, "")
		assert.Equal(t, http.StatusBadRequest, res.status, tc.q)
		assert.Equal(t, tc.param, res.json["error"].(map[string]any)["param"], tc.q)
	}
}

func TestRoutingErrors(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res := ts.call(t, "GET", "/api/v1/nothing-here", bootstrap, "")
	assert.Equal(t, http.StatusNotFound, res.status)
	assert.Equal(t, "not_found", res.errorCode())

	res = ts.call(t, "DELETE", "/api/v1/keys", bootstrap, "")
	assert.Equal(t, http.StatusMethodNotAllowed, res.status)
	assert.Equal(t, "GET, POST", res.header.Get("Allow"))
	assert.Equal(t, "method_not_allowed", res.errorCode())

	// The gateway answers in the provider's error shape.
	res = ts.call(t, "GET", "/v1/nothing", bootstrap, "")
	assert.Equal(t, http.StatusNotFound, res.status)
	e := res.json["error"].(map[string]any)
	assert.Equal(t, "not_found_error", e["type"])
	assert.Contains(t, e, "param")
	assert.NotEmpty(t, e["message"])
}

func TestBodyLimitAndMediaType(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_MAX_BODY_BYTES": "2048"})
	big := `{"name":"` + strings.Repeat("x", 4096) + `","mode":"observe"}`
	res := ts.call(t, "POST", "/api/v1/keys", bootstrap, big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.status)
	assert.Equal(t, "body_too_large", res.errorCode())

	// Without a Content-Length the limit still holds while reading.
	req, err := http.NewRequest("POST", ts.URL+"/api/v1/keys", io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+bootstrap)
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.StatusCode)

	res = ts.call(t, "POST", "/api/v1/keys", bootstrap, `{"name":"x","mode":"observe"}`, "Content-Type", "text/plain")
	assert.Equal(t, http.StatusUnsupportedMediaType, res.status)
}

func TestRateLimit(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_RATE_LIMIT": "60"}) // burst 6, one a second
	for i := range 6 {
		require.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/settings", bootstrap, "").status, "request %d", i+1)
	}
	res := ts.call(t, "GET", "/api/v1/settings", bootstrap, "")
	require.Equal(t, http.StatusTooManyRequests, res.status)
	assert.Equal(t, "1", res.header.Get("Retry-After"))
	assert.Equal(t, "rate_limited", res.errorCode())

	// Another caller has its own bucket; /health is not limited.
	_, token, err := ts.keys.Create(context.Background(), "default", auth.NewKey{Name: "k", Mode: auth.Observe})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/settings", token, "").status)
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/health", "", "").status)

	ts.clock.Advance(time.Second)
	assert.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/settings", bootstrap, "").status, "a token is back after a second")
}

func TestBadTokensAreRateLimitedByAddress(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_RATE_LIMIT": "30"}) // burst 3
	for range 3 {
		assert.Equal(t, http.StatusUnauthorized, ts.call(t, "GET", "/api/v1/settings", "svc_guess", "").status)
	}
	res := ts.call(t, "GET", "/api/v1/settings", "svc_guess", "")
	assert.Equal(t, http.StatusTooManyRequests, res.status)
	assert.NotEmpty(t, res.header.Get("Retry-After"))
}

func TestCORS(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res := ts.call(t, "OPTIONS", "/api/v1/keys", "", "", "Origin", "https://app.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization, x-svc-app")
	assert.Equal(t, http.StatusNoContent, res.status)
	assert.Equal(t, "*", res.header.Get("Access-Control-Allow-Origin"))
	for _, h := range []string{"Authorization", "X-Svc-App", "X-Svc-Agent", "X-Svc-Subject", "Traceparent", "Tracestate"} {
		assert.Contains(t, res.header.Get("Access-Control-Allow-Headers"), h)
	}
	assert.Empty(t, res.header.Get("Access-Control-Allow-Credentials"))

	res = ts.call(t, "GET", "/api/v1/settings", bootstrap, "", "Origin", "https://app.example")
	assert.Equal(t, http.StatusOK, res.status)
	assert.Contains(t, res.header.Get("Access-Control-Expose-Headers"), "x-svc-run-id")
	assert.Contains(t, res.header.Get("Access-Control-Expose-Headers"), "x-svc-route")
	assert.Empty(t, res.header.Get("Access-Control-Allow-Credentials"), "cookies never cross origins")
}

func TestDashboardPage(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	res := ts.call(t, "GET", "/", "", "")
	assert.Equal(t, http.StatusOK, res.status)
	assert.Contains(t, res.body, "<h1>svc</h1>")
	csp := res.header.Get("Content-Security-Policy")
	for _, d := range []string{"object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"} {
		assert.Contains(t, csp, d)
	}
	assert.Equal(t, "nosniff", res.header.Get("X-Content-Type-Options"))
}
