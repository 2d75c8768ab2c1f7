package providers

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/pricing"
)

// testEnv is svc's environment in the tests: one key set, one empty.
func testEnv(name string) (string, bool) {
	switch name {
	case "OPENAI_KEY":
		return "sk-env-secret", true
	case "EMPTY_KEY":
		return " ", true
	}
	return "", false
}

// testFiles are the key files the tests read.
func testFiles(name string) ([]byte, error) {
	switch name {
	case "/run/secrets/anthropic":
		return []byte("  sk-ant-file-secret\n"), nil
	case "/etc/svc/secrets/relative":
		return []byte("sk-relative"), nil
	case "/run/secrets/empty":
		return []byte("\n"), nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func parse(name, doc string) (*File, error) {
	return Parse("/etc/svc/"+name, []byte(doc), testEnv, testFiles)
}

const fullYAML = `
retries:
  max_attempts: 4
  backoff: 50ms
  max_backoff: 1s
breaker:
  failures: 3
  cooldown: 10s
providers:
  - name: openai
    plugin: openai
    base_url: https://api.openai.com/v1/
    api_key_env: OPENAI_KEY
    models: ["gpt-4o*", "gpt-4.1-mini"]
    timeout: 30s
    headers: {X-Team: search}
    prices:
      gpt-4o: {input: 2.0, output: 8.0, cached_input: 1.0}
  - name: ollama
    plugin: openai
    mode: in_process
    base_url: http://localhost:11434/v1
    models: ["llama*"]
    weight: 3
    breaker: {failures: 0}
  - name: claude
    plugin: anthropic
    api_key_file: /run/secrets/anthropic
    models: ["claude-*"]
  - name: local
    plugin: ./bin/svc-provider-custom
routes:
  - model: fast
    strategy: weighted
    targets:
      - provider: ollama
        model: llama-3.1-8b
        weight: 2
      - provider: openai
        model: gpt-4.1-mini
  - model: smart
    targets:
      - provider: claude
        model: claude-sonnet-4
      - provider: openai
        model: gpt-4o
`

func TestParseAFullFile(t *testing.T) {
	f, err := parse("providers.yaml", fullYAML)
	require.NoError(t, err)
	assert.Equal(t, "/etc/svc/providers.yaml", f.Source)
	assert.Equal(t, Retries{MaxAttempts: 4, Backoff: 50 * time.Millisecond, MaxBackoff: time.Second}, f.Retries)
	require.Len(t, f.Providers, 4)
	o := f.Providers[0]
	assert.Equal(t, "openai", o.Name)
	assert.Equal(t, ModePlugin, o.Mode, "plugin is the default mode")
	assert.Equal(t, "sk-env-secret", o.Config.APIKey)
	assert.Equal(t, "https://api.openai.com/v1", o.Config.BaseURL)
	assert.Equal(t, 30*time.Second, o.Timeout)
	assert.Equal(t, 30*time.Second, o.Config.Timeout)
	assert.Equal(t, map[string]string{"X-Team": "search"}, o.Config.Headers)
	assert.Equal(t, BreakerConfig{Failures: 3, Cooldown: 10 * time.Second}, o.Breaker, "the file's default breaker")
	assert.Equal(t, 1, o.Weight)
	cost, known := o.Prices.Cost("gpt-4o", pricing.Tokens{Prompt: 1_000_000, Completion: 1_000_000})
	assert.True(t, known)
	assert.InDelta(t, 10.0, cost, 1e-9)
	cost, _ = o.Prices.Cost("gpt-4o", pricing.Tokens{Prompt: 1_000_000, CachedPrompt: 1_000_000})
	assert.InDelta(t, 1.0, cost, 1e-9, "the instance's cached-input price")

	l := f.Providers[1]
	assert.Equal(t, ModeInProcess, l.Mode)
	assert.Empty(t, l.Config.APIKey, "no key: a local upstream")
	assert.Equal(t, 3, l.Weight)
	assert.Equal(t, DefaultTimeout, l.Timeout)
	assert.Equal(t, BreakerConfig{Failures: 0, Cooldown: 10 * time.Second}, l.Breaker, "the override")

	assert.Equal(t, "sk-ant-file-secret", f.Providers[2].Config.APIKey, "a key file's contents, trimmed")
	rel, err := parse("p.yaml", "providers:\n  - name: a\n    plugin: mock\n    api_key_file: secrets/relative\n")
	require.NoError(t, err)
	assert.Equal(t, "sk-relative", rel.Providers[0].Config.APIKey, "a relative key file is the providers file's folder's")
	assert.Equal(t, "/etc/svc/bin/svc-provider-custom", f.Providers[3].Plugin, "a relative plugin path is the file's folder's")

	require.Len(t, f.Routes, 2)
	assert.Equal(t, Route{Model: "fast", Strategy: Weighted, Targets: []Target{
		{Provider: "ollama", Model: "llama-3.1-8b", Weight: 2}, {Provider: "openai", Model: "gpt-4.1-mini", Weight: 1},
	}}, f.Routes[0], "a weighted target without a weight takes its provider's")
	assert.Equal(t, Ordered, f.Routes[1].Strategy)
}

func TestParseDefaults(t *testing.T) {
	f, err := parse("p.yaml", "providers:\n  - name: mock\n    plugin: mock\n")
	require.NoError(t, err)
	assert.Equal(t, Retries{MaxAttempts: 3, Backoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second}, f.Retries)
	assert.Equal(t, BreakerConfig{Failures: 5, Cooldown: 30 * time.Second}, f.Providers[0].Breaker)
	assert.Equal(t, 60*time.Second, f.Providers[0].Timeout)
	assert.Nil(t, f.Providers[0].Models, "every model")
	assert.Empty(t, f.Routes)
}

func TestParseJSONAsYAMLReadsIt(t *testing.T) {
	doc := `{"retries": {"max_attempts": 2, "backoff": "10ms"},
	  "providers": [{"name": "a", "plugin": "mock", "timeout": "5s", "models": ["gpt-*"]},
	                {"name": "b", "plugin": "mock"}],
	  "routes": [{"model": "fast", "targets": [{"provider": "a", "model": "gpt-4o"}, {"provider": "b"}]}]}`
	for _, name := range []string{"providers.json", "providers.conf"} {
		f, err := parse(name, doc)
		require.NoError(t, err, name)
		assert.Equal(t, 2, f.Retries.MaxAttempts)
		assert.Equal(t, 5*time.Second, f.Providers[0].Timeout)
		assert.Equal(t, []Target{{Provider: "a", Model: "gpt-4o"}, {Provider: "b"}}, f.Routes[0].Targets)
	}
	y, err := parse("p.yaml", doc) // JSON is YAML too
	require.NoError(t, err)
	j, err := parse("p.json", doc)
	require.NoError(t, err)
	assert.Equal(t, j.Providers[0].Fingerprint, y.Providers[0].Fingerprint, "the same file either way")
}

// TestParseErrors checks each refusal's words: the file, the entry and the
// field.
func TestParseErrors(t *testing.T) {
	mock := "providers:\n  - name: m\n    plugin: mock\n"
	for _, c := range []struct{ name, file, doc, want string }{
		{"no providers", "p.yaml", "routes: []\n", "p.yaml: providers: at least one provider is required"},
		{"empty", "p.yaml", "", "p.yaml: the file is empty"},
		{"two documents", "p.yaml", mock + "---\n" + mock, "p.yaml: a providers file holds one YAML document"},
		{"yaml syntax", "p.yaml", "providers: [\n", "p.yaml: not a providers file:"},
		{"json syntax", "p.json", `{"providers": [}`, "p.json: not a providers file: invalid JSON"},
		{"unknown key yaml", "p.yaml", mock + "    colour: red\n", `p.yaml: providers[0] (name "m"): unknown field "colour"`},
		{"unknown key json", "p.json", `{"providers":[{"name":"m","plugin":"mock","colour":"red"}]}`, `p.json: providers[0] (name "m"): unknown field "colour"`},
		{"unknown top key", "p.yaml", mock + "provider: x\n", `p.yaml: unknown field "provider"`},
		{"case variant", "p.json", `{"providers":[{"Name":"m","plugin":"mock"}]}`, `p.json: providers[0] (name "m"): unknown field "Name" (did you mean "name"?)`},
		{"duplicate key yaml", "p.yaml", "providers:\n  - name: m\n    name: n\n    plugin: mock\n", `p.yaml: providers[0] (name "m"): line 3: mapping key "name" already defined at line 2`},
		{"duplicate key json", "p.json", `{"providers":[{"name":"m","name":"n","plugin":"mock"}]}`, `p.json: providers[0] (name "n"): duplicate key "name"`},
		{"duplicate key json in another case", "p.json", `{"providers":[{"name":"a","plugin":"mock","Name":"b"}]}`, `p.json: providers[0] (name "a"): duplicate key "Name"`},
		{"non-string key", "p.yaml", "providers:\n  - name: m\n    plugin: mock\n    headers: {1: x}\n", "p.yaml: providers[0].headers: keys must be strings"},
		{"wrong type", "p.yaml", "providers:\n  - name: m\n    plugin: mock\n    weight: heavy\n", `p.yaml: providers[0] (name "m"): weight: must be a whole number, not a string`},
		{"fraction", "p.yaml", "providers:\n  - name: m\n    plugin: mock\n    weight: 2.5\n", `p.yaml: providers[0] (name "m"): weight: must be a whole number, not 2.5`},
		{"not an object", "p.yaml", "- a\n", `p.yaml: not a providers file: must be an object, not an array`},
		{"section type", "p.yaml", "retries: 3\n" + mock, `p.yaml: retries: must be an object, not a number`},
		{"wrong type json", "p.json", `{"providers":[{"name":"m","plugin":"mock","models":"gpt-4o"}]}`, `p.json: providers[0] (name "m"): models: must be an array, not a string`},
		{"name required", "p.yaml", "providers:\n  - plugin: mock\n", "p.yaml: providers[0]: name: is required"},
		{"name pattern", "p.yaml", "providers:\n  - name: Open AI\n    plugin: mock\n", `p.yaml: providers[0] (name "Open AI"): name: must be lower-case letters`},
		{"name repeated", "p.yaml", mock + "  - name: m\n    plugin: openai\n", `p.yaml: providers[1] (name "m"): name: already used by providers[0]`},
		{"plugin required", "p.yaml", "providers:\n  - name: m\n", `p.yaml: providers[0] (name "m"): plugin: is required`},
		{"plugin unknown", "p.yaml", "providers:\n  - name: m\n    plugin: azure\n", `p.yaml: providers[0] (name "m"): plugin: must be openai, anthropic, mock, or the path`},
		{"mode unknown", "p.yaml", mock + "    mode: thread\n", `p.yaml: providers[0] (name "m"): mode: must be plugin or in_process, not "thread"`},
		{"in_process of a path", "p.yaml", "providers:\n  - name: m\n    plugin: /opt/x\n    mode: in_process\n", `p.yaml: providers[0] (name "m"): mode: in_process runs only the first-party providers`},
		{"base_url relative", "p.yaml", mock + "    base_url: api.example.com\n", `p.yaml: providers[0] (name "m"): base_url: must be an absolute http(s) URL`},
		{"base_url scheme", "p.yaml", mock + "    base_url: ftp://example.com\n", `base_url: must be an absolute http(s) URL`},
		{"base_url credentials", "p.yaml", mock + "    base_url: https://u:sk-x@example.com\n", `p.yaml: providers[0] (name "m"): base_url: must not hold credentials`},
		{"literal key", "p.yaml", mock + "    api_key: sk-literal\n", `p.yaml: providers[0] (name "m"): api_key: a key is never written in the providers file: name the variable that holds it with api_key_env, or the file with api_key_file`},
		{"key env unset", "p.yaml", mock + "    api_key_env: NOPE_KEY\n", `p.yaml: providers[0] (name "m"): api_key_env: NOPE_KEY is not set in svc's environment`},
		{"key env empty", "p.yaml", mock + "    api_key_env: EMPTY_KEY\n", `p.yaml: providers[0] (name "m"): api_key_env: EMPTY_KEY is empty`},
		{"key both", "p.yaml", mock + "    api_key_env: OPENAI_KEY\n    api_key_file: /run/secrets/anthropic\n", `api_key_env: set api_key_env or api_key_file, not both`},
		{"key file missing", "p.yaml", mock + "    api_key_file: /run/secrets/nope\n", `p.yaml: providers[0] (name "m"): api_key_file: cannot be read: file does not exist`},
		{"key file empty", "p.yaml", mock + "    api_key_file: /run/secrets/empty\n", `p.yaml: providers[0] (name "m"): api_key_file: /run/secrets/empty is empty`},
		{"bad glob", "p.yaml", mock + "    models: [\"gpt-[\"]\n", `p.yaml: providers[0] (name "m"): models[0]: "gpt-[" is not a valid glob`},
		{"empty model", "p.yaml", mock + "    models: [\"\"]\n", `models[0]: a model name or glob is required`},
		{"weight zero", "p.yaml", mock + "    weight: 0\n", `p.yaml: providers[0] (name "m"): weight: must be between 1 and 1000000, not 0`},
		{"timeout bad", "p.yaml", mock + "    timeout: 30\n", `p.yaml: providers[0] (name "m"): timeout: must be a duration written as a string (500ms, 30s), not a number`},
		{"timeout unit", "p.yaml", mock + "    timeout: '30'\n", `p.yaml: providers[0] (name "m"): timeout: "30" is not a duration`},
		{"timeout zero", "p.yaml", mock + "    timeout: 0s\n", `timeout: must be more than 0, not 0s`},
		{"timeout negative", "p.yaml", mock + "    timeout: -1s\n", `timeout: must be more than 0, not -1s`},
		{"timeout huge", "p.yaml", mock + "    timeout: 48h\n", `timeout: must be at most 24h0m0s, not 48h`},
		{"header authorization", "p.yaml", mock + "    headers: {authorization: Bearer x}\n", `p.yaml: providers[0] (name "m"): headers: authorization is set by the plugin`},
		{"header x-api-key", "p.yaml", mock + "    headers: {X-Api-Key: x}\n", `headers: X-Api-Key is set by the plugin`},
		{"header host", "p.yaml", mock + "    headers: {Host: x}\n", `headers: Host is set by the plugin`},
		{"header name", "p.yaml", mock + "    headers: {\"a b\": x}\n", `headers: "a b" is not a header name`},
		{"header value", "p.yaml", mock + "    headers: {X-A: \"a\\nb\"}\n", `headers.X-A: must not hold a line break`},
		{"header control", "p.yaml", mock + "    headers: {X-A: \"a\\x01b\"}\n", `p.yaml: providers[0] (name "m"): headers.X-A: must not hold a line break or another control character`},
		{"header api-key", "p.yaml", mock + "    headers: {api-key: sk-x}\n", `p.yaml: providers[0] (name "m"): headers: api-key carries a credential: name the key with api_key_env or api_key_file`},
		{"header cookie", "p.yaml", mock + "    headers: {Cookie: s=1}\n", `headers: Cookie carries a credential`},
		{"header proxy-authorization", "p.yaml", mock + "    headers: {Proxy-Authorization: x}\n", `headers: Proxy-Authorization carries a credential`},
		{"header with token", "p.yaml", mock + "    headers: {X-Auth-Token: x}\n", `headers: X-Auth-Token carries a credential`},
		{"header with secret", "p.yaml", mock + "    headers: {X-Client-Secret: x}\n", `headers: X-Client-Secret carries a credential`},
		{"header with key", "p.yaml", mock + "    headers: {X-Goog-Api-Key: x}\n", `headers: X-Goog-Api-Key carries a credential`},
		{"timeout under 1ms", "p.yaml", mock + "    timeout: 500us\n", `p.yaml: providers[0] (name "m"): timeout: must be at least 1ms, not 500us`},
		{"route same target twice", "p.yaml", mock + "routes:\n  - model: fast\n    targets: [{provider: m, model: a}, {provider: m, model: a}]\n",
			`p.yaml: routes[0] (model "fast"): targets[1]: provider "m" with model "a" is already targets[0]`},
		{"route same target, model implied", "p.yaml", mock + "routes:\n  - model: gpt-4o\n    targets: [{provider: m}, {provider: m, model: gpt-4o}]\n",
			`p.yaml: routes[0] (model "gpt-4o"): targets[1]: provider "m" with model "gpt-4o" is already targets[0]`},
		{"duplicate key in a route", "p.yaml", mock + "routes:\n  - model: fast\n    targets: [{provider: m}]\n    model: slow\n", `p.yaml: routes[0] (model "fast"): line 7: mapping key "model" already defined at line 5`},
		{"price negative", "p.yaml", mock + "    prices: {gpt-4o: {input: -1, output: 2}}\n", `p.yaml: providers[0] (name "m"): prices.gpt-4o: prices must be 0 or more`},
		{"cache price negative", "p.yaml", mock + "    prices: {gpt-4o: {input: 1, output: 2, cached_input: -1}}\n", `p.yaml: providers[0] (name "m"): prices.gpt-4o: prices must be 0 or more`},
		{"price unknown key", "p.yaml", mock + "    prices: {gpt-4o: {in: 1}}\n", `p.yaml: providers[0] (name "m"): prices.gpt-4o: unknown field "in"`},
		{"breaker failures", "p.yaml", mock + "    breaker: {failures: -1}\n", `p.yaml: providers[0] (name "m"): breaker.failures: must be between 0 (off) and 1000, not -1`},
		{"breaker cooldown", "p.yaml", mock + "    breaker: {cooldown: soon}\n", `breaker.cooldown: "soon" is not a duration`},
		{"top breaker", "p.yaml", mock + "breaker: {cooldown: 0s}\n", `p.yaml: breaker: cooldown: must be more than 0, not 0s`},
		{"retries attempts", "p.yaml", mock + "retries: {max_attempts: 0}\n", `p.yaml: retries: max_attempts: must be between 1 and 20, not 0`},
		{"retries backoff", "p.yaml", mock + "retries: {backoff: 1s, max_backoff: 10ms}\n", `p.yaml: retries: max_backoff: must be at least backoff (1s), not 10ms`},
		{"route model", "p.yaml", mock + "routes:\n  - targets: [{provider: m}]\n", `p.yaml: routes[0]: model: a model name or glob is required`},
		{"route strategy", "p.yaml", mock + "routes:\n  - model: fast\n    strategy: random\n    targets: [{provider: m}]\n", `p.yaml: routes[0] (model "fast"): strategy: must be ordered or weighted, not "random"`},
		{"route targets", "p.yaml", mock + "routes:\n  - model: fast\n", `p.yaml: routes[0] (model "fast"): targets: at least one target is required`},
		{"route target provider", "p.yaml", mock + "routes:\n  - model: fast\n    targets: [{provider: azure}]\n", `p.yaml: routes[0] (model "fast"): targets[0].provider: no provider is named "azure"`},
		{"route target model", "p.yaml", "providers:\n  - name: m\n    plugin: mock\n    models: [\"gpt-*\"]\nroutes:\n  - model: fast\n    targets: [{provider: m, model: claude-3}]\n",
			`p.yaml: routes[0] (model "fast"): targets[0].model: provider "m" does not serve "claude-3" (its models: gpt-*)`},
		{"route caller's model", "p.yaml", "providers:\n  - name: m\n    plugin: mock\n    models: [\"gpt-*\"]\nroutes:\n  - model: claude-3\n    targets: [{provider: m}]\n",
			`targets[0].model: provider "m" does not serve "claude-3"`},
		{"route weight ordered", "p.yaml", mock + "routes:\n  - model: fast\n    targets: [{provider: m, weight: 2}]\n", `p.yaml: routes[0] (model "fast"): targets[0].weight: is for weighted routes; this one is ordered`},
		{"route weight zero", "p.yaml", mock + "routes:\n  - model: fast\n    strategy: weighted\n    targets: [{provider: m, weight: 0}]\n", `targets[0].weight: must be between 1 and 1000000, not 0`},
		{"route repeated", "p.yaml", mock + "routes:\n  - model: fast\n    targets: [{provider: m}]\n  - model: fast\n    targets: [{provider: m}]\n", `p.yaml: routes[1] (model "fast"): model: already routed by routes[0], which wins`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(c.file, c.doc)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "/etc/svc", "the file's folder stays private")
		})
	}
}

