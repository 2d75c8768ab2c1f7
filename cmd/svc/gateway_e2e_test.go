package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/testbin"
)

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Summarise the plot of Hamlet in one line."}]}`

// chat posts a chat completion and returns the status, the run id and the
// body.
func (p *proc) chat(t *testing.T, token, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("x-svc-run-id"), string(b)
}

// childPIDs lists the processes whose parent is pid: svc's plugins.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func TestGatewayThroughTheMockPlugin(t *testing.T) {
	p := start(t)
	status, runID, body := p.chat(t, "", chatBody)
	require.Equal(t, http.StatusOK, status, body)
	require.NotEmpty(t, runID)
	_, again, body2 := p.chat(t, "", chatBody)
	assert.Equal(t, body, body2, "the mock provider is deterministic")
	assert.NotEqual(t, runID, again)

	status, run := p.call(t, "GET", "/api/v1/runs/"+runID, "", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "mock", run["run"].(map[string]any)["provider"])
}

func TestKilledProviderPluginIsRestartedOnTheNextRequest(t *testing.T) {
	p := start(t)
	status, _, _ := p.chat(t, "", chatBody)
	require.Equal(t, http.StatusOK, status)
	children := childPIDs(t, p.cmd.Process.Pid)
	require.Len(t, children, 1, "one plugin process: the provider")
	require.NoError(t, syscall.Kill(children[0], syscall.SIGKILL))

	// Another question: the same one would be answered from the cache.
	status, _, body := p.chat(t, "", strings.Replace(chatBody, "Hamlet", "Macbeth", 1))
	assert.Equal(t, http.StatusOK, status, body)
	after := childPIDs(t, p.cmd.Process.Pid)
	require.Len(t, after, 1)
	assert.NotEqual(t, children[0], after[0], "a new plugin process serves")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.waitExit(t))
	assert.Eventually(t, func() bool { return syscall.Kill(after[0], 0) == syscall.ESRCH },
		10*time.Second, 10*time.Millisecond, "the plugin does not outlive svc")
}

func TestMissingPluginStopsTheStart(t *testing.T) {
	empty := t.TempDir()
	cmd := execSVC(t, "SVC_PLUGIN_DIR="+empty)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), filepath.Join(empty, "svc-provider-mock"))
	assert.Contains(t, string(out), "make build")
}

// A run whose answer was sent survives kill -9: N calls, SIGKILL, restart
// on the same database, N runs with intact chains.
func TestAnsweredRunsSurviveKill9(t *testing.T) {
	db := filepath.Join(t.TempDir(), "svc.db")
	p := startWithDB(t, db)
	const n = 40
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := strings.Replace(chatBody, "Hamlet", fmt.Sprintf("Hamlet, take %d", i), 1)
			status, id, _ := p.chat(t, "", body)
			assert.Equal(t, http.StatusOK, status)
			ids[i] = id
		})
	}
	wg.Wait()
	plugins := childPIDs(t, p.cmd.Process.Pid)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	_ = p.waitExit(t)
	for _, pid := range plugins { // orphaned by the SIGKILL
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}

	p = startWithDB(t, db)
	status, list := p.call(t, "GET", "/api/v1/runs?limit=500", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.InDelta(t, n, list["total"], 0)
	for _, id := range ids {
		status, integrity := p.call(t, "GET", "/api/v1/runs/"+id+"/integrity", "", "")
		require.Equal(t, http.StatusOK, status, id)
		assert.Equal(t, true, integrity["ok"], id)
		assert.InDelta(t, 3, integrity["events"], 0, id)
	}

	// The runs stored from the journal entered the signed ledger too.
	status, key := p.call(t, "GET", "/api/v1/ledger/key", "", "")
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.waitExit(t))
	code, report := verifyDB(t, "-db", db, "-public-key", key["publicKey"].(string))
	assert.Equal(t, 0, code, report)
	assert.Contains(t, report, fmt.Sprintf("runs: %d match the ledger", n))
}

// upstream is an OpenAI-compatible server written for the test: it records
// what it receives and counts the connections it serves.
type upstream struct {
	*httptest.Server
	mu        sync.Mutex
	bodies    []map[string]any
	auth      []string
	conns     atomic.Int64
	cancelled chan struct{}
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{cancelled: make(chan struct{}, 1)}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	u.mu.Lock()
	u.bodies = append(u.bodies, body)
	u.auth = append(u.auth, r.Header.Get("Authorization"))
	u.mu.Unlock()
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"up-model","object":"model","created":1700000000,"owned_by":"upstream"}]}`)
		return
	}
	msgs, _ := body["messages"].([]any)
	last := ""
	if len(msgs) > 0 {
		last, _ = msgs[len(msgs)-1].(map[string]any)["content"].(string)
	}
	switch last {
	case "fail with 500":
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"upstream exploded","type":"server_error","code":null}}`)
		return
	case "fail with 400":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"Invalid value for 'seed'.","type":"invalid_request_error","param":"seed","code":"invalid_value"}}`)
		return
	case "hang":
		// Stream a first chunk, then wait for the client to go away.
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":{"content":"wait"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		u.cancelled <- struct{}{}
		return
	}
	if body["stream"] == true {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, word := range []string{"Hello", " from", " upstream"} {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", word)
			w.(http.Flusher).Flush()
		}
		if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] == true {
			fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`+"\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"up-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from upstream"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
}

