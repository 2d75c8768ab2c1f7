package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

const budgetToken = "budget-bootstrap-token-0123456789"

// gatedProvider answers every chat call with the same usage, each once
// the test opens the gate, and counts the calls that reached it.
type gatedProvider struct {
	arrived chan struct{}
	gate    chan struct{}
}

func newGatedProvider(open bool) *gatedProvider {
	p := &gatedProvider{arrived: make(chan struct{}, 1000), gate: make(chan struct{})}
	if open {
		close(p.gate)
	}
	return p
}

func (p *gatedProvider) Chat(ctx context.Context, _ pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	p.arrived <- struct{}{}
	select {
	case <-p.gate:
	case <-ctx.Done():
		return pluginapi.ChatResponse{}, ctx.Err()
	}
	return pluginapi.ChatResponse{
		Body:  []byte(`{"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`),
		Usage: pluginapi.Usage{PromptTokens: 1000, CompletionTokens: 500, TotalTokens: 1500},
	}, nil
}

func (p *gatedProvider) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return fmt.Errorf("not streamed here")
}

func (p *gatedProvider) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

// heard is a notifier that keeps the events it is told.
type heard struct {
	mu     sync.Mutex
	events []heardEvent
}

type heardEvent struct {
	Type string
	Data map[string]any
}

func (h *heard) Notify(_ context.Context, _, eventType string, data any) {
	b, _ := json.Marshal(data)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	h.mu.Lock()
	h.events = append(h.events, heardEvent{eventType, m})
	h.mu.Unlock()
}

func (h *heard) of(eventType string) []heardEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []heardEvent
	for _, e := range h.events {
		if e.Type == eventType {
			out = append(out, e)
		}
	}
	return out
}

// budgetApp builds svc with p as its provider, on the database at dataDir
// (a new one when empty) or at dsn, whose replicas share keyFile.
func budgetApp(t *testing.T, p pluginapi.Provider, dataDir, dsn, keyFile string, n app.Notifier) *app.App {
	t.Helper()
	env := map[string]string{"SVC_API_KEY": budgetToken}
	if dsn != "" {
		env["SVC_DB"], env["SVC_JOURNAL_DIR"] = dsn, t.TempDir()
		env["SVC_LEDGER_KEY_FILE"] = keyFile
	}
	if dataDir == "" && dsn == "" {
		dataDir = t.TempDir()
	}
	a, err := app.New(context.Background(), app.Options{Config: configFor(t, env), Provider: p, Mailer: noMail{}, DataDir: dataDir, Notifier: n})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// serve sends one request to the app's handler as the bootstrap admin.
func serve(a *app.App, method, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+budgetToken)
	w := httptest.NewRecorder()
	a.Handler().ServeHTTP(w, r)
	return w
}

func putBudgets(t *testing.T, a *app.App, body string) {
	t.Helper()
	w := serve(a, http.MethodPut, "/api/v1/budgets", body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
}

// tenantSpend is the tenant's counters of the current window.
func tenantSpend(t *testing.T, a *app.App, window string) (usd float64, tokens, requests, hits int64) {
	t.Helper()
	w := serve(a, http.MethodGet, "/api/v1/spend?scope=tenant&window="+window, "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var rep struct {
		Items []struct {
			USD                    float64 `json:"usd"`
			Tokens, Requests, Hits int64
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &rep), w.Body.String())
	for _, it := range rep.Items {
		usd, tokens, requests, hits = usd+it.USD, tokens+it.Tokens, requests+it.Requests, hits+it.Hits
	}
	return
}

const budgetChat = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"How much is this?"}]}`

// budgetChatN is a call of its own: the exact cache cannot answer it from
// another's.
func budgetChatN(n int) string {
	return fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"How much is call %d?"}]}`, n)
}

// A burst of 100 concurrent calls against a hard cap of 10 requests: the
// calls in flight count, so exactly 10 reach the provider, and the 90
// others are refused at once with 429 budget_exceeded, naming the budget
// and its reset.
func TestHardBudgetHoldsAgainstABurst(t *testing.T) {
	p := newGatedProvider(false)
	a := budgetApp(t, p, "", "", "", nil)
	putBudgets(t, a, `{"budgets":[{"id":"burst","scope":"tenant","window":"day","kind":"hard","limitRequests":10}]}`)

	answers := make(chan *httptest.ResponseRecorder, 100)
	for range 100 {
		go func() { answers <- serve(a, http.MethodPost, "/v1/chat/completions", budgetChat) }()
	}
	var refused []*httptest.ResponseRecorder
	for len(refused) < 90 {
		w := <-answers
		require.Equal(t, http.StatusTooManyRequests, w.Code, "a call past the cap was not refused: %s", w.Body.String())
		refused = append(refused, w)
	}
	require.Len(t, p.arrived, 10, "the calls admitted are the cap")
	close(p.gate)
	for range 10 {
		w := <-answers
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	}

	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(refused[0].Body.Bytes(), &body), refused[0].Body.String())
	assert.Equal(t, "budget_exceeded", body.Error.Code)
	assert.Contains(t, body.Error.Message, "burst", "the message names the budget")
	assert.Contains(t, body.Error.Message, "resets at", "the message says when it resets")
	retry, err := strconv.Atoi(refused[0].Header().Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds")
	assert.True(t, retry > 0 && retry <= 24*3600, "Retry-After %d is within the day", retry)

	_, _, requests, _ := tenantSpend(t, a, "day")
	assert.Equal(t, int64(10), requests, "the refused calls cost nothing")
	w := serve(a, http.MethodPost, "/v1/chat/completions", budgetChat)
	assert.Equal(t, http.StatusTooManyRequests, w.Code, "the cap still holds once the burst is over")
}

