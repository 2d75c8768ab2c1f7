package pluginapi

import (
	"encoding/json"
	"fmt"
	"golang.org/x/net/http/httpguts"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProviderConfig is what one provider instance is told: where its upstream
// is, the key it calls it with, how long an upstream call may take, and the
// headers every upstream request carries. A provider plugin reads it from
// its environment (ProviderConfigFromEnv); a provider run inside svc's
// process is given it directly. The same fields either way, so that the two
// modes behave alike.
type ProviderConfig struct {
	// BaseURL is the upstream's base URL ("" means the provider's own
	// default, e.g. https://api.openai.com/v1).
	BaseURL string
	// APIKey is the upstream's key; "" means none is sent (a local
	// upstream such as vLLM or Ollama).
	APIKey string
	// Timeout bounds one upstream call until its answer (a stream: until
	// its first event); 0 leaves the provider's own limits.
	Timeout time.Duration
	// Headers are added to every upstream request.
	Headers map[string]string
	// MockLatency is the mock provider's wait before each answer.
	MockLatency time.Duration
}

// The environment variables a provider plugin reads its ProviderConfig from.
const (
	EnvProviderAPIKey    = "PROVIDER_API_KEY"
	EnvProviderBaseURL   = "PROVIDER_BASE_URL"
	EnvProviderTimeoutMS = "PROVIDER_TIMEOUT_MS"
	EnvProviderHeaders   = "PROVIDER_HEADERS" // a JSON object of strings
	EnvMockLatencyMS     = "MOCK_LATENCY_MS"
)

// Validate refuses a configuration no provider can send: a header whose
// name is not an HTTP field name or whose value holds a line break or
// another control character, which net/http refuses on every request. Both ProviderConfigFromEnv and the
// first-party providers' constructors call it.
func (cfg ProviderConfig) Validate() error {
	for name, value := range cfg.Headers {
		if !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(value) {
			return fmt.Errorf("the provider's header %q is not a valid HTTP header", name)
		}
	}
	return nil
}

// Env is cfg as the environment variables ProviderConfigFromEnv reads, for
// a plugin process.
func (cfg ProviderConfig) Env() []string {
	var env []string
	if cfg.APIKey != "" {
		env = append(env, EnvProviderAPIKey+"="+cfg.APIKey)
	}
	if cfg.BaseURL != "" {
		env = append(env, EnvProviderBaseURL+"="+cfg.BaseURL)
	}
	if cfg.Timeout > 0 { // at least 1 ms: 0 would mean none
		env = append(env, EnvProviderTimeoutMS+"="+strconv.FormatInt(max(cfg.Timeout.Milliseconds(), 1), 10))
	}
	if len(cfg.Headers) > 0 {
		b, _ := json.Marshal(cfg.Headers) // a map of strings always marshals
		env = append(env, EnvProviderHeaders+"="+string(b))
	}
	if cfg.MockLatency > 0 {
		env = append(env, EnvMockLatencyMS+"="+strconv.FormatInt(max(cfg.MockLatency.Milliseconds(), 1), 10))
	}
	return env
}

// maxMockLatency bounds MOCK_LATENCY_MS to something a demo could mean.
const maxMockLatency = 10 * time.Minute

// ProviderConfigFromEnv reads a plugin's ProviderConfig from its
// environment, refusing a value it cannot use with a message that names the
// variable.
func ProviderConfigFromEnv() (ProviderConfig, error) {
	cfg := ProviderConfig{
		APIKey:  strings.TrimSpace(os.Getenv(EnvProviderAPIKey)),
		BaseURL: strings.TrimSpace(os.Getenv(EnvProviderBaseURL)),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return ProviderConfig{}, fmt.Errorf("%s must be an absolute http(s) URL", EnvProviderBaseURL)
		}
	}
	ms, err := envMillis(EnvProviderTimeoutMS, 24*time.Hour)
	if err != nil {
		return ProviderConfig{}, err
	}
	cfg.Timeout = ms
	if v := strings.TrimSpace(os.Getenv(EnvProviderHeaders)); v != "" {
		if err := json.Unmarshal([]byte(v), &cfg.Headers); err != nil {
			return ProviderConfig{}, fmt.Errorf("%s must be a JSON object of strings: %w", EnvProviderHeaders, err)
		}
		if err := cfg.Validate(); err != nil {
			return ProviderConfig{}, fmt.Errorf("%s: %w", EnvProviderHeaders, err)
		}
	}
	if cfg.MockLatency, err = envMillis(EnvMockLatencyMS, maxMockLatency); err != nil {
		return ProviderConfig{}, err
	}
	return cfg, nil
}

// envMillis reads a whole, non-negative number of milliseconds up to max
// from the variable name; empty is 0.
func envMillis(name string, max time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > max {
		return 0, fmt.Errorf("%s must be a whole number of milliseconds between 0 and %d, got %q", name, max.Milliseconds(), v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