func (u *upstream) lastBody() map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bodies[len(u.bodies)-1]
}

func TestGatewayThroughProviderOpenAI(t *testing.T) {
	up := newUpstream(t)
	const key = "sk-upstream-secret-123456"
	p := start(t, "PROVIDER_API_KEY="+key, "PROVIDER_BASE_URL="+up.URL+"/v1")

	status, health := p.call(t, "GET", "/health", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "openai", health["provider"])

	// Every request field passes through.
	full := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"top_p":0.9,` +
		`"max_tokens":50,"stop":["\n\n"],"seed":7,"user":"u-1","tool_choice":"auto","presence_penalty":0.1,` +
		`"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"logit_bias":{"50256":-100}}`
	status, runID, body := p.chat(t, "", full)
	require.Equal(t, http.StatusOK, status, body)
	assert.JSONEq(t, `{"id":"c1","object":"chat.completion","created":1,"model":"up-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from upstream"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`, body)
	var sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(full), &sent))
	got := up.lastBody()
	for k, v := range sent {
		assert.Equal(t, v, got[k], "field %s reaches the upstream", k)
	}
	assert.Equal(t, "Bearer "+key, up.auth[0])
	_, run := p.call(t, "GET", "/api/v1/runs/"+runID, "", "")
	r := run["run"].(map[string]any)
	assert.Equal(t, "openai", r["provider"])
	assert.InDelta(t, 12, r["promptTokens"], 0)
	assert.InDelta(t, (12*0.15+3*0.60)/1e6, r["costUsd"], 1e-12)

	// Streaming: chunks pass through, usage is asked for and priced, and
	// kept from a client that did not ask for it.
	res, events := streamRaw(t, p, `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, map[string]any{"include_usage": true}, up.lastBody()["stream_options"])
	require.Len(t, events, 4, "three content chunks, no usage chunk, then [DONE]")
	assert.Equal(t, "[DONE]", events[3])
	_, run = p.call(t, "GET", "/api/v1/runs/"+res.Header.Get("x-svc-run-id"), "", "")
	assert.InDelta(t, 3, run["run"].(map[string]any)["completionTokens"], 0)
	assert.Equal(t, false, run["run"].(map[string]any)["usageUnknown"])

	// Upstream errors: a 5xx is a 502, a 4xx keeps its status and words.
	status, _, body = p.chat(t, "", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"fail with 500"}]}`)
	assert.Equal(t, http.StatusBadGateway, status, body)
	assert.Contains(t, body, "upstream exploded")
	status, _, body = p.chat(t, "", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"fail with 400"}]}`)
	assert.Equal(t, http.StatusBadRequest, status, body)
	assert.Contains(t, body, `"param":"seed"`)
	assert.NotContains(t, body, key)

	status, models := p.call(t, "GET", "/v1/models", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "up-model", models["data"].([]any)[0].(map[string]any)["id"])

	// Keep-alive: many calls, few upstream connections.
	before := up.conns.Load()
	for range 20 {
		status, _, _ := p.chat(t, "", chatBody)
		require.Equal(t, http.StatusOK, status)
	}
	assert.LessOrEqual(t, up.conns.Load()-before, int64(2), "upstream connections are reused")
}

func TestClientGoingAwayCancelsTheUpstreamCall(t *testing.T) {
	up := newUpstream(t)
	p := start(t, "PROVIDER_API_KEY=sk-test-0000", "PROVIDER_BASE_URL="+up.URL+"/v1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+p.addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hang"}]}`))
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, "wait", "the first chunk arrived")
	cancel()
	_ = res.Body.Close()
	select {
	case <-up.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call was not cancelled when the client went away")
	}
}

func streamRaw(t *testing.T, p *proc, body string) (*http.Response, []string) {
	t.Helper()
	res, err := http.Post("http://"+p.addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	var events []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, line)
		}
	}
	return res, events
}

// execSVC is the svc command with the test environment, not started.
func execSVC(t *testing.T, env ...string) *exec.Cmd {
	cmd := exec.Command(testbin.SVC(t))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "SVC_ADDR=127.0.0.1:0", "SVC_DB=" + filepath.Join(t.TempDir(), "svc.db")}, env...)
	return cmd
}

// TestSecondProcessOnOneDatabaseIsRefused: two svc processes on one
// database would replay and delete each other's run journal.
func TestSecondProcessOnOneDatabaseIsRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "svc.db")
	startWithDB(t, db)
	cmd := execSVC(t, "SVC_DB="+db, "SVC_PLUGIN_DIR="+testbin.PluginDir(t))
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "another svc process is using this database")
}
