package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/testbin"
)

// The providers file as an operator sees it: several provider instances,
// in process and as plugins, behind the real svc binary.

// fakeOpenAI is an OpenAI-compatible upstream. The first word of a chat
// call's last message chooses its answer: "503", "429" (Retry-After 30),
// "400", "hang" (until the caller goes away), "drop" (a stream's first
// chunk, then the connection cut); any other text is answered "Hello from
// <name>". A healthy one answers every text; Failing makes every chat call
// a 503. Its error bodies quote the key it was sent, as a careless upstream
// might.
type fakeOpenAI struct {
	*httptest.Server
	name    string
	healthy bool
	failing atomic.Bool

	mu     sync.Mutex
	asked  []string // the last message of every chat call
	models []string // the model of every chat call
	auth   []string
}

func newFakeOpenAI(t *testing.T, name string, healthy bool) *fakeOpenAI {
	f := &fakeOpenAI{name: name, healthy: healthy}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// lastText is the text of a request's last message: a string, or its text
// parts.
func lastText(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	m, _ := msgs[len(msgs)-1].(map[string]any)
	switch c := m["content"].(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, part := range c {
			if p, ok := part.(map[string]any); ok {
				s, _ := p["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	model, _ := body["model"].(string)
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"up"},`+
			`{"id":"text-embedding-3-small","object":"model","created":1,"owned_by":"up"}]}`)
		return
	case "/v1/embeddings":
		fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,0.5,0.75]}],"model":%q,"usage":{"prompt_tokens":2,"total_tokens":2}}`, model)
		return
	}
	text := lastText(body)
	f.mu.Lock()
	f.asked = append(f.asked, text)
	f.models = append(f.models, model)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	word, _, _ := strings.Cut(text, " ")
	if f.healthy {
		word = ""
	}
	if f.failing.Load() {
		word = "503"
	}
	switch word {
	case "503":
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"error":{"message":"%s is overloaded (your key: %s)","type":"server_error","code":null}}`, f.name, r.Header.Get("Authorization"))
		return
	case "429":
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"error":{"message":"Rate limit reached for %s","type":"requests","code":"rate_limit_exceeded"}}`, r.Header.Get("Authorization"))
		return
	case "400":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"Invalid value for 'seed'.","type":"invalid_request_error","param":"seed","code":"invalid_value"}}`)
		return
	case "hang":
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
		return
	}
	answer := "Hello from " + f.name
	if body["stream"] != true {
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`, model, answer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(s string) {
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", model, s)
		w.(http.Flusher).Flush()
	}
	if word == "drop" {
		chunk("partial from " + f.name)
		panic(http.ErrAbortHandler) // the connection is cut mid-stream
	}
	for _, s := range strings.SplitAfter(answer, " ") {
		chunk(s)
	}
	fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// wasAsked says whether a chat call's last message was text.
func (f *fakeOpenAI) wasAsked(text string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.asked, text)
}

// fakeAnthropic is a minimal Messages API after Anthropic's documentation:
// POST /v1/messages (an answer, or its SSE stream) and GET /v1/models. A
// last message starting "overloaded" is a 529 overloaded_error.
type fakeAnthropic struct {
	*httptest.Server
	mu       sync.Mutex
	keys     []string
	versions []string
	models   []string
}

func newFakeAnthropic(t *testing.T) *fakeAnthropic {
	f := &fakeAnthropic{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"data":[{"type":"model","id":"claude-sonnet-4-5-20250929","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"}],"has_more":false,"first_id":"claude-sonnet-4-5-20250929","last_id":"claude-sonnet-4-5-20250929"}`)
		return
	}
	if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"type":"error","error":{"type":"not_found_error","message":"Not found"}}`)
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	model, _ := body["model"].(string)
	f.mu.Lock()
	f.keys = append(f.keys, r.Header.Get("x-api-key"))
	f.versions = append(f.versions, r.Header.Get("anthropic-version"))
	f.models = append(f.models, model)
	f.mu.Unlock()
	if strings.HasPrefix(lastText(body), "overloaded") {
		w.WriteHeader(529)
		fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return
	}
	if body["stream"] != true {
		fmt.Fprintf(w, `{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":%q,`+
			`"content":[{"type":"text","text":"Hi! My name is Claude."}],"stop_reason":"end_turn","stop_sequence":null,`+
			`"usage":{"input_tokens":25,"output_tokens":15}}`, model)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range []string{
		`message_start`, fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY","type":"message","role":"assistant","content":[],"model":%q,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`, model),
		`content_block_start`, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`ping`, `{"type": "ping"}`,
		`content_block_delta`, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi! My name"}}`,
		`content_block_delta`, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" is Claude."}}`,
		`content_block_stop`, `{"type":"content_block_stop","index":0}`,
		`message_delta`, `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
		`message_stop`, `{"type":"message_stop"}`,
	} {
		if !strings.HasPrefix(e, "{") {
			fmt.Fprintf(w, "event: %s\n", e)
			continue
		}
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

// answer is one HTTP answer of svc.
type answer struct {
	status int
	runID  string
	route  string
	header http.Header
	body   string
	json   map[string]any
}

// do makes a request to svc with the given headers ("Name: value").
func (p *proc) do(t *testing.T, method, path, body string, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body) // a stream cut mid-way ends in an error: what came is kept
	a := answer{status: res.StatusCode, runID: res.Header.Get("x-svc-run-id"), route: res.Header.Get("x-svc-route"), header: res.Header, body: string(b)}
	_ = json.Unmarshal(b, &a.json)
	return a
}

