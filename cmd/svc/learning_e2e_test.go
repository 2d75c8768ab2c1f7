package main_test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/workflows/workflowstest"

	"github.com/svc-gateway/svc/internal/shareddata"
)

// send posts a chat completion as app and returns the route, the run id
// and the answer's content.
func (p *proc) send(t *testing.T, app, body string) (route, runID, content string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Svc-App", app)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(b))
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(b, &c), string(b))
	return res.Header.Get("x-svc-route"), res.Header.Get("x-svc-run-id"), c.Choices[0].Message.Content
}

// ticket is the support-triage workflow's request for a generated ticket.
func ticket(rng *rand.Rand, n int) string { return string(workflowstest.TriageRequest(rng, n)) }

func (p *proc) tickets(t *testing.T, rng *rand.Rand, from, n int) (routes map[string]int, served []string) {
	t.Helper()
	routes = map[string]int{}
	for i := range n {
		route, id, _ := p.send(t, "support-triage", ticket(rng, from+i))
		routes[route]++
		if route == "artifact" {
			served = append(served, id)
		}
	}
	return routes, served
}

// The learning loop through the real binary and the mock provider:
// traffic, a pass that synthesizes a classifier, shadow evidence, the
// gate, serving (also after a restart), savings, and the quarantine that
// negative ratings bring.
func TestLearningLoopEndToEnd(t *testing.T) {
	db := filepath.Join(t.TempDir(), "svc.db")
	p := startWithDB(t, db, "SVC_LEARNING_INTERVAL=0")
	rng := rand.New(rand.NewPCG(21, 22))
	routes, _ := p.tickets(t, rng, 0, 300)
	assert.Equal(t, map[string]int{"live": 300}, routes)

	status, rep := p.call(t, "POST", "/api/v1/learning/tick", "", "")
	require.Equal(t, http.StatusOK, status, rep)
	require.InDelta(t, 1, rep["artifactsSynthesized"], 0, "%v", rep)
	_, list := p.call(t, "GET", "/api/v1/artifacts", "", "")
	art := list["artifacts"].([]any)[0].(map[string]any)
	id := art["id"].(string)
	assert.Equal(t, "classifier", art["type"])
	assert.Equal(t, "shadow", art["state"])

	status, _ = p.call(t, "POST", "/api/v1/artifacts/"+id+"/promote", "", "")
	assert.Equal(t, http.StatusConflict, status, "no shadow evidence yet")

	routes, _ = p.tickets(t, rng, 1000, 60)
	assert.Equal(t, map[string]int{"live": 60}, routes)
	status, rep = p.call(t, "POST", "/api/v1/learning/tick", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []any{id}, rep["promotionsEligible"])
	status, promoted := p.call(t, "POST", "/api/v1/artifacts/"+id+"/promote", "", "")
	require.Equal(t, http.StatusOK, status, "%v", promoted)

	_, before := p.call(t, "GET", "/api/v1/savings", "", "")
	routes, _ = p.tickets(t, rng, 2000, 50)
	t.Logf("after promotion: %v", routes)
	assert.Greater(t, routes["artifact"], 40)
	_, after := p.call(t, "GET", "/api/v1/savings", "", "")
	assert.Greater(t, after["totalSavedUsd"].(float64), before["totalSavedUsd"].(float64), "savings grow")
	assert.Greater(t, after["artifactHitRate"].(float64), 0.0)

	// The promoted artifact serves again after a restart.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.waitExit(t))
	p = startWithDB(t, db, "SVC_LEARNING_INTERVAL=0")
	routes, served := p.tickets(t, rng, 3000, 20)
	assert.Greater(t, routes["artifact"], 15, "%v", routes)

	// Negative ratings of its answers quarantine it; traffic goes live.
	quarantined := false
	for i := 0; !quarantined && i < 300; i++ {
		if len(served) == 0 {
			_, more := p.tickets(t, rng, 4000+i, 1)
			served = append(served, more...)
			continue
		}
		runID := served[0]
		served = served[1:]
		status, fb := p.call(t, "POST", "/api/v1/runs/"+runID+"/feedback", "", `{"type":"rating","rating":-1}`)
		require.Equal(t, http.StatusCreated, status, "%v", fb)
		_, d := p.call(t, "GET", "/api/v1/artifacts/"+id, "", "")
		quarantined = d["artifact"].(map[string]any)["state"] == "quarantined"
	}
	require.True(t, quarantined, "negative ratings quarantine the artifact")
	routes, _ = p.tickets(t, rng, 5000, 10)
	assert.Equal(t, map[string]int{"live": 10}, routes)
}

const spamPrompt = "Classify this email message as spam or ham. Reply with the label only."

func spamRequest(m shareddata.Message) (string, string) {
	user := "Subject: " + m.Subject + "\n\n" + m.Text
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "temperature": 0, "messages": []map[string]string{
		{"role": "system", "content": spamPrompt}, {"role": "user", "content": user}}})
	return string(b), user
}

