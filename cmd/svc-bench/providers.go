package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// providersFile is the providers file (SVC_PROVIDERS_FILE) the benchmark
// gives svc, written as JSON, which svc reads by its extension.
type providersFile struct {
	Retries   *retriesConfig   `json:"retries,omitempty"`
	Breaker   *breakerConfig   `json:"breaker,omitempty"`
	Providers []providerConfig `json:"providers"`
	Routes    []routeConfig    `json:"routes,omitempty"`
}

type retriesConfig struct {
	MaxAttempts int    `json:"max_attempts"`
	Backoff     string `json:"backoff,omitempty"`
	MaxBackoff  string `json:"max_backoff,omitempty"`
}

type breakerConfig struct {
	Failures int `json:"failures"` // 0 disables it
}

type providerConfig struct {
	Name      string `json:"name"`
	Plugin    string `json:"plugin"`
	Mode      string `json:"mode"`
	BaseURL   string `json:"base_url"`
	APIKeyEnv string `json:"api_key_env"`
	Timeout   string `json:"timeout,omitempty"`
}

type routeConfig struct {
	Model    string        `json:"model"`
	Strategy string        `json:"strategy"`
	Targets  []routeTarget `json:"targets"`
}

type routeTarget struct {
	Provider string `json:"provider"`
}

// The provider modes svc runs a first-party provider in.
const (
	modePlugin    = "plugin"
	modeInProcess = "in_process"
)

// apiKeyEnv is the variable of svc's environment the providers' key is
// read from (startSVC sets it).
const apiKeyEnv = "PROVIDER_API_KEY"

// singleProvider is today's one provider, provider-openai in front of
// upstream, declared in a file so that its mode can be chosen.
func singleProvider(mode, upstream string) providersFile {
	return providersFile{Providers: []providerConfig{
		{Name: "openai", Plugin: "openai", Mode: mode, BaseURL: upstream, APIKeyEnv: apiKeyEnv},
	}}
}

// chaosRetries are the chaos case's retries: three attempts in all, with
// short backoffs, so that a call's worst case stays near three timeouts.
var chaosRetries = retriesConfig{MaxAttempts: 3, Backoff: "50ms", MaxBackoff: "500ms"}

// chaosProviders is the chaos case: every chat call tries primary first,
// then secondary, within chaosRetries, each attempt bounded by timeout.
// The breaker is off so that every call meets primary's failures rather
// than a breaker that learned to skip it.
func chaosProviders(mode, primary, secondary string, timeout time.Duration) providersFile {
	t := timeout.String()
	retries := chaosRetries
	return providersFile{
		Retries: &retries,
		Breaker: &breakerConfig{Failures: 0},
		Providers: []providerConfig{
			{Name: "primary", Plugin: "openai", Mode: mode, BaseURL: primary, APIKeyEnv: apiKeyEnv, Timeout: t},
			{Name: "secondary", Plugin: "openai", Mode: mode, BaseURL: secondary, APIKeyEnv: apiKeyEnv, Timeout: t},
		},
		Routes: []routeConfig{{Model: benchModel, Strategy: "ordered", Targets: []routeTarget{{Provider: "primary"}, {Provider: "secondary"}}}},
	}
}

// budget is the longest a call may take when every attempt fails: each
// attempt's timeout, and the longest backoff before each retry.
func (f providersFile) budget(timeout time.Duration) time.Duration {
	attempts := 1
	var backoff, maxBackoff time.Duration
	if f.Retries != nil {
		attempts = f.Retries.MaxAttempts
		backoff, _ = time.ParseDuration(f.Retries.Backoff)
		maxBackoff, _ = time.ParseDuration(f.Retries.MaxBackoff)
	}
	total := time.Duration(attempts) * timeout
	for n := range attempts - 1 {
		total += min(maxBackoff, backoff<<n)
	}
	return total
}

// write writes the file into dir and returns its path.
func (f providersFile) write(dir string) (string, error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "providers.json")
	return path, os.WriteFile(path, b, 0o600)
}

// readsProvidersFile reports whether svc serves its providers (GET
// /api/v1/providers answers 200), which an svc that reads no providers file
// does not.
func (p *svcProcess) readsProvidersFile() bool {
	res, err := http.Get(p.url + "/api/v1/providers")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}
