package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/testbin"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-spans" { // a span process the observability phase started (spans.go)
		main()
		os.Exit(0)
	}
	os.Exit(testbin.Main(m))
}

// The in-process file declares today's one provider as the providers
// file's format has it: openai through the openai plugin, in process, the
// key from the environment.
func TestSingleProviderFile(t *testing.T) {
	path, err := singleProvider(modeInProcess, "http://127.0.0.1:9").write(t.TempDir())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(path, ".json"), "read as JSON by its extension")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.JSONEq(t, `{"providers": [{"name": "openai", "plugin": "openai", "mode": "in_process",
		"base_url": "http://127.0.0.1:9", "api_key_env": "PROVIDER_API_KEY"}]}`, string(b))
}

// The chaos file routes the bench's model to primary, then secondary,
// each attempt bounded, three attempts in all, the breaker off.
func TestChaosProvidersFile(t *testing.T) {
	f := chaosProviders(modePlugin, "http://127.0.0.1:1", "http://127.0.0.1:2", 200*time.Millisecond)
	b, err := json.Marshal(f)
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"retries": {"max_attempts": 3, "backoff": "50ms", "max_backoff": "500ms"},
		"breaker": {"failures": 0},
		"providers": [
			{"name": "primary", "plugin": "openai", "mode": "plugin", "base_url": "http://127.0.0.1:1", "api_key_env": "PROVIDER_API_KEY", "timeout": "200ms"},
			{"name": "secondary", "plugin": "openai", "mode": "plugin", "base_url": "http://127.0.0.1:2", "api_key_env": "PROVIDER_API_KEY", "timeout": "200ms"}
		],
		"routes": [{"model": "gpt-4o-mini", "strategy": "ordered", "targets": [{"provider": "primary"}, {"provider": "secondary"}]}]
	}`, string(b))
	// Three timeouts, and the backoffs before the two retries (50 ms, 100 ms).
	assert.Equal(t, 750*time.Millisecond, f.budget(200*time.Millisecond))
}

func TestTagOf(t *testing.T) {
	tag, ok := tagOf([]byte(strings.Replace(chatTemplate, "benchmarks", "benchmarks (42)", 1)))
	assert.True(t, ok)
	assert.Equal(t, int64(42), tag)
	_, ok = tagOf([]byte(chatTemplate))
	assert.False(t, ok)
}

// The flaky upstream fails three calls of every ten, one of each kind,
// counts every call against the request's tag, and a hang ends when the
// caller gives up.
func TestFlakyUpstream(t *testing.T) {
	u, err := startChaos(behaveFlaky, 0, time.Minute)
	require.NoError(t, err)
	defer u.close()
	u.retryAfter = "1"
	c := client(16)
	statuses := map[int]int{}
	var tags []int64
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		n := requestSeq.Add(1)
		tags = append(tags, n)
		req, err := http.NewRequestWithContext(ctx, "POST", u.url+"/chat/completions",
			strings.NewReader(strings.Replace(chatTemplate, "benchmarks", "benchmarks ("+itoa(n)+")", 1)))
		require.NoError(t, err)
		res, err := c.Do(req)
		if err != nil {
			statuses[0]++ // the hang, cut short by the caller
		} else {
			statuses[res.StatusCode]++
			if res.StatusCode == http.StatusTooManyRequests {
				assert.Equal(t, "1", res.Header.Get("Retry-After"))
			}
			res.Body.Close()
		}
		cancel()
	}
	assert.Equal(t, map[int]int{0: 1, 429: 1, 503: 1, 200: 7}, statuses)
	for _, tag := range tags {
		assert.Equal(t, 1, u.callsOf(tag))
	}
}

// Both down: the first hangs, the second answers 503, every call.
func TestDownUpstreams(t *testing.T) {
	u := &chaosUpstream{behaviour: behaveDown5xx}
	h := &chaosUpstream{behaviour: behaveDownHang}
	for n := range int64(10) {
		assert.Equal(t, http.StatusServiceUnavailable, u.fate(n))
		assert.Equal(t, 0, h.fate(n))
	}
}

func TestDownProblem(t *testing.T) {
	good := outcome{status: 502, body: `{"error":{"message":"all providers failed: primary: timed out after 200ms; ` +
		`secondary: 503 upstream error (2 ms); primary: timed out after 200ms","type":"upstream_error","code":"providers_failed"}}`}
	assert.Empty(t, downProblem(good))
	assert.Contains(t, downProblem(outcome{status: 200}), "not 502")
	assert.Contains(t, downProblem(outcome{status: 502, body: `{"error":{"message":"upstream error","code":"provider_error"}}`}),
		"does not name the attempts")
}

// The runs read back are first those that retried, up to half, then the
// others spread over the phase; calls without a run are never picked.
func TestPick(t *testing.T) {
	var calls []outcome
	for i := range int64(100) {
		c := outcome{tag: i, runID: "run_" + itoa(i)}
		if i == 50 {
			c.runID = ""
		}
		calls = append(calls, c)
	}
	retried := func(c outcome) bool { return c.tag%10 == 0 }
	got := pick(calls, 10, retried)
	require.Len(t, got, 10)
	for _, c := range got[:5] {
		assert.True(t, retried(c))
	}
	for _, c := range got {
		assert.NotEmpty(t, c.runID)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A process's reads and writes are read from /proc: a write made here
// counts, and a process that is not there counts none.
func TestUsage(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/self/io here: the counts are Linux's")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	self := []namedPID{{"self", os.Getpid()}}
	before := usages(self)[0]
	for range 3 {
		_, err := f.Write([]byte("x"))
		require.NoError(t, err)
	}
	made := usages(self)[0].sub(before)
	assert.GreaterOrEqual(t, made.writes, int64(3))
	assert.Equal(t, usage{}, usageOf(-1), "no such process")
	assert.Equal(t, "self 1.50 / 2.00", ioUsed(self, []usage{{reads: 3, writes: 4}}, 2))
}
