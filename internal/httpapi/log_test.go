package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/httpapi"
	"github.com/svc-gateway/svc/internal/logtest"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/pkg/netguard"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// jsonLines are the log lines of buf that are JSON objects.
func jsonLines(buf *logtest.Buffer) []map[string]any {
	var out []map[string]any
	for _, l := range buf.Lines() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func TestOneLogLinePerRequest(t *testing.T) {
	var buf logtest.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true, Level: hclog.Info})
	cfg, err := config.FromEnv(func(k string) string {
		if k == "SVC_API_KEY" {
			return bootstrap
		}
		return ""
	})
	require.NoError(t, err)
	s := storetest.Open(t)
	keys := auth.NewKeys(s, nil)
	h := httpapi.New(httpapi.Deps{
		Config: cfg, Logger: logger, Store: s, Auth: auth.NewAuthenticator(cfg.APIKey, keys, nil), Keys: keys,
		Settings: settings.NewService(s, &netguard.Guard{}, nil), Audit: audit.NewLog(s, logger, nil), Web: fstest.MapFS{},
	}).Handler()

	req := httptest.NewRequest("GET", "/api/v1/settings", nil)
	req.Header.Set("Authorization", "Bearer "+bootstrap)
	h.ServeHTTP(httptest.NewRecorder(), req)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/keys", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/health", nil)) // debug level: not logged

	lines := jsonLines(&buf)
	require.Len(t, lines, 2)
	assert.Equal(t, "request", lines[0]["@message"])
	assert.Equal(t, "GET", lines[0]["method"])
	assert.Equal(t, "/api/v1/settings", lines[0]["path"])
	assert.InDelta(t, float64(http.StatusOK), lines[0]["status"], 0)
	assert.Equal(t, "default", lines[0]["tenant"])
	assert.Contains(t, lines[0], "duration_ms")
	assert.InDelta(t, float64(http.StatusUnauthorized), lines[1]["status"], 0)
	assert.Equal(t, "missing_credentials", lines[1]["code"])
	assert.NotContains(t, buf.String(), bootstrap, "credentials are never logged")
}

// A gateway request's line names its run.
func TestGatewayLogLineNamesTheRun(t *testing.T) {
	var buf logtest.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true, Level: hclog.Info})
	ts := newServerOptions(t, bootstrap, nil, &fakeProvider{}, func(o *app.Options) { o.Logger = logger })
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusOK, res.status, res.body)
	refused := ts.call(t, "POST", "/v1/chat/completions", "", triage)
	require.Equal(t, http.StatusUnauthorized, refused.status)

	var chat []map[string]any
	require.Eventually(t, func() bool {
		chat = chat[:0]
		for _, l := range jsonLines(&buf) {
			if l["@message"] == "request" && l["path"] == "/v1/chat/completions" {
				chat = append(chat, l)
			}
		}
		return len(chat) == 2
	}, 5*time.Second, 5*time.Millisecond)
	for _, l := range chat {
		if l["status"] == float64(http.StatusOK) {
			assert.Equal(t, res.header.Get("x-svc-run-id"), l["run_id"])
		} else {
			assert.NotContains(t, l, "run_id", "no run: no run id")
		}
	}
}

// A scrape is logged at debug level, like a health probe, and its answer
// is not cached.
func TestMetricsScrapeIsQuiet(t *testing.T) {
	var buf logtest.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true, Level: hclog.Info})
	ts := newServerOptions(t, bootstrap, nil, &fakeProvider{}, func(o *app.Options) { o.Logger = logger })
	res := ts.call(t, "GET", "/metrics", bootstrap, "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
	settings := ts.call(t, "GET", "/api/v1/settings", bootstrap, "")
	require.Equal(t, http.StatusOK, settings.status)
	require.Eventually(t, func() bool {
		for _, l := range jsonLines(&buf) {
			if l["@message"] == "request" && l["path"] == "/api/v1/settings" {
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "the request after the scrape is logged")
	for _, l := range jsonLines(&buf) {
		assert.False(t, l["@message"] == "request" && l["path"] == "/metrics", "a scrape logged at info: %v", l)
	}
}

// panickingProvider panics in a chat call, a bug deep in a gateway call.
type panickingProvider struct{ fakeProvider }

func (*panickingProvider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	panic("provider bug")
}

// A gateway call that panics is still a gateway answer: a 500 with the
// overhead, counted, and one request line.
func TestAPanicIsLoggedAndCounted(t *testing.T) {
	var buf logtest.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true, Level: hclog.Info})
	ts := newServerOptions(t, bootstrap, nil, &panickingProvider{}, func(o *app.Options) { o.Logger = logger })
	res := ts.call(t, "POST", "/v1/chat/completions", bootstrap, triage)
	require.Equal(t, http.StatusInternalServerError, res.status, res.body)
	overheadMS(t, res.header)

	s := ts.scrapeAfter(t, 1)
	var failed []string
	for _, m := range s.families["svc_gateway_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		failed = append(failed, labels["endpoint"]+" "+labels["status_class"])
	}
	assert.Equal(t, []string{"chat_completions 5xx"}, failed)
	var line map[string]any
	require.Eventually(t, func() bool {
		for _, l := range jsonLines(&buf) {
			if l["@message"] == "request" && l["path"] == "/v1/chat/completions" {
				line = l
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	assert.InDelta(t, float64(http.StatusInternalServerError), line["status"], 0)
	assert.Equal(t, "internal", line["code"])
}

// heldWriter holds every log line written to it, once armed, until
// released.
type heldWriter struct {
	armed   atomic.Bool
	release chan struct{}
}

func (h *heldWriter) Write(p []byte) (int, error) {
	if h.armed.Load() {
		<-h.release
	}
	return len(p), nil
}

// A gateway answer reaches the client before its request's log line is
// written: the line, the metrics and the span come after the answer, not
// on its way.
func TestTheAnswerLeavesBeforeTheLogLine(t *testing.T) {
	held := &heldWriter{release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(held.release) })
	defer released()
	logger := hclog.New(&hclog.LoggerOptions{Output: held, JSONFormat: true, Level: hclog.Info})
	ts := newServerOptions(t, bootstrap, nil, &fakeProvider{}, func(o *app.Options) { o.Logger = logger })
	held.armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(triage))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bootstrap)
	res, err := ts.Client().Do(req)
	require.NoError(t, err, "the answer is held behind the log line")
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.NoError(t, err, "the answer is held behind the log line")
	assert.Equal(t, http.StatusOK, res.StatusCode, string(body))
	assert.NotEmpty(t, res.Header.Get("x-svc-run-id"))
	released()
}