func TestParseListsEveryProblem(t *testing.T) {
	_, err := parse("p.yaml", `
providers:
  - name: a
    plugin: mock
    weight: 0
    timeout: soon
  - name: b
    plugin: nope
routes:
  - model: fast
    targets: [{provider: c}]
`)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	assert.Equal(t, []string{
		`p.yaml: providers[0] (name "a"): weight: must be between 1 and 1000000, not 0`,
		`p.yaml: providers[0] (name "a"): timeout: "soon" is not a duration (write it like 500ms, 30s or 2m)`,
		`p.yaml: providers[1] (name "b"): plugin: must be openai, anthropic, mock, or the path of a provider plugin binary (containing a /), not "nope"`,
		`p.yaml: routes[0] (model "fast"): targets[0].provider: no provider is named "c"`,
	}, lines)
}

// A value of the wrong type is told where it is, an item of a list by its
// index, beside the entry's other problems; a name used twice is told
// whatever else is wrong with either entry.
func TestParseListsEveryTypeProblemAndRepeatedName(t *testing.T) {
	_, err := parse("p.yaml", `
providers:
  - name: dup
    plugin: mock
    weight: -1
  - name: dup
    plugin: mock
  - name: c
    plugin: mock
    weight: heavy
    models: [gpt-4o, 5, {a: b}]
routes:
  - model: fast
    targets: [{provider: c}, {provider: 7}]
  - model: fast
    targets: [{provider: c}]
`)
	require.Error(t, err)
	assert.Equal(t, []string{
		`p.yaml: providers[0] (name "dup"): weight: must be between 1 and 1000000, not -1`,
		`p.yaml: providers[1] (name "dup"): name: already used by providers[0]`,
		`p.yaml: providers[2] (name "c"): models[1]: must be a string, not a number`,
		`p.yaml: providers[2] (name "c"): models[2]: must be a string, not an object`,
		`p.yaml: providers[2] (name "c"): weight: must be a whole number, not a string`,
		`p.yaml: routes[0] (model "fast"): targets[1].provider: must be a string, not a number`,
		`p.yaml: routes[1] (model "fast"): model: already routed by routes[0], which wins`,
	}, strings.Split(err.Error(), "\n"))

	_, err = parse("p.yaml", "providers:\n  - name: m\n    plugin: mock\n    headers: [a, b]\n    prices: [1]\n")
	require.Error(t, err)
	assert.Equal(t, []string{
		`p.yaml: providers[0] (name "m"): headers: must be an object, not an array`,
		`p.yaml: providers[0] (name "m"): prices: must be an object, not an array`,
	}, strings.Split(err.Error(), "\n"), "a list where the field takes none is one problem")

	_, err = parse("p.yaml", "providers:\n  - name: m\n    plugin: mock\n    models: [[a], gpt-4o, [b]]\n")
	require.Error(t, err)
	assert.Equal(t, []string{
		`p.yaml: providers[0] (name "m"): models[0]: must be a string, not an array`,
		`p.yaml: providers[0] (name "m"): models[2]: must be a string, not an array`,
	}, strings.Split(err.Error(), "\n"), "a list's items that are lists, each told")
}