// events are the data lines of a Server-Sent Events body.
func (a answer) events() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(a.body))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, line)
		}
	}
	return out
}

// chatBodyFor is a chat request for model whose last message is text.
func chatBodyFor(model, text string, extra ...string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%s}]%s}`, model, b, strings.Join(extra, ""))
}

// runOf is the run id as GET /api/v1/runs/{id} shows it, with its JSON
// text.
func runOf(t *testing.T, p *proc, id string, headers ...string) (map[string]any, string) {
	t.Helper()
	require.NotEmpty(t, id, "the answer names its run")
	a := p.do(t, "GET", "/api/v1/runs/"+id, "", headers...)
	require.Equal(t, http.StatusOK, a.status, a.body)
	return a.json["run"].(map[string]any), a.body
}

// explanation is a run's route explanation.
func explanation(run map[string]any) map[string]any {
	return run["routeExplanation"].(map[string]any)
}

// attemptsOf are a run's attempts as "provider outcome status" lines, with
// the attempts themselves.
func attemptsOf(t *testing.T, run map[string]any) ([]string, []map[string]any) {
	t.Helper()
	list, _ := explanation(run)["attempts"].([]any)
	var lines []string
	var out []map[string]any
	for _, a := range list {
		m := a.(map[string]any)
		status, _ := m["status"].(float64)
		lines = append(lines, fmt.Sprintf("%s %s %d", m["provider"], m["outcome"], int(status)))
		out = append(out, m)
	}
	return lines, out
}

// rejectedOf maps each provider the run did not try to why.
func rejectedOf(run map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := explanation(run)["rejected"].([]any)
	for _, r := range list {
		m := r.(map[string]any)
		if name, _ := m["provider"].(string); name != "" {
			out[name], _ = m["reason"].(string)
		}
	}
	return out
}

// providerStatus is one instance as GET /api/v1/providers shows it.
func providerStatus(t *testing.T, p *proc, name string, headers ...string) (map[string]any, string) {
	t.Helper()
	a := p.do(t, "GET", "/api/v1/providers", "", headers...)
	require.Equal(t, http.StatusOK, a.status, a.body)
	for _, pr := range a.json["providers"].([]any) {
		if m := pr.(map[string]any); m["name"] == name {
			return m, a.body
		}
	}
	t.Fatalf("no provider %q in %s", name, a.body)
	return nil, ""
}

// providersFile writes the providers file and returns its path.
func providersFile(t *testing.T, text string) string {
	file := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o600))
	return file
}

// pluginChildren names the provider plugin processes svc runs.
func pluginChildren(t *testing.T, pid int) []string {
	t.Helper()
	var names []string
	for _, child := range testbin.Children(pid) {
		exe, err := os.Readlink("/proc/" + strconv.Itoa(child) + "/exe")
		if err != nil {
			continue // gone meanwhile
		}
		if base := filepath.Base(exe); strings.HasPrefix(base, "svc-provider-") {
			names = append(names, base)
		}
	}
	slices.Sort(names)
	return names
}

const (
	oaiKey       = "sk-inproc-oai-key-0123456789"
	anthropicKey = "sk-ant-fake-key-0123456789"
)

// One svc with first-party providers in process and as plugins: OpenAI,
// the mock, Anthropic; a route alias; a provider policy.
func TestRoutingInProcessAnthropicAliasAndPolicy(t *testing.T) {
	t.Parallel()
	up := newFakeOpenAI(t, "oai-upstream", true)
	claude := newFakeAnthropic(t)
	policies := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(policies, "providers.yaml"), []byte(`policies:
  - id: x-stays-off-pa
    target: provider
    when: provider.name == "pa" && request.app == "X"
    effect: deny
    reason: app X never goes to pa
  - id: z-goes-nowhere
    target: provider
    when: request.app == "Z"
    effect: deny
