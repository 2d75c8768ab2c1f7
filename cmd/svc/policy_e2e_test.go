package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/webhook"
)

const denyBigModel = `policies:
  - id: no-big-models
    target: chat
    when: request.model == "gpt-4o"
    effect: deny
    reason: use gpt-4o-mini
`

func policyIDs(t *testing.T, p *proc) []string {
	t.Helper()
	status, out := p.call(t, "GET", "/api/v1/policies", "", "")
	require.Equal(t, http.StatusOK, status)
	var ids []string
	for _, r := range out["policies"].([]any) {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	return ids
}

// waitLog waits for a log line whose message contains text.
func (p *proc) waitLog(t *testing.T, text string) map[string]any {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-p.logs:
			require.True(t, ok, "svc exited")
			if msg, _ := line["@message"].(string); strings.Contains(msg, text) {
				return line
			}
		case <-timeout:
			t.Fatalf("no log line with %q", text)
		}
	}
}

func TestABadPolicyFileStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(`policies:
  - id: typo
    target: chat
    when: request.modle == "gpt-4o"
    effect: deny
`), 0o600))
	cmd := execSVC(t, "SVC_POLICY_DIR="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), "rules.yaml")
	assert.Contains(t, string(out), `rule "typo"`)
	assert.Contains(t, string(out), "modle")
}

func TestSIGHUPReloadsPoliciesKeepingTheLastGoodSet(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(file, []byte(denyBigModel), 0o600))
	p := start(t, "SVC_POLICY_DIR="+dir)
	assert.Equal(t, []string{"no-big-models"}, policyIDs(t, p))
	status, _, _ := p.chat(t, "", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusForbidden, status)

	require.NoError(t, os.WriteFile(file, []byte("policies:\n  - id: broken\n    target: chat\n    when: \"(\"\n    effect: deny\n"), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	line := p.waitLog(t, "policy reload refused")
	assert.Contains(t, line["error"], `rule "broken"`)
	assert.Equal(t, []string{"no-big-models"}, policyIDs(t, p), "the last good rules stay in force")

	require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(denyBigModel, "no-big-models", "renamed")), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	p.waitLog(t, "policies reloaded")
	assert.Equal(t, []string{"renamed"}, policyIDs(t, p))
}

// receiver is a webhook endpoint that checks each delivery's signature and
// fails the first one.
type receiver struct {
	*httptest.Server
	mu        sync.Mutex
	attempts  int
	delivered chan webhook.Event
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{delivered: make(chan webhook.Event, 10)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := webhook.Verify(secret, req.Header.Get(webhook.HeaderTimestamp), body, req.Header.Get(webhook.HeaderSignature),
			time.Now(), webhook.DefaultTolerance); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		r.attempts++
		first := r.attempts == 1
		r.mu.Unlock()
		if first {
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		}
		var e webhook.Event
		_ = json.Unmarshal(body, &e)
		r.delivered <- e
	}))
	t.Cleanup(r.Close)
	return r
}

func TestAPolicyBlockReachesTheWebhookSignedAfterARetry(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(denyBigModel), 0o600))
	const secret = "whsec-test-0123456789"
	rcv := newReceiver(t, secret)
	host := strings.TrimPrefix(rcv.URL, "http://")
	p := start(t, "SVC_POLICY_DIR="+dir, "SVC_WEB_ALLOW_PRIVATE="+host)
	for key, value := range map[string]string{"webhook_url": rcv.URL + "/hook", "webhook_secret": secret} {
		body, _ := json.Marshal(map[string]string{"key": key, "value": value})
		status, out := p.call(t, "PUT", "/api/v1/settings", "", string(body))
		require.Equal(t, http.StatusOK, status, out)
	}

	status, runID, _ := p.chat(t, "", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusForbidden, status)
	select {
	case e := <-rcv.delivered:
		assert.Equal(t, "policy.blocked", e.Type)
		var data map[string]any
		require.NoError(t, json.Unmarshal(e.Data, &data))
		assert.Equal(t, runID, data["runId"])
		assert.Equal(t, "deny", data["verdict"].(map[string]any)["decision"])
	case <-time.After(30 * time.Second):
		t.Fatal("the webhook was not delivered")
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	assert.Equal(t, 2, rcv.attempts, "delivered on the retry after a 500")
}