// A key refused in one entry does not hide those of the others: each
// section and entry tells its first.
func TestParseListsTheRefusedKeyOfEveryEntry(t *testing.T) {
	_, err := parse("p.yaml", `
retries:
  max_attempt: 2
providers:
  - name: a
    plugin: mock
    colour: red
  - name: b
    plugin: mock
  - name: c
    plugin: mock
    Weight: 2
    prices: {gpt-4o: {in: 1}}
routes:
  - model: fast
    target: [{provider: a}]
`)
	require.Error(t, err)
	assert.Equal(t, []string{
		`p.yaml: retries: unknown field "max_attempt"`,
		`p.yaml: providers[0] (name "a"): unknown field "colour"`,
		`p.yaml: providers[2] (name "c"): unknown field "Weight" (did you mean "weight"?)`,
		`p.yaml: routes[0] (model "fast"): unknown field "target"`,
	}, strings.Split(err.Error(), "\n"))
}

func TestParseNeverShowsAKey(t *testing.T) {
	_, err := parse("p.yaml", "providers:\n  - name: a\n    plugin: mock\n    api_key_env: OPENAI_KEY\n    weight: 0\n")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "sk-env-secret")
	f, err := parse("p.yaml", "providers:\n  - name: a\n    plugin: mock\n    api_key_env: OPENAI_KEY\n")
	require.NoError(t, err)
	assert.NotContains(t, f.Providers[0].Fingerprint, "sk-env-secret")
}

