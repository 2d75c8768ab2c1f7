package httpapi_test

import (
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/store/storetest"
)

// replicas serves n svcs, as package app builds them, on one new
// PostgreSQL database, each with its own run journal and clock and the
// same ledger key: n replicas behind a load balancer. It skips where
// PostgreSQL is not installed. Their tests record no run.
func replicas(t *testing.T, n int, apiKey string, env map[string]string) []*testServer {
	t.Helper()
	dsn := storetest.DSN(t)
	key := filepath.Join(t.TempDir(), "ledger.key")
	ts := make([]*testServer, n)
	for i := range ts {
		ts[i] = newServerOptions(t, apiKey, env, mockProvider(t), func(o *app.Options) {
			cfg := *o.Config
			cfg.DBPath, cfg.JournalDir, cfg.LedgerKeyFile = dsn, t.TempDir(), key
			o.Config, o.DataDir = &cfg, ""
		})
		ts[i].runless = true
	}
	return ts
}

// advance moves every replica's clock on by d.
func advance(ts []*testServer, d time.Duration) {
	for _, s := range ts {
		s.clock.Advance(d)
	}
}

// The standard limiter holds on a caller's total across replicas: with
// SVC_RATE_LIMIT=60 (a burst of 6, one a second), requests spread across
// three replicas are admitted exactly 6 times, then once a second.
func TestRateLimitHoldsAcrossReplicas(t *testing.T) {
	ts := replicas(t, 3, bootstrap, map[string]string{"SVC_RATE_LIMIT": "60"})
	ok := 0
	for i := range 18 {
		res := ts[i%3].call(t, "GET", "/api/v1/settings", bootstrap, "")
		switch res.status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			assert.Equal(t, "1", res.header.Get("Retry-After"))
			assert.Equal(t, "rate_limited", res.errorCode())
		default:
			t.Fatalf("request %d: %d %s", i, res.status, res.body)
		}
	}
	assert.Equal(t, 6, ok, "the burst, on the total of three replicas")
	advance(ts, time.Second)
	assert.Equal(t, http.StatusOK, ts[2].call(t, "GET", "/api/v1/settings", bootstrap, "").status, "a token is back after a second")
	assert.Equal(t, http.StatusTooManyRequests, ts[0].call(t, "GET", "/api/v1/settings", bootstrap, "").status, "and only one")
}

// Ten wrong passwords for one account, spread across three replicas and
// many addresses, shut its sign-in bucket on every replica.
func TestSignInBucketHoldsAcrossReplicas(t *testing.T) {
	env := accountEnv()
	env["SVC_TRUSTED_PROXIES"] = "127.0.0.1"
	ts := replicas(t, 3, "", env)
	login := func(s *testServer, client, password string) response {
		return s.browser(t).do(t, "POST", "/api/v1/auth/login", `{"email":"`+adminEmail+`","password":"`+password+`"}`,
			"X-Forwarded-For", client+", 127.0.0.1")
	}
	for i := range 10 {
		res := login(ts[i%3], "203.0.113."+strconv.Itoa(i), "wrong guess "+strconv.Itoa(i))
		require.Equal(t, http.StatusUnauthorized, res.status, "guess %d", i)
	}
	for i, s := range ts {
		res := login(s, "198.51.100."+strconv.Itoa(i), adminPassword)
		require.Equal(t, http.StatusTooManyRequests, res.status, "replica %d", i)
		assert.Equal(t, "30", res.header.Get("Retry-After"))
		assert.Contains(t, res.body, "this account")
	}
	advance(ts, 31*time.Second)
	assert.Equal(t, http.StatusOK, login(ts[1], "192.0.2.1", adminPassword).status, "one attempt back after 30 seconds")
}