`), 0o600))
	file := providersFile(t, fmt.Sprintf(`retries: {max_attempts: 2, backoff: 10ms, max_backoff: 50ms}
providers:
  - {name: oai, plugin: openai, mode: in_process, base_url: "%[1]s/v1", api_key_env: OAI_KEY, models: ["gpt-4o*", "text-embedding-3-*"]}
  - {name: mk, plugin: mock, mode: in_process, models: ["mock-*"]}
  - {name: mkp, plugin: mock, models: ["plugin-mock-*"]}
  - {name: claude, plugin: anthropic, base_url: "%[2]s", api_key_env: ANTHROPIC_KEY, models: ["claude-*"]}
  - {name: claude-ip, plugin: anthropic, mode: in_process, base_url: "%[2]s", api_key_env: ANTHROPIC_KEY, models: ["claude-*"]}
  - {name: pa, plugin: mock, mode: in_process, models: ["policy-*"]}
  - {name: pb, plugin: mock, mode: in_process, models: ["policy-*"]}
routes:
  - {model: fast, targets: [{provider: oai, model: gpt-4o-mini}]}
  - {model: claude-in-process, targets: [{provider: claude-ip, model: claude-sonnet-4-5}]}
  - {model: claude-fallback, targets: [{provider: claude, model: claude-sonnet-4-5}, {provider: mk, model: mock-backup}]}
  - {model: claude-ip-fallback, targets: [{provider: claude-ip, model: claude-sonnet-4-5}, {provider: mk, model: mock-backup}]}