func TestFingerprints(t *testing.T) {
	fp := func(doc string, env Env) string {
		t.Helper()
		f, err := Parse("p.yaml", []byte(doc), env, testFiles)
		require.NoError(t, err)
		return f.Providers[0].Fingerprint
	}
	base := "providers:\n  - name: a\n    plugin: openai\n    api_key_env: OPENAI_KEY\n    headers: {X-A: '1', X-B: '2'}\n"
	first := fp(base, testEnv)
	assert.Len(t, first, 64)
	assert.Equal(t, first, fp(base, testEnv), "stable")
	assert.Equal(t, first, fp("providers:\n  - plugin: openai\n    name: a\n    headers: {X-B: '2', X-A: '1'}\n    api_key_env: OPENAI_KEY\n", testEnv),
		"the order of keys does not matter")
	assert.Equal(t, first, fp(base+"routes:\n  - model: x\n    targets: [{provider: a}]\n", testEnv), "routes are not the instance's")
	rotated := func(name string) (string, bool) {
		if name == "OPENAI_KEY" {
			return "sk-rotated", true
		}
		return testEnv(name)
	}
	for what, doc := range map[string]string{
		"name":     strings.Replace(base, "name: a", "name: b", 1),
		"plugin":   strings.Replace(base, "plugin: openai", "plugin: mock", 1),
		"mode":     base + "    mode: in_process\n",
		"base_url": base + "    base_url: http://localhost:8000/v1\n",
		"models":   base + "    models: [gpt-4o]\n",
		"weight":   base + "    weight: 2\n",
		"timeout":  base + "    timeout: 5s\n",
		"headers":  strings.Replace(base, "X-B: '2'", "X-B: '3'", 1),
		"prices":   base + "    prices: {gpt-4o: {input: 1, output: 1}}\n",
		"breaker":  base + "    breaker: {failures: 1}\n",
	} {
		assert.NotEqual(t, first, fp(doc, testEnv), what)
	}
	assert.NotEqual(t, first, fp(base, rotated), "a new key is a new instance")
}

