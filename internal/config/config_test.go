package config_test

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := config.FromEnv(env(nil))
	require.NoError(t, err)
	assert.Equal(t, ":4100", c.Addr)
	assert.Equal(t, "./data/svc.db", c.DBPath)
	assert.True(t, c.OpenDevMode())
	assert.Equal(t, "mock", c.ProviderName())
	assert.Equal(t, "https://api.openai.com/v1", c.ProviderBaseURL)
	assert.Equal(t, 5*time.Minute, c.LearningInterval)
	assert.Equal(t, time.Hour, c.CacheTTL)
	assert.Equal(t, hclog.Info, c.LogLevel)
	assert.Equal(t, 1200, c.RateLimit)
	assert.Equal(t, int64(8<<20), c.MaxBodyBytes)
	assert.Equal(t, "http://localhost:4100", c.AppBaseURL)
	assert.Equal(t, "starttls", c.SMTPTLS)
	assert.NotEmpty(t, c.PluginDir, "defaults to plugins/ beside the binary")
	assert.Equal(t, max(1, runtime.NumCPU()/4), c.PluginGOMAXPROCS())
	assert.Equal(t, "data/ledger.key", c.LedgerKeyFile, "beside the database")
	assert.Equal(t, 1000, c.LedgerCheckpointEntries)
	assert.Equal(t, time.Minute, c.LedgerCheckpointInterval)
}

func TestValues(t *testing.T) {
	c, err := config.FromEnv(env(map[string]string{
		"SVC_ADDR": "127.0.0.1:0", "SVC_DB": "/tmp/x.db", "SVC_API_KEY": "0123456789abcdef",
		"PROVIDER_API_KEY": "sk-1", "SVC_LEARNING_INTERVAL": "0", "SVC_LOG_LEVEL": "debug", "SVC_LOG_JSON": "1",
		"SVC_AUTO_PROMOTE": "true", "SVC_WEB_ALLOW_PRIVATE": "10.0.0.0/8, 127.0.0.1:8080",
		"SVC_APP_BASE_URL": "https://svc.example.com/", "SVC_PLUGIN_DIR": "/opt/svc/plugins", "SMTP_TLS": "TLS",
		"SVC_PLUGIN_GOMAXPROCS": "3", "SVC_LEDGER_KEY_FILE": "/etc/svc/ledger.key", "SVC_LEDGER_CHECKPOINT_RUNS": "50",
		"SVC_LEDGER_CHECKPOINT_INTERVAL": "15s", "SVC_PROVIDERS_FILE": "/etc/svc/providers.yaml",
	}))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:0", c.Addr)
	assert.False(t, c.OpenDevMode())
	assert.Equal(t, "openai", c.ProviderName())
	assert.Zero(t, c.LearningInterval)
	assert.Equal(t, hclog.Debug, c.LogLevel)
	assert.True(t, c.LogJSON)
	assert.True(t, c.AutoPromote)
	assert.Equal(t, "https://svc.example.com", c.AppBaseURL, "trailing slash trimmed")
	assert.Equal(t, "/opt/svc/plugins", c.PluginDir)
	assert.Equal(t, "/etc/svc/providers.yaml", c.ProvidersFile)
	assert.Equal(t, "tls", c.SMTPTLS)
	assert.Equal(t, 3, c.PluginGOMAXPROCS())
	assert.Equal(t, "/etc/svc/ledger.key", c.LedgerKeyFile)
	assert.Equal(t, 50, c.LedgerCheckpointEntries)
	assert.Equal(t, 15*time.Second, c.LedgerCheckpointInterval)

	c, err = config.FromEnv(env(map[string]string{"SVC_DB": "/var/lib/svc/svc.db"}))
	require.NoError(t, err)
	assert.Equal(t, "/var/lib/svc/ledger.key", c.LedgerKeyFile)
}

func TestBadValuesNameTheVariable(t *testing.T) {
	for name, value := range map[string]string{
		"SVC_ADDR":                       "4100",
		"SVC_API_KEY":                    "short",
		"SVC_CACHE_TTL":                  "forever",
		"SVC_PLUGIN_GOMAXPROCS":          "-1",
		"SVC_LEARNING_INTERVAL":          "-5m",
		"SVC_LOG_LEVEL":                  "loud",
		"SVC_LOG_JSON":                   "maybe",
		"SVC_RATE_LIMIT":                 "-1",
		"SVC_MAX_BODY_BYTES":             "1k",
		"SVC_APP_BASE_URL":               "ftp://x",
		"PROVIDER_BASE_URL":              "not a url",
		"SVC_WEB_ALLOW_PRIVATE":          "10.0.0.0/99",
		"SMTP_PORT":                      "70000",
		"SMTP_TLS":                       "ssl",
		"SVC_ALLOW_PUBLIC_SIGNUP":        "2",
		"SVC_LEDGER_CHECKPOINT_RUNS":     "0",
		"SVC_LEDGER_CHECKPOINT_INTERVAL": "0",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.FromEnv(env(map[string]string{name: value}))
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), name+": "), err.Error())
		})
	}
}

