package pluginapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

var providerEnv = []string{pluginapi.EnvProviderAPIKey, pluginapi.EnvProviderBaseURL, pluginapi.EnvProviderTimeoutMS,
	pluginapi.EnvProviderHeaders, pluginapi.EnvMockLatencyMS}

// setEnv gives the test exactly env among the provider's variables.
func setEnv(t *testing.T, env []string) {
	t.Helper()
	for _, name := range providerEnv {
		t.Setenv(name, "")
	}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		require.True(t, ok, kv)
		t.Setenv(name, value)
	}
}

// A plugin reads back from its environment the configuration svc gave it.
func TestProviderConfigRoundTripsThroughTheEnvironment(t *testing.T) {
	for name, cfg := range map[string]pluginapi.ProviderConfig{
		"empty": {},
		"every field": {BaseURL: "http://127.0.0.1:11434/v1", APIKey: "sk-test-123", Timeout: 2500 * time.Millisecond,
			Headers: map[string]string{"X-Team": "search", "X-Quote": `a "b" = c`}, MockLatency: 15 * time.Millisecond},
		"key only":         {APIKey: "sk-only"},
		"latency only":     {MockLatency: 10 * time.Minute},
		"longest timeout":  {Timeout: 24 * time.Hour},
		"one header":       {Headers: map[string]string{"x-lower": ""}},
		"https, with path": {BaseURL: "https://gateway.example/openai/v1"},
	} {
		t.Run(name, func(t *testing.T) {
			setEnv(t, cfg.Env())
			got, err := pluginapi.ProviderConfigFromEnv()
			require.NoError(t, err)
			assert.Equal(t, cfg, got)
		})
	}
}

func TestProviderConfigEnvLeavesOutWhatIsUnset(t *testing.T) {
	assert.Empty(t, pluginapi.ProviderConfig{}.Env())
	assert.Equal(t, []string{"PROVIDER_API_KEY=k", "MOCK_LATENCY_MS=3"},
		pluginapi.ProviderConfig{APIKey: "k", MockLatency: 3 * time.Millisecond}.Env())
}

// A duration under a millisecond is still one: 0 would mean none.
func TestProviderConfigEnvKeepsATinyTimeout(t *testing.T) {
	setEnv(t, pluginapi.ProviderConfig{Timeout: 300 * time.Microsecond, MockLatency: time.Microsecond}.Env())
	got, err := pluginapi.ProviderConfigFromEnv()
	require.NoError(t, err)
	assert.Equal(t, time.Millisecond, got.Timeout)
	assert.Equal(t, time.Millisecond, got.MockLatency)
}

func TestProviderConfigFromEnvTrimsAndTakesWholeMilliseconds(t *testing.T) {
	setEnv(t, []string{"PROVIDER_API_KEY= sk-1 \n", "PROVIDER_BASE_URL= http://localhost:8000/v1 ",
		"PROVIDER_TIMEOUT_MS= 250 ", "MOCK_LATENCY_MS= 15 ", "PROVIDER_HEADERS= {} "})
	got, err := pluginapi.ProviderConfigFromEnv()
	require.NoError(t, err)
	assert.Equal(t, pluginapi.ProviderConfig{APIKey: "sk-1", BaseURL: "http://localhost:8000/v1",
		Timeout: 250 * time.Millisecond, MockLatency: 15 * time.Millisecond, Headers: map[string]string{}}, got)

	for _, zero := range []string{"", "0", " 0 "} {
		setEnv(t, []string{"MOCK_LATENCY_MS=" + zero, "PROVIDER_TIMEOUT_MS=" + zero})
		got, err := pluginapi.ProviderConfigFromEnv()
		require.NoError(t, err, "%q", zero)
		assert.Zero(t, got.MockLatency)
		assert.Zero(t, got.Timeout)
	}
}

// A value the plugin cannot use is refused with the variable's name.
func TestProviderConfigFromEnvNamesABadValue(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"PROVIDER_BASE_URL", "/v1"},
		{"PROVIDER_BASE_URL", "api.openai.com/v1"},
		{"PROVIDER_BASE_URL", "ftp://example.com"},
		{"PROVIDER_BASE_URL", "http://"},
		{"PROVIDER_BASE_URL", "http://[::1"},
		{"PROVIDER_TIMEOUT_MS", "abc"},
		{"PROVIDER_TIMEOUT_MS", "-1"},
		{"PROVIDER_TIMEOUT_MS", "1.5"},
		{"PROVIDER_TIMEOUT_MS", "10ms"},
		{"PROVIDER_TIMEOUT_MS", "86400001"},
		{"PROVIDER_TIMEOUT_MS", "99999999999999999999"},
		{"PROVIDER_HEADERS", "X-Team: search"},
		{"PROVIDER_HEADERS", `["X-Team"]`},
		{"PROVIDER_HEADERS", `{"X-Count":1}`},
		{"PROVIDER_HEADERS", `{"X-Team":"search"`},
		{"PROVIDER_HEADERS", `{"X-Team":"a\r\nX-Evil: b"}`},
		{"PROVIDER_HEADERS", `{"X Team":"search"}`},
		{"PROVIDER_HEADERS", `{"X-Team":"a\u0000b"}`},
		{"MOCK_LATENCY_MS", "abc"},
		{"MOCK_LATENCY_MS", "-5"},
		{"MOCK_LATENCY_MS", "1.5"},
		{"MOCK_LATENCY_MS", "10ms"},
		{"MOCK_LATENCY_MS", "600001"},
		{"MOCK_LATENCY_MS", "99999999999999"},
	} {
		setEnv(t, []string{tc.name + "=" + tc.value})
		_, err := pluginapi.ProviderConfigFromEnv()
		if assert.Error(t, err, "%s=%q", tc.name, tc.value) {
			assert.Contains(t, err.Error(), tc.name, "%s=%q", tc.name, tc.value)
		}
	}
}

func TestProviderConfigValidateRefusesABadHeader(t *testing.T) {
	for _, h := range []map[string]string{
		{"": "x"}, {"X Team": "x"}, {"X-Team:": "x"}, {"X-Team": "a\nb"}, {"X-Team": "a\rb"}, {"X-Team": "a\x00b"},
	} {
		err := pluginapi.ProviderConfig{Headers: h}.Validate()
		assert.ErrorContains(t, err, "not a valid HTTP header", "%q", h)
	}
	assert.NoError(t, pluginapi.ProviderConfig{Headers: map[string]string{"X-Team": "search", "anthropic-beta": "a,b"}}.Validate())
}
