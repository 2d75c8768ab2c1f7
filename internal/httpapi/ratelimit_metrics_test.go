package httpapi_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/metrics/metricstest"
)

func TestAPIRateLimitRefusalsAreCounted(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_RATE_LIMIT": "30"}) // burst 3
	for range 3 {
		require.Equal(t, http.StatusOK, ts.call(t, "GET", "/api/v1/settings", bootstrap, "").status)
	}
	require.Equal(t, http.StatusTooManyRequests, ts.call(t, "GET", "/api/v1/settings", bootstrap, "").status)
	assert.Equal(t, map[string]float64{"api": 1}, metricstest.Nonzero(t, ts.metrics, "svc_rate_limit_refusals_total"))
}

func TestSignInRateLimitRefusalsAreCountedByLimiter(t *testing.T) {
	env := accountEnv()
	env["SVC_TRUSTED_PROXIES"] = "127.0.0.1"
	ts := newServer(t, "", env)
	login := func(client, email string) int {
		return ts.browser(t).do(t, "POST", "/api/v1/auth/login", `{"email":"`+email+`","password":"wrong"}`,
			"X-Forwarded-For", client+", 127.0.0.1").status
	}
	// One account's bucket, from many addresses.
	for i := range 10 {
		require.Equal(t, http.StatusUnauthorized, login("203.0.113."+strconv.Itoa(i), adminEmail))
	}
	require.Equal(t, http.StatusTooManyRequests, login("203.0.113.77", adminEmail))
	// One address's bucket, at many accounts.
	for i := range 10 {
		require.Equal(t, http.StatusUnauthorized, login("198.51.100.1", "user"+strconv.Itoa(i)+"@example.com"))
	}
	require.Equal(t, http.StatusTooManyRequests, login("198.51.100.1", "user99@example.com"))
	assert.Equal(t, map[string]float64{"account": 1, "abuse": 1}, metricstest.Nonzero(t, ts.metrics, "svc_rate_limit_refusals_total"))
}
