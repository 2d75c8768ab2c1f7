package app_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/email"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Summarise the plot of Hamlet in one line."}]}`

// configFor is svc's configuration from env, listening on a free port of
// the loopback, with the plugins built for the tests.
func configFor(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string {
		switch {
		case env[k] != "":
			return env[k]
		case k == "SVC_ADDR":
			return "127.0.0.1:0"
		case k == "SVC_PLUGIN_DIR":
			return testbin.PluginDir(t)
		}
		return ""
	})
	require.NoError(t, err)
	return cfg
}

// post sends body to the app's url path and returns the status, the run id
// header and the body.
func post(t *testing.T, a *app.App, path, body string) (int, string, string) {
	t.Helper()
	res := send(a.Addr(), path, body)
	require.NoError(t, res.err)
	return res.status, res.runID, res.body
}

// answer is what send got back.
type answer struct {
	status int
	runID  string
	body   string
	err    error
}

// send posts body to path at addr; it may run outside the test's goroutine.
func send(addr, path, body string) answer {
	res, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, runID: res.Header.Get("x-svc-run-id"), body: string(b), err: err}
}

// verifyStored opens the database a closed app left in dir and checks that
// runs runs are stored, match the ledger and are covered by a signed
// checkpoint.
func verifyStored(t *testing.T, dir string, key ed25519.PublicKey, runs int) {
	t.Helper()
	ctx := context.Background()
	sn, err := store.OpenLedgerSnapshot(ctx, filepath.Join(dir, "svc.db"))
	require.NoError(t, err)
	defer sn.Close()
	r, err := ledger.VerifyLedger(ctx, sn, []ed25519.PublicKey{key}, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	assert.Equal(t, runs, r.Runs, "the recorder stored the runs before the database closed")
	assert.Zero(t, r.Uncovered, "the last checkpoint, signed after the recorder stopped, covers every entry")
	assert.Empty(t, r.UncoveredRuns)
}

// The service as cmd/svc runs it, in process: the real plugin host, a
// listener, a chat call and a management call, then Close, twice.
func TestServeAndClose(t *testing.T) {
	dir := t.TempDir()
	a, err := app.New(context.Background(), app.Options{Config: configFor(t, nil), DataDir: dir})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	key := a.Checkpoints.Key().Public
	plugins := testbin.Children(os.Getpid())
	assert.NotEmpty(t, plugins, "the provider plugin runs")

	status, runID, body := post(t, a, "/v1/chat/completions", chatBody)
	require.Equal(t, http.StatusOK, status, body)
	assert.NotEmpty(t, runID)
	status, _, body = post(t, a, "/api/v1/keys", `{"name":"ci","mode":"observe"}`)
	require.Equal(t, http.StatusCreated, status, body)
	var created struct{ Token string }
	require.NoError(t, json.Unmarshal([]byte(body), &created))
	assert.True(t, strings.HasPrefix(created.Token, "svc_"), body)

	addr := a.Addr()
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "a second Close does nothing")
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the listener is closed")
	for _, pid := range plugins {
		assert.Eventually(t, func() bool { return testbin.Ended(pid) }, 10*time.Second, 10*time.Millisecond, "plugin %d ended", pid)
	}
	verifyStored(t, dir, key, 1)
}

// heldProvider answers a chat call once the test lets it.
type heldProvider struct {
	called  chan struct{}
	release chan struct{}
}

func (p *heldProvider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	close(p.called)
	<-p.release
	return pluginapi.ChatResponse{
		Body:  []byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`),
		Usage: pluginapi.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
	}, nil
}

func (p *heldProvider) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}

func (p *heldProvider) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

type noMail struct{}

func (noMail) Send(string, email.Message) {}

// A chat call in flight when Close begins is answered, and its run stored
// and covered by the last checkpoint: the server stops before the
// recorder, the recorder before the checkpointer, all before the database.
func TestCloseFinishesTheCallsInFlight(t *testing.T) {
	dir := t.TempDir()
	provider := &heldProvider{called: make(chan struct{}), release: make(chan struct{})}
	a, err := app.New(context.Background(), app.Options{
		Config: configFor(t, nil), DataDir: dir, Provider: provider, Mailer: noMail{},
	})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	key, addr := a.Checkpoints.Key().Public, a.Addr()

	answered := make(chan answer, 1)
	go func() { answered <- send(addr, "/v1/chat/completions", chatBody) }()
	select {
	case <-provider.called:
	case res := <-answered:
		t.Fatalf("answered before the provider was called: %+v", res)
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 10*time.Second, 10*time.Millisecond, "the listener closes")
	close(provider.release)

	res := <-answered
	require.NoError(t, res.err)
	assert.Equal(t, http.StatusOK, res.status, res.body)
	assert.NotEmpty(t, res.runID)
	require.NoError(t, <-closed)
	verifyStored(t, dir, key, 1)
}