func TestEveryBadValueIsReported(t *testing.T) {
	_, err := config.FromEnv(env(map[string]string{"SVC_CACHE_TTL": "x", "SVC_RATE_LIMIT": "y"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SVC_CACHE_TTL")
	assert.Contains(t, err.Error(), "SVC_RATE_LIMIT")
}

func TestAdminPairMustBeComplete(t *testing.T) {
	_, err := config.FromEnv(env(map[string]string{"SVC_ADMIN_EMAIL": "a@b.c"}))
	assert.ErrorContains(t, err, "SVC_ADMIN_PASSWORD")
}

func TestVarsListsEveryVariableRead(t *testing.T) {
	read := map[string]bool{}
	_, _ = config.FromEnv(func(k string) string { read[k] = true; return "" })
	listed := map[string]bool{}
	for _, v := range config.Vars {
		listed[v.Name] = true
	}
	for k := range read {
		assert.True(t, listed[k], "%s is read but not documented in config.Vars", k)
	}
	for k := range listed {
		assert.True(t, read[k], "%s is documented but never read", k)
	}
}

func TestOperationsDocDocumentsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	for _, v := range config.Vars {
		assert.Contains(t, string(readme), "| `"+v.Name+"` | "+v.Default+" |", "docs/operations.md's configuration table is out of date; regenerate the row of %s", v.Name)
	}
}

// Tracing is on with an endpoint, unless switched off; OTEL_TRACES_EXPORTER
// is a list that must name otlp, and the protocol is one svc exports with.
func TestTracing(t *testing.T) {
	const endpoint = "http://collector:4318"
	for _, tc := range []struct {
		env map[string]string
		on  bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "console"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "console, OTLP"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true},
	} {
		c, err := config.FromEnv(env(tc.env))
		require.NoError(t, err, tc.env)
		assert.Equal(t, tc.on, c.Tracing, tc.env)
	}
	for name, value := range map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "http/json",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift",
	} {
		_, err := config.FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, name: value}))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), name)
		assert.Contains(t, err.Error(), "grpc or http/protobuf")
	}
	// The traces' own protocol comes first.
	c, err := config.FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}))
	require.NoError(t, err)
	assert.True(t, c.Tracing)
}

// A PostgreSQL address shown in logs or /health carries no password,
// whether in its user information or in its parameters.
func TestRedactDBAddressHidesEveryPassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://svc:s3cret@db:5432/svc?sslmode=verify-full":                     "postgres://svc:xxxxx@db:5432/svc?sslmode=verify-full",
		"postgres://svc@db/svc?password=s3cret&sslmode=require":                     "postgres://svc@db/svc?password=xxxxx&sslmode=require",
		"postgresql://db/svc?sslpassword=k3y&sslkey=/k.pem&user=svc":                "postgresql://db/svc?sslkey=%2Fk.pem&sslpassword=xxxxx&user=svc",
		"postgres://svc@db/svc?sslmode=disable":                                     "postgres://svc@db/svc?sslmode=disable",
		"postgres://svc:pw@db/svc?password=other&sslpassword=third&sslmode=require": "postgres://svc:xxxxx@db/svc?password=xxxxx&sslmode=require&sslpassword=xxxxx",
	} {
		got := config.RedactDBAddress(in)
		if got != want {
			t.Errorf("RedactDBAddress(%q) = %q, want %q", in, got, want)
		}
		for _, secret := range []string{"s3cret", "k3y", "other", "third", ":pw@"} {
			if strings.Contains(got, secret) {
				t.Errorf("RedactDBAddress(%q) = %q shows %q", in, got, secret)
			}
		}
	}
	c := config.Config{DBPath: "postgres://svc@db/svc?password=s3cret"}
	if got := c.DBAddress(); strings.Contains(got, "s3cret") {
		t.Errorf("DBAddress() = %q shows the password", got)
	}
}