// The counters are in the database: a restart finds them, and a hard cap
// reached before it holds after.
func TestSpendSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	a := budgetApp(t, newGatedProvider(true), dir, "", "", nil)
	for i := range 3 {
		w := serve(a, http.MethodPost, "/v1/chat/completions", budgetChatN(i))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	}
	w := serve(a, http.MethodPost, "/v1/chat/completions", budgetChatN(0))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "exact_cache", w.Header().Get("x-svc-route"), "a repeat is answered from the cache")
	usd, tokens, requests, hits := tenantSpend(t, a, "month")
	require.Equal(t, int64(3), requests)
	require.Equal(t, int64(1), hits, "a cache hit is counted apart, at no cost")
	require.Equal(t, int64(4500), tokens)
	require.InDelta(t, 3*(1000*0.15+500*0.60)/1e6, usd, 1e-12)
	putBudgets(t, a, fmt.Sprintf(`{"budgets":[{"id":"monthly","scope":"app","window":"month","limitUsd":%g}]}`, usd))
	require.NoError(t, a.Close())

	b := budgetApp(t, newGatedProvider(true), dir, "", "", nil)
	usd2, tokens2, requests2, hits2 := tenantSpend(t, b, "month")
	assert.Equal(t, requests, requests2)
	assert.Equal(t, hits, hits2)
	assert.Equal(t, tokens, tokens2)
	assert.InDelta(t, usd, usd2, 1e-12)
	// The calls named no app: each app's cap leaves them alone.
	w = serve(b, http.MethodPost, "/v1/chat/completions", budgetChatN(3))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	putBudgets(t, b, fmt.Sprintf(`{"budgets":[{"id":"monthly","scope":"tenant","window":"month","limitUsd":%g}]}`, usd))
	w = serve(b, http.MethodPost, "/v1/chat/completions", budgetChatN(4))
	assert.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
}

// A soft budget refuses nothing, and tells once per window of reaching 80%
// and then 100% of its limit.
func TestSoftBudgetTellsOncePerWindow(t *testing.T) {
	h := &heard{}
	a := budgetApp(t, newGatedProvider(true), "", "", "", h)
	putBudgets(t, a, `{"budgets":[{"id":"heads-up","scope":"tenant","window":"hour","kind":"soft","limitRequests":5}]}`)
	for i := 1; i <= 8; i++ {
		w := serve(a, http.MethodPost, "/v1/chat/completions", budgetChatN(i))
		require.Equal(t, http.StatusOK, w.Code, "call %d: a soft budget refuses nothing: %s", i, w.Body.String())
		if i == 4 {
			require.Eventually(t, func() bool { return len(h.of("budget.threshold")) == 1 }, 20*time.Second, 5*time.Millisecond,
				"80%% is told once the fourth call is recorded")
		}
	}
	require.Eventually(t, func() bool { return len(h.of("budget.threshold")) == 2 }, 20*time.Second, 5*time.Millisecond)
	events := h.of("budget.threshold")
	assert.EqualValues(t, 80, events[0].Data["percent"], "%v", events[0].Data)
	assert.EqualValues(t, 100, events[1].Data["percent"], "%v", events[1].Data)
	w := serve(a, http.MethodGet, "/api/v1/audit?action=budget.threshold", "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, 2, strings.Count(w.Body.String(), `"budget.threshold"`), w.Body.String())
	assert.Len(t, h.of("budget.threshold"), 2, "each threshold is told once per window")
}

// Replicas of one PostgreSQL database share the counters: a cap reached
// through one holds on the other.
func TestBudgetHoldsAcrossReplicas(t *testing.T) {
	dsn, keyFile := storetest.DSN(t), filepath.Join(t.TempDir(), "ledger.key")
	a := budgetApp(t, newGatedProvider(true), "", dsn, keyFile, nil)
	b := budgetApp(t, newGatedProvider(true), "", dsn, keyFile, nil)
	putBudgets(t, a, `{"budgets":[{"id":"shared","scope":"tenant","window":"day","limitRequests":3}]}`)
	for i, r := range []*app.App{a, a, b} {
		w := serve(r, http.MethodPost, "/v1/chat/completions", budgetChatN(i))
		require.Equal(t, http.StatusOK, w.Code, "call %d: %s", i, w.Body.String())
	}
	require.NoError(t, a.Recorder.Sync(context.Background()))
	require.NoError(t, b.Recorder.Sync(context.Background()))
	for i, r := range []*app.App{a, b} {
		w := serve(r, http.MethodPost, "/v1/chat/completions", budgetChatN(10+i))
		assert.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
		_, _, requests, _ := tenantSpend(t, r, "day")
		assert.Equal(t, int64(3), requests, "every replica reads every replica's spend")
	}
}