`, up.URL, claude.URL))
	p := start(t, "SVC_PROVIDERS_FILE="+file, "SVC_POLICY_DIR="+policies, "OAI_KEY="+oaiKey, "ANTHROPIC_KEY="+anthropicKey)

	t.Run("in process", func(t *testing.T) {
		t.Parallel()
		// Only the two plugin-mode instances are processes.
		assert.Equal(t, []string{"svc-provider-anthropic", "svc-provider-mock"}, pluginChildren(t, p.cmd.Process.Pid))

		a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("gpt-4o-mini", "in process, plain"))
		require.Equal(t, http.StatusOK, a.status, a.body)
		assert.Contains(t, a.body, "Hello from oai-upstream")
		run, _ := runOf(t, p, a.runID)
		assert.Equal(t, "oai", run["provider"])
		assert.Equal(t, "oai", explanation(run)["provider"])
		assert.Equal(t, []string{"Bearer " + oaiKey}, up.auth[:1])

		a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor("gpt-4o-mini", "in process, streamed", `,"stream":true`))
		require.Equal(t, http.StatusOK, a.status, a.body)
		ev := a.events()
		require.NotEmpty(t, ev)
		assert.Equal(t, "[DONE]", ev[len(ev)-1])
		assert.Contains(t, a.body, "oai-upstream")
		run, _ = runOf(t, p, a.runID)
		assert.Equal(t, "oai", run["provider"])
		assert.InDelta(t, 3, run["completionTokens"], 0)

		for _, stream := range []string{"", `,"stream":true`} {
			a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor("mock-chat", "the mock in process"+stream, stream))
			require.Equal(t, http.StatusOK, a.status, a.body)
			run, _ = runOf(t, p, a.runID)
			assert.Equal(t, "mk", run["provider"], stream)
		}

		a = p.do(t, "POST", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"embed me"}`)
		require.Equal(t, http.StatusOK, a.status, a.body)
		assert.Contains(t, a.body, "0.75")
		a = p.do(t, "POST", "/v1/embeddings", `{"model":"mock-embedding","input":"embed me"}`)
		require.Equal(t, http.StatusOK, a.status, a.body)
		assert.Contains(t, a.body, `"embedding"`)

		a = p.do(t, "GET", "/v1/models", "")
		require.Equal(t, http.StatusOK, a.status, a.body)
		owners := map[string]string{}
		for _, m := range a.json["data"].([]any) {
			owners[m.(map[string]any)["id"].(string)], _ = m.(map[string]any)["owned_by"].(string)
		}
		assert.Equal(t, "up", owners["gpt-4o-mini"], "the in-process OpenAI instance's models: %s", a.body)
		assert.Equal(t, "up", owners["text-embedding-3-small"])
		assert.Contains(t, owners, "claude-sonnet-4-5-20250929")
		assert.Equal(t, "svc", owners["fast"], "a route's alias")

		a = p.do(t, "POST", "/v1/responses", `{"model":"gpt-4o-mini","input":"a response in process"}`)
		require.Equal(t, http.StatusOK, a.status, a.body)
		assert.Contains(t, a.body, "Hello from oai-upstream")
		assert.True(t, up.wasAsked("a response in process"))
		a = p.do(t, "POST", "/v1/responses", `{"model":"mock-chat","input":"a response from the mock"}`)
		require.Equal(t, http.StatusOK, a.status, a.body)
		assert.Equal(t, "completed", a.json["status"], a.body)

		assert.Equal(t, []string{"svc-provider-anthropic", "svc-provider-mock"}, pluginChildren(t, p.cmd.Process.Pid),
			"no call started a process for an in-process instance")
		st, text := providerStatus(t, p, "oai")
		assert.Equal(t, "in_process", st["mode"])
		assert.NotContains(t, text, oaiKey)
		assert.NotContains(t, text, anthropicKey)
	})

	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		for _, model := range []string{"claude-sonnet-4-5", "claude-in-process"} {
			wantProvider := map[string]string{"claude-sonnet-4-5": "claude", "claude-in-process": "claude-ip"}[model]
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor(model, "Hello, Claude ("+model+")"))
			require.Equal(t, http.StatusOK, a.status, a.body)
			assert.Equal(t, "chat.completion", a.json["object"], a.body)
			msg := a.json["choices"].([]any)[0].(map[string]any)
			assert.Equal(t, "Hi! My name is Claude.", msg["message"].(map[string]any)["content"])
			assert.Equal(t, "stop", msg["finish_reason"])
			assert.Equal(t, map[string]any{"prompt_tokens": 25.0, "completion_tokens": 15.0, "total_tokens": 40.0},
				pick(a.json["usage"].(map[string]any), "prompt_tokens", "completion_tokens", "total_tokens"))
			run, _ := runOf(t, p, a.runID)
			assert.Equal(t, wantProvider, run["provider"], model)
			assert.Equal(t, model, run["model"])
			assert.InDelta(t, (25*3.0+15*15.0)/1e6, run["costUsd"], 1e-12, "claude-sonnet-4-5's price")
			assert.Equal(t, false, run["priceUnknown"])

			a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor(model, "Stream, Claude ("+model+")", `,"stream":true,"stream_options":{"include_usage":true}`))
			require.Equal(t, http.StatusOK, a.status, a.body)
			ev := a.events()
			require.NotEmpty(t, ev)
			assert.Equal(t, "[DONE]", ev[len(ev)-1])
			assert.Contains(t, a.body, "Hi! My name")
			assert.Contains(t, a.body, `"prompt_tokens":25`)
			run, _ = runOf(t, p, a.runID)
			assert.Equal(t, wantProvider, run["provider"])
			assert.InDelta(t, 15, run["completionTokens"], 0)
			assert.InDelta(t, (25*3.0+15*15.0)/1e6, run["costUsd"], 1e-12)
		}
		claude.mu.Lock()
		assert.Equal(t, anthropicKey, claude.keys[0])
		assert.Equal(t, "2023-06-01", claude.versions[0])
		assert.Equal(t, "claude-sonnet-4-5", claude.models[len(claude.models)-1], "the alias is asked upstream by the target's model")
		claude.mu.Unlock()

		// Overloaded (529) falls back to the next provider, in both modes.
		for model, first := range map[string]string{"claude-fallback": "claude", "claude-ip-fallback": "claude-ip"} {
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor(model, "overloaded? ("+model+")"))
			require.Equal(t, http.StatusOK, a.status, a.body)
			run, _ := runOf(t, p, a.runID)
			lines, attempts := attemptsOf(t, run)
			assert.Equal(t, []string{first + " error 529", "mk ok 0"}, lines, model)
			assert.Equal(t, "mk", run["provider"])
			if len(attempts) > 0 {
				assert.Contains(t, attempts[0]["error"], "verloaded")
			}
			fb, _ := explanation(run)["fallback"].(map[string]any)
			assert.Equal(t, map[string]any{"used": true, "tier": "provider", "provider": "mk", "from": first},
				pick(fb, "used", "tier", "provider", "from"), model)
			assert.NotContains(t, a.body, anthropicKey)

			a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor(model, "overloaded, streamed ("+model+")", `,"stream":true`))
			require.Equal(t, http.StatusOK, a.status, a.body)
			ev := a.events()
			require.NotEmpty(t, ev, a.body)
			assert.Equal(t, "[DONE]", ev[len(ev)-1])
			run, _ = runOf(t, p, a.runID)
			lines, _ = attemptsOf(t, run)
			assert.Equal(t, []string{first + " error 529", "mk ok 0"}, lines, "a stream overloaded before its first byte falls back")
		}
	})

	t.Run("route alias", func(t *testing.T) {
		t.Parallel()
		body := chatBodyFor("fast", "an alias, deterministic", `,"temperature":0`)
		a := p.do(t, "POST", "/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, a.status, a.body)
		assert.Equal(t, "live", a.route)
		up.mu.Lock()
		i := slices.Index(up.asked, "an alias, deterministic")
		require.GreaterOrEqual(t, i, 0)
		assert.Equal(t, "gpt-4o-mini", up.models[i], "the upstream is asked for the target's model")
		up.mu.Unlock()
		run, _ := runOf(t, p, a.runID)
		assert.Equal(t, "fast", run["model"], "the run keeps the caller's model")
		assert.Equal(t, "oai", run["provider"])

		again := p.do(t, "POST", "/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, again.status, again.body)
		assert.Equal(t, "exact_cache", again.route, "answered from the exact cache")
		run, _ = runOf(t, p, again.runID)
		assert.Equal(t, "fast", run["model"])

		// The cache keys on the model as the caller named it: the same
		// question asked of gpt-4o-mini is another call.
		other := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("gpt-4o-mini", "an alias, deterministic", `,"temperature":0`))
		require.Equal(t, http.StatusOK, other.status, other.body)
		assert.Equal(t, "live", other.route)
		up.mu.Lock()
		n := 0
		for _, q := range up.asked {
			if q == "an alias, deterministic" {
				n++
			}
		}
		up.mu.Unlock()
		assert.Equal(t, 2, n, "the upstream was asked once for fast, once for gpt-4o-mini")
	})

	t.Run("provider policy", func(t *testing.T) {
		t.Parallel()
		a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("policy-model", "app X, enforced"), "X-Svc-App: X")
		require.Equal(t, http.StatusOK, a.status, a.body)
		run, _ := runOf(t, p, a.runID)
		assert.Equal(t, "pb", run["provider"])
		assert.Equal(t, "forbidden by policy rule x-stays-off-pa", rejectedOf(run)["pa"])
		lines, _ := attemptsOf(t, run)
		assert.Equal(t, []string{"pb ok 0"}, lines)
		assert.Contains(t, ruleIDs(run), "x-stays-off-pa")

		// Another app goes to pa, as routed.
		a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor("policy-model", "app Y"), "X-Svc-App: Y")
		require.Equal(t, http.StatusOK, a.status, a.body)
		run, _ = runOf(t, p, a.runID)
		assert.Equal(t, "pa", run["provider"])

		// Every candidate forbidden: nothing is called.
		a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor("policy-model", "app Z"), "X-Svc-App: Z")
		require.Equal(t, http.StatusForbidden, a.status, a.body)
		e := a.json["error"].(map[string]any)
		assert.Equal(t, "policy_denied", e["code"])
		assert.Contains(t, e["message"], "z-goes-nowhere")

		// An observe key: the rule is recorded, not enforced.
		k := p.do(t, "POST", "/api/v1/keys", `{"name":"watcher","mode":"observe"}`)
		require.Equal(t, http.StatusCreated, k.status, k.body)
		auth := "Authorization: Bearer " + k.json["token"].(string)
		a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor("policy-model", "app X, observed"), "X-Svc-App: X", auth)
		require.Equal(t, http.StatusOK, a.status, a.body)
		run, _ = runOf(t, p, a.runID, auth)
		assert.Equal(t, "pa", run["provider"], "observe mode forbids nothing")
		assert.NotContains(t, rejectedOf(run), "pa")
		assert.Contains(t, ruleIDs(run), "x-stays-off-pa", "the verdict is recorded")
		assert.Equal(t, false, explanation(run)["policy"].(map[string]any)["enforced"])
	})
}