// A start that fails stops what it had started: the database is closed, so
// a new service opens the same folder.
func TestNewStopsWhatStartedOnError(t *testing.T) {
	dir := t.TempDir()
	bad := configFor(t, map[string]string{"SVC_POLICY_DIR": filepath.Join(dir, "missing")})
	_, err := app.New(context.Background(), app.Options{Config: bad, DataDir: dir})
	require.ErrorContains(t, err, "SVC_POLICY_DIR")

	a, err := app.New(context.Background(), app.Options{Config: configFor(t, nil), DataDir: dir})
	require.NoError(t, err, "the journal's lock and the database were released")
	assert.NoError(t, a.Close())
	assert.ErrorContains(t, a.Start(context.Background()), "closed", "a closed App does not start")
}

// A learning pass a previous process left queued runs on its first attempt
// once the workers start: they start after the learning loop it needs.
func TestQueuedLearningPassRunsAtStart(t *testing.T) {
	dir := t.TempDir()
	opts := app.Options{Config: configFor(t, nil), DataDir: dir, Provider: &heldProvider{}, Mailer: noMail{}} // no chat call
	before, err := app.New(context.Background(), opts)
	require.NoError(t, err)
	queued, err := before.Jobs.Enqueue(context.Background(), tenant.DefaultID, learning.JobType,
		learning.JobPayload{Trigger: learning.TriggerTimer})
	require.NoError(t, err)
	require.NoError(t, before.Close())

	a, err := app.New(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	require.NoError(t, a.Start(context.Background()))
	var j jobs.Job
	require.Eventually(t, func() bool {
		j, err = a.Jobs.Get(context.Background(), tenant.DefaultID, queued.ID)
		return err == nil && j.Status != jobs.Queued && j.Status != jobs.Running
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, jobs.Succeeded, j.Status, j.LastError)
	assert.Equal(t, 1, j.Attempts)
}

// An svc refused because another one serves the same database leaves that
// database alone on its way out: it signs no checkpoint of the other's runs.
func TestRefusedSecondSvcSignsNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	answered := &heldProvider{called: make(chan struct{}), release: make(chan struct{})}
	close(answered.release)
	opts := app.Options{Config: configFor(t, nil), DataDir: dir, Provider: answered, Mailer: noMail{}}
	a, err := app.New(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	require.NoError(t, a.Start(ctx))
	assert.ErrorContains(t, a.Start(ctx), "already started", "a second Start is refused")
	status, _, body := post(t, a, "/v1/chat/completions", chatBody)
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, a.Recorder.Sync(ctx)) // its ledger entry waits for a checkpoint

	_, err = app.New(ctx, opts)
	require.ErrorContains(t, err, "another svc process")
	_, total, err := a.Checkpoints.List(ctx, tenant.DefaultID, 10, 0)
	require.NoError(t, err)
	assert.Zero(t, total, "the refused svc signed a checkpoint in the database it was refused")
}

// A live stream of runs does not hold up Close: the server's shutdown ends
// it, where it would otherwise wait for it until SVC_SHUTDOWN_TIMEOUT and
// fail.
func TestCloseEndsTheLiveStreams(t *testing.T) {
	provider := &heldProvider{called: make(chan struct{}), release: make(chan struct{})}
	a, err := app.New(context.Background(), app.Options{
		Config: configFor(t, map[string]string{"SVC_SHUTDOWN_TIMEOUT": "20s"}), DataDir: t.TempDir(),
		Provider: provider, Mailer: noMail{},
	})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	res, err := http.Get("http://" + a.Addr() + "/api/v1/runs/stream")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	_, err = io.Copy(io.Discard, res.Body)
	assert.NoError(t, err, "the stream ends cleanly")
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for the stream")
	}
}

// Draining: once Close begins, /health answers 503 draining at once, and
// for SVC_DRAIN_DELAY the listener still accepts, so that a load balancer's
// health check sees it and sends new requests elsewhere; the call in
// flight is answered and its run stored before the database closes.
func TestCloseDrains(t *testing.T) {
	dir := t.TempDir()
	provider := &heldProvider{called: make(chan struct{}), release: make(chan struct{})}
	a, err := app.New(context.Background(), app.Options{
		Config: configFor(t, map[string]string{"SVC_DRAIN_DELAY": "3s"}), DataDir: dir, Provider: provider, Mailer: noMail{},
	})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	key, addr := a.Checkpoints.Key().Public, a.Addr()
	health := func() (int, map[string]any) {
		res, err := http.Get("http://" + addr + "/health")
		require.NoError(t, err, "the listener stays open while draining")
		defer res.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
		return res.StatusCode, body
	}
	status, body := health()
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, false, body["draining"])

	answered := make(chan answer, 1)
	go func() { answered <- send(addr, "/v1/chat/completions", chatBody) }()
	<-provider.called
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	require.Eventually(t, func() bool { status, _ := health(); return status == http.StatusServiceUnavailable },
		10*time.Second, 5*time.Millisecond, "/health answers 503 as soon as Close begins")
	_, body = health()
	assert.Equal(t, true, body["draining"])
	assert.Equal(t, false, body["ok"])
	assert.Equal(t, map[string]any{"engine": "sqlite", "ok": true}, body["database"], "the database still answers")
	close(provider.release)

	res := <-answered
	require.NoError(t, res.err)
	assert.Equal(t, http.StatusOK, res.status, res.body)
	require.NoError(t, <-closed)
	verifyStored(t, dir, key, 1)
}