// labelUpstream is an OpenAI-compatible upstream that answers each message
// with its label, flipped for a share noise of the messages (chosen by a
// hash of the message, so the same message always gets the same answer).
func labelUpstream(t *testing.T, msgs []shareddata.Message, noise float64) *httptest.Server {
	labels := map[string]string{}
	for _, m := range msgs {
		_, user := spamRequest(m)
		label := m.Label
		h := fnv.New64a()
		h.Write([]byte(m.ID))
		if float64(h.Sum64()%10000)/10000 < noise {
			label = map[string]string{"spam": "ham", "ham": "spam"}[label]
		}
		labels[user] = label
	}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		label := labels[body.Messages[len(body.Messages)-1].Content]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":400,"completion_tokens":1,"total_tokens":401}}`, label)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Real labelled mail through svc in front of an upstream that knows the
// labels: svc learns a classifier from 2,000 messages, gathers shadow
// evidence on 400 more, is promoted, and then answers held-out messages
// it has never seen, agreeing with the upstream on those it answers.
func TestLearningSpamThroughAnUpstream(t *testing.T) {
	msgs := shareddata.SpamMessages(t)
	rng := rand.New(rand.NewPCG(31, 32))
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	up := labelUpstream(t, msgs, 0)
	p := start(t, "PROVIDER_API_KEY=sk-test-spam", "PROVIDER_BASE_URL="+up.URL+"/v1", "SVC_LEARNING_INTERVAL=0")

	for _, m := range msgs[:2000] {
		body, _ := spamRequest(m)
		p.send(t, "mail-filter", body)
	}
	status, rep := p.call(t, "POST", "/api/v1/learning/tick", "", "")
	require.Equal(t, http.StatusOK, status)
	require.InDelta(t, 1, rep["artifactsSynthesized"], 0, "%v", rep["synthesisReports"])
	_, list := p.call(t, "GET", "/api/v1/artifacts", "", "")
	id := list["artifacts"].([]any)[0].(map[string]any)["id"].(string)
	for _, m := range msgs[2000:2400] {
		body, _ := spamRequest(m)
		route, _, _ := p.send(t, "mail-filter", body)
		require.NotEqual(t, "artifact", route)
	}
	status, promoted := p.call(t, "POST", "/api/v1/artifacts/"+id+"/promote", "", "")
	require.Equal(t, http.StatusOK, status, "%v", promoted)
	a := promoted["artifact"].(map[string]any)
	t.Logf("promoted: replay %v/%v, shadow %v/%v pass/fail, lower bound %.3f", a["replayPass"], a["replayFail"],
		a["shadowPass"], a["shadowFail"], a["lowerBound"])

	held := msgs[2400:]
	answered, agreed := 0, 0
	for _, m := range held {
		body, _ := spamRequest(m)
		route, _, content := p.send(t, "mail-filter", body)
		if route != "artifact" {
			continue
		}
		answered++
		if content == m.Label {
			agreed++
		}
	}
	agreement := float64(agreed) / float64(answered)
	share := float64(answered) / float64(len(held))
	t.Logf("spam through svc: %d held-out messages, served %d (%.1f%%), agreed %d (%.2f%%); the rest went live",
		len(held), answered, 100*share, agreed, 100*agreement)
	assert.GreaterOrEqual(t, agreement, 0.95)
	assert.Greater(t, share, 0.5)
}

// An upstream that answers at random a fifth of the time is not learned:
// nothing is promoted, and the report says why.
func TestLearningNoisyUpstreamFailsTheGates(t *testing.T) {
	msgs := shareddata.SpamMessages(t)
	rng := rand.New(rand.NewPCG(41, 42))
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	up := labelUpstream(t, msgs, 0.2)
	p := start(t, "PROVIDER_API_KEY=sk-test-spam", "PROVIDER_BASE_URL="+up.URL+"/v1", "SVC_LEARNING_INTERVAL=0",
		"SVC_AUTO_PROMOTE=true")
	for _, m := range msgs[:2000] {
		body, _ := spamRequest(m)
		p.send(t, "mail-filter", body)
	}
	status, rep := p.call(t, "POST", "/api/v1/learning/tick", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.InDelta(t, 0, rep["artifactsSynthesized"], 0)
	assert.Empty(t, rep["autoPromoted"])
	reports := rep["synthesisReports"].([]any)
	require.Len(t, reports, 1)
	reason := reports[0].(map[string]any)["reason"].(string)
	t.Logf("noisy upstream: %s", reason)
	assert.Contains(t, reason, "no artifact reaches the gates")
	_, list := p.call(t, "GET", "/api/v1/artifacts", "", "")
	assert.Empty(t, list["artifacts"])
}