// ruleIDs are the policy rules on a run's verdict.
func ruleIDs(run map[string]any) []string {
	var ids []string
	rules, _ := explanation(run)["policy"].(map[string]any)["rules"].([]any)
	for _, r := range rules {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	return ids
}

// pick is m with only keys.
func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

const (
	keyA = "sk-first-upstream-secret-0123456789"
	keyB = "sk-second-upstream-secret-0123456789"
	keyC = "sk-third-upstream-secret-0123456789"
)

// noKey fails when text shows an upstream's key.
func noKey(t *testing.T, text string) {
	t.Helper()
	for _, k := range []string{keyA, keyB, keyC} {
		assert.NotContains(t, text, k)
	}
}

// One svc with plugin-mode OpenAI instances against upstreams that fail
// on demand: fallbacks, streams, exhaustion and a circuit breaker.
func TestRoutingFallbacksAndBreaker(t *testing.T) {
	t.Parallel()
	upA, upB := newFakeOpenAI(t, "upstream-a", false), newFakeOpenAI(t, "upstream-b", true)
	upC, upD := newFakeOpenAI(t, "upstream-c", false), newFakeOpenAI(t, "upstream-d", false)
	file := providersFile(t, fmt.Sprintf(`retries: {max_attempts: 3, backoff: 20ms, max_backoff: 200ms}
breaker: {failures: 0}
providers:
  - {name: a, plugin: openai, base_url: "%[1]s/v1", api_key_env: KEY_A, timeout: 300ms}
  - {name: b, plugin: openai, base_url: "%[2]s/v1", api_key_env: KEY_B}
  - {name: a-limited, plugin: openai, base_url: "%[1]s/v1", api_key_env: KEY_A, timeout: 300ms}
  - {name: c, plugin: openai, base_url: "%[3]s/v1", api_key_env: KEY_C, timeout: 300ms}
  - {name: brk, plugin: openai, base_url: "%[4]s/v1", api_key_env: KEY_A, breaker: {failures: 2, cooldown: 1s}}
  - {name: l1, plugin: openai, mode: in_process, base_url: "%[1]s/v1", api_key_env: KEY_A}
  - {name: l2, plugin: openai, mode: in_process, base_url: "%[3]s/v1", api_key_env: KEY_C}
routes:
  - {model: fb, targets: [{provider: a, model: gpt-4o-mini}, {provider: b, model: gpt-4o-mini}]}
  - {model: fb-limited, targets: [{provider: a-limited, model: gpt-4o-mini}, {provider: b, model: gpt-4o-mini}]}
  - {model: down, targets: [{provider: a, model: gpt-4o-mini}, {provider: c, model: gpt-4o-mini}]}
  - {model: brk, targets: [{provider: brk, model: gpt-4o-mini}, {provider: b, model: gpt-4o-mini}]}
  - {model: all-limited, targets: [{provider: l1, model: gpt-4o-mini}, {provider: l2, model: gpt-4o-mini}]}
`, upA.URL, upB.URL, upC.URL, upD.URL))
	p := start(t, "SVC_PROVIDERS_FILE="+file, "KEY_A="+keyA, "KEY_B="+keyB, "KEY_C="+keyC)

	// fallsBack checks a call answered by b after a first attempt on first
	// that ended with outcome and status.
	fallsBack := func(t *testing.T, a answer, first, outcome string, status int) map[string]any {
		t.Helper()
		noKey(t, a.body)
		run, text := runOf(t, p, a.runID)
		noKey(t, text)
		assert.Equal(t, "b", run["provider"])
		assert.Equal(t, "fb", strings.TrimSuffix(run["model"].(string), "-limited"))
		ex := explanation(run)
		assert.Equal(t, "b", ex["provider"])
		lines, attempts := attemptsOf(t, run)
		require.Equal(t, []string{fmt.Sprintf("%s %s %d", first, outcome, status), "b ok 0"}, lines, text)
		assert.NotEmpty(t, attempts[0]["error"], "the failed attempt says why")
		assert.Greater(t, attempts[0]["latencyMs"], 0.0)
		assert.Greater(t, attempts[1]["latencyMs"], 0.0)
		assert.Nil(t, attempts[1]["error"])
		fb, _ := ex["fallback"].(map[string]any)
		assert.Equal(t, map[string]any{"used": true, "tier": "provider", "provider": "b", "from": first},
			pick(fb, "used", "tier", "provider", "from"), text)
		assert.NotEmpty(t, fb["reason"])
		return attempts[0]
	}

	t.Run("calls", func(t *testing.T) {
		t.Run("503 falls back", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("fb", "503 once"))
			require.Equal(t, http.StatusOK, a.status, a.body)
			assert.Contains(t, a.body, "Hello from upstream-b")
			first := fallsBack(t, a, "a", "error", 503)
			assert.Contains(t, first["error"], "503")
			assert.True(t, upA.wasAsked("503 once"))
			// The failed attempt is an event of the run's trace.
			b := p.do(t, "GET", "/api/v1/runs/"+a.runID, "")
			var failed []map[string]any
			for _, e := range b.json["events"].([]any) {
				if e := e.(map[string]any); e["type"] == "provider.failed" {
					failed = append(failed, e["payload"].(map[string]any))
				}
			}
			require.Len(t, failed, 1, b.body)
			assert.Equal(t, map[string]any{"provider": "a", "status": 502.0, "upstreamStatus": 503.0, "attempt": 1.0},
				pick(failed[0], "provider", "status", "upstreamStatus", "attempt"))
		})

		t.Run("every provider rate limited", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("all-limited", "429 everywhere"))
			require.Equal(t, http.StatusTooManyRequests, a.status, a.body)
			e := a.json["error"].(map[string]any)
			assert.Equal(t, "rate_limited", e["code"])
			assert.Contains(t, e["message"], "l1: 429")
			assert.Contains(t, e["message"], "l2: 429")
			assert.Equal(t, "30", a.header.Get("Retry-After"))
			noKey(t, a.body)
		})

		t.Run("the Responses API falls back", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/responses", `{"model":"fb","input":"503 through responses"}`)
			require.Equal(t, http.StatusOK, a.status, a.body)
			assert.Contains(t, a.body, "Hello from upstream-b")
			assert.True(t, upA.wasAsked("503 through responses"))
			noKey(t, a.body)
		})

		t.Run("a stream whose first upstream hangs falls back", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("fb", "hang stream", `,"stream":true`))
			require.Equal(t, http.StatusOK, a.status, a.body)
			ev := a.events()
			require.NotEmpty(t, ev, a.body)
			assert.Equal(t, "[DONE]", ev[len(ev)-1])
			assert.Contains(t, a.body, "upstream-b")
			fallsBack(t, a, "a", "timeout", 0)
		})

		t.Run("both down, streamed", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("down", "503 streamed everywhere", `,"stream":true`))
			require.Equal(t, http.StatusBadGateway, a.status, a.body)
			e := a.json["error"].(map[string]any)
			assert.Equal(t, "providers_failed", e["code"])
			assert.Contains(t, e["message"], "; c: ")
			noKey(t, a.body)
		})

		t.Run("429 with Retry-After falls back", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("fb-limited", "429 once"))
			require.Equal(t, http.StatusOK, a.status, a.body)
			assert.Contains(t, a.body, "Hello from upstream-b")
			first := fallsBack(t, a, "a-limited", "rate_limited", 429)
			assert.InDelta(t, 30000, first["retryAfterMs"], 0)

			// Limited for every call until then: the next is not tried there.
			a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor("fb-limited", "after the 429"))
			require.Equal(t, http.StatusOK, a.status, a.body)
			run, _ := runOf(t, p, a.runID)
			assert.Contains(t, rejectedOf(run)["a-limited"], "rate limited until ")
			assert.False(t, upA.wasAsked("after the 429"))
			st, text := providerStatus(t, p, "a-limited")
			assert.NotEmpty(t, st["rateLimitedUntil"])
			noKey(t, text)
		})

		t.Run("a hang past the timeout falls back", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("fb", "hang once"))
			require.Equal(t, http.StatusOK, a.status, a.body)
			assert.Contains(t, a.body, "Hello from upstream-b")
			first := fallsBack(t, a, "a", "timeout", 0)
			assert.GreaterOrEqual(t, first["latencyMs"], 300.0)
		})

		t.Run("a 400 is not retried", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("fb", "400 once"))
			require.Equal(t, http.StatusBadRequest, a.status, a.body)
			assert.Contains(t, a.body, `"param":"seed"`)
			run, _ := runOf(t, p, a.runID)
			lines, _ := attemptsOf(t, run)
			assert.Equal(t, []string{"a refused 400"}, lines)
			assert.True(t, upA.wasAsked("400 once"))
			assert.False(t, upB.wasAsked("400 once"), "the second upstream got no call")
		})

		t.Run("a stream that fails before its first byte falls back", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("fb", "503 stream", `,"stream":true`))
			require.Equal(t, http.StatusOK, a.status, a.body)
			ev := a.events()
			require.NotEmpty(t, ev, a.body)
			assert.Equal(t, "[DONE]", ev[len(ev)-1])
			assert.Contains(t, a.body, "upstream-b")
			assert.NotContains(t, a.body, "upstream-a")
			fallsBack(t, a, "a", "error", 503)
		})

		t.Run("a stream cut after its first chunk is not replayed", func(t *testing.T) {
			t.Parallel()
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("fb", "drop stream", `,"stream":true`))
			require.Equal(t, http.StatusOK, a.status, a.body)
			ev := a.events()
			require.NotEmpty(t, ev, a.body)
			assert.Contains(t, ev[0], "partial from upstream-a")
			assert.NotContains(t, ev, "[DONE]", "the stream is cut: %s", a.body)
			assert.NotContains(t, a.body, "upstream-b")
			assert.True(t, upA.wasAsked("drop stream"))
			assert.False(t, upB.wasAsked("drop stream"), "never replayed on the second upstream")
			run, _ := runOf(t, p, a.runID)
			lines, _ := attemptsOf(t, run)
			require.Len(t, lines, 1, "one attempt")
			assert.True(t, strings.HasPrefix(lines[0], "a "), lines[0])
			assert.Equal(t, "error", run["status"])
			noKey(t, a.body)
		})

		for _, how := range []string{"503", "hang"} {
			t.Run("both down: "+how, func(t *testing.T) {
				t.Parallel()
				begun := time.Now()
				a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("down", how+" everywhere"))
				took := time.Since(begun)
				require.Equal(t, http.StatusBadGateway, a.status, a.body)
				e := a.json["error"].(map[string]any)
				assert.Equal(t, "providers_failed", e["code"])
				assert.Equal(t, "upstream_error", e["type"])
				msg, _ := e["message"].(string)
				assert.True(t, strings.HasPrefix(msg, "all providers failed: a: "), msg)
				assert.Contains(t, msg, "; c: ", msg)
				noKey(t, a.body)
				// Three attempts of at most 300ms, and backoffs of at most
				// 200ms: within the budget, with room for a loaded machine.
				assert.Less(t, took, 3*time.Second)
				run, text := runOf(t, p, a.runID)
				noKey(t, text)
				lines, _ := attemptsOf(t, run)
				want := map[string]string{"503": "error 503", "hang": "timeout 0"}[how]
				assert.Equal(t, []string{"a " + want, "c " + want, "a " + want}, lines)
				assert.True(t, upC.wasAsked(how+" everywhere"))
			})
		}
	})

	t.Run("breaker", func(t *testing.T) {
		upD.failing.Store(true)
		for i := range 2 {
			a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("brk", fmt.Sprintf("breaker %d", i)))
			require.Equal(t, http.StatusOK, a.status, a.body)
			run, _ := runOf(t, p, a.runID)
			lines, _ := attemptsOf(t, run)
			assert.Equal(t, []string{"brk error 503", "b ok 0"}, lines)
		}
		st, text := providerStatus(t, p, "brk")
		noKey(t, text)
		br := st["breaker"].(map[string]any)
		require.Equal(t, "open", br["state"], text)
		assert.InDelta(t, 2, br["consecutiveFailures"], 0)
		assert.NotEmpty(t, br["openUntil"])
		assert.Contains(t, st["lastError"], "503")

		// A reload of the unchanged file keeps the instance and its breaker.
		r := p.do(t, "POST", "/api/v1/providers/reload", "")
		require.Equal(t, http.StatusOK, r.status, r.body)
		noKey(t, r.body)
		st, _ = providerStatus(t, p, "brk")
		assert.Equal(t, "open", st["breaker"].(map[string]any)["state"], "the reload kept the breaker")

		a := p.do(t, "POST", "/v1/chat/completions", chatBodyFor("brk", "breaker open"))
		require.Equal(t, http.StatusOK, a.status, a.body)
		run, _ := runOf(t, p, a.runID)
		assert.True(t, strings.HasPrefix(rejectedOf(run)["brk"], "circuit breaker open until "), rejectedOf(run)["brk"])
		lines, _ := attemptsOf(t, run)
		assert.Equal(t, []string{"b ok 0"}, lines)
		assert.False(t, upD.wasAsked("breaker open"), "skipped while open")

		upD.failing.Store(false)
		require.Eventually(t, func() bool {
			st, _ := providerStatus(t, p, "brk")
			return st["breaker"].(map[string]any)["state"] == "half_open"
		}, 10*time.Second, 20*time.Millisecond, "half open after the cooldown")
		a = p.do(t, "POST", "/v1/chat/completions", chatBodyFor("brk", "breaker probe"))
		require.Equal(t, http.StatusOK, a.status, a.body)
		run, _ = runOf(t, p, a.runID)
		assert.Equal(t, "brk", run["provider"], "the probe went through")
		assert.True(t, upD.wasAsked("breaker probe"))
		st, _ = providerStatus(t, p, "brk")
		br = st["breaker"].(map[string]any)
		assert.Equal(t, "closed", br["state"])
		assert.InDelta(t, 0, br["consecutiveFailures"], 0)
	})

	_, text := providerStatus(t, p, "a")
	noKey(t, text)
}