func TestParseRefusesABigFile(t *testing.T) {
	_, err := parse("p.yaml", strings.Repeat("#", maxFileSize+1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p.yaml: the file is larger than")
}

func TestPathlessKeepsTheCause(t *testing.T) {
	err := pathless(&fs.PathError{Op: "open", Path: "/secret/place", Err: fs.ErrPermission})
	assert.True(t, errors.Is(err, fs.ErrPermission))
	assert.NotContains(t, err.Error(), "/secret/place")
}

func TestParseNeverEchoesAKeyPastedAsTheVariable(t *testing.T) {
	for _, key := range []string{"sk-proj-abcdefSECRET", "SECRET value", "9SECRET"} {
		_, err := parse("p.yaml", "providers:\n  - name: a\n    plugin: openai\n    api_key_env: \""+key+"\"\n")
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), `p.yaml: providers[0] (name "a"): api_key_env: must be the name of a variable`)
		assert.NotContains(t, err.Error(), "SECRET")
	}
}

func TestParseTakesADowngradeOnOneProvider(t *testing.T) {
	f, err := parse("p.yaml", "providers:\n  - name: openai\n    plugin: openai\nroutes:\n  - model: smart\n    targets:\n      - {provider: openai, model: gpt-4o}\n      - {provider: openai, model: gpt-4o-mini}\n")
	require.NoError(t, err)
	assert.Len(t, f.Routes[0].Targets, 2)
}

func TestParseTakesAnOrdinaryHeader(t *testing.T) {
	f, err := parse("p.yaml", "providers:\n  - name: m\n    plugin: mock\n    headers: {OpenAI-Organization: org-1, X-Team: \"search\\tteam\"}\n")
	require.NoError(t, err)
	assert.Equal(t, "org-1", f.Providers[0].Config.Headers["OpenAI-Organization"])
}
