package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/webhook"
)

// Three replicas of the real svc on one PostgreSQL database, with requests
// spread across them, as behind a load balancer: what one replica changes,
// every other honours on its next request.

// propagation bounds how long a change made through one replica may take
// to reach the next request on another. The replicas run with
// SVC_DB_REFRESH far above it, so only the change notification can meet it.
const propagation = 2 * time.Second

// cluster is three svc processes sharing one PostgreSQL database, the
// ledger's signing key and the bootstrap token, each with its own address
// and run journal.
type cluster struct {
	dsn  string
	env  []string // what every replica is started with
	reps []*proc
	dirs []string // each replica's folder (its journal is in it)
	next atomic.Uint64
}

// startReplicas starts three replicas on a fresh database, one after the
// other (the first migrates it and makes the signing key), and waits for
// each one's /health.
func startReplicas(t *testing.T, env ...string) *cluster {
	t.Helper()
	began := time.Now()
	// A copy of a database migrated once for the whole test process.
	c := &cluster{dsn: storetest.DSN(t)}
	dir := t.TempDir()
	c.env = append([]string{
		"SVC_API_KEY=" + bootstrap,
		"SVC_LEDGER_KEY_FILE=" + filepath.Join(dir, "ledger.key"),
		"SVC_DB_REFRESH=10m",
		"SVC_RATE_LIMIT=0", // the tests poll; the rate-limit test sets its own
	}, env...)
	t.Logf("PostgreSQL up in %v", time.Since(began).Round(time.Millisecond))
	for i := range 3 {
		c.dirs = append(c.dirs, filepath.Join(dir, "replica"+strconv.Itoa(i+1)))
		c.reps = append(c.reps, nil)
		c.restart(t, i, "127.0.0.1:0")
		t.Logf("replica %d up at %v", i+1, time.Since(began).Round(time.Millisecond))
	}
	t.Logf("PostgreSQL and three replicas up in %v", time.Since(began).Round(time.Millisecond))
	return c
}

// restart starts replica i on addr with its own journal folder and waits
// for its /health.
func (c *cluster) restart(t *testing.T, i int, addr string) {
	t.Helper()
	env := append(append([]string{}, c.env...), "SVC_JOURNAL_DIR="+filepath.Join(c.dirs[i], "journal"), "SVC_ADDR="+addr)
	p := startWithDB(t, c.dsn, env...)
	t.Cleanup(func() { // what went wrong inside, when the test failed
		if t.Failed() {
			for _, l := range p.stderrLines() {
				if strings.Contains(l, `"@level":"error"`) || strings.Contains(l, `"@level":"warn"`) {
					t.Logf("replica %d: %s", i+1, l)
				}
			}
		}
	})
	status, health := p.call(t, "GET", "/health", "", "")
	require.Equal(t, http.StatusOK, status, "replica %d: %v", i+1, health)
	require.Equal(t, true, health["ok"], "replica %d: %v", i+1, health)
	c.reps[i] = p
}

// pick returns the replicas in turn, as a round-robin balancer would.
func (c *cluster) pick() *proc {
	return c.reps[int(c.next.Add(1)-1)%len(c.reps)]
}

// within calls ok until it holds, for at most propagation, and returns how
// long that took; the test fails when it never does.
func within(t *testing.T, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		if time.Since(start) > propagation {
			t.Fatalf("%s: still not so %v after the change", what, propagation)
		}
		<-tick.C
	}
	took := time.Since(start)
	t.Logf("%s: took %v", what, took)
	return took
}

// status is the status of one request with a bearer token.
func (p *proc) status(t *testing.T, method, path, token string) int {
	t.Helper()
	status, _ := p.call(t, method, path, token, "")
	return status
}

// A key created through one replica works on the others, and once revoked
// through the first, is refused by the others on their next request.
func TestReplicasKeyRevokedOnOneIsRefusedByAll(t *testing.T) {
	c := startReplicas(t)
	status, created := c.reps[0].call(t, "POST", "/api/v1/keys", bootstrap, `{"name":"spread","mode":"optimize"}`)
	require.Equal(t, http.StatusCreated, status, created)
	token := created["token"].(string)
	for i, p := range c.reps {
		assert.Equal(t, http.StatusOK, p.status(t, "GET", "/api/v1/settings", token), "replica %d knows the new key", i+1)
		status, _, body := p.chat(t, token, chatBody)
		assert.Equal(t, http.StatusOK, status, "replica %d: %s", i+1, body)
	}

	status, _ = c.reps[0].call(t, "POST", "/api/v1/keys/"+created["id"].(string)+"/revoke", bootstrap, "")
	require.Equal(t, http.StatusOK, status)
	for i, p := range c.reps[1:] {
		within(t, fmt.Sprintf("replica %d refuses the revoked key", i+2), func() bool {
			return p.status(t, "GET", "/api/v1/settings", token) == http.StatusUnauthorized
		})
		status, _, body := p.chat(t, token, chatBody)
		assert.Equal(t, http.StatusUnauthorized, status, "replica %d's gateway: %s", i+2, body)
	}
}

// at is the same person (the same cookies) talking to another replica: a
// cookie names a host, not a port.
func (c *person) at(p *proc) *person { return &person{p: p, client: c.client} }

// everywhere checks that every replica takes the person's session for
// path, so that each has read it before a change.
func (c *person) everywhere(t *testing.T, reps []*proc, path string) {
	t.Helper()
	for i, p := range reps {
		require.Equal(t, http.StatusOK, c.at(p).status(t, "GET", path), "replica %d takes the session", i+1)
	}
}

func (c *person) status(t *testing.T, method, path string) int {
	t.Helper()
	status, _ := c.call(t, method, path, nil)
	return status
}

// A session opened through one replica is good on the others; ended
// through one (sign-out, a password reset, the member removed), it is
// refused by the others on their next request.
func TestReplicasSessionsAreSharedAndEndEverywhere(t *testing.T) {
	c := startReplicas(t, "SVC_ADMIN_EMAIL="+adminEmail, "SVC_ADMIN_PASSWORD="+adminPassword,
		"SVC_APP_BASE_URL=http://svc.example.test")
	admin := newPerson(t, c.reps[0])
	admin.login(t, adminEmail, adminPassword)
	for i, p := range c.reps {
		assert.Equal(t, http.StatusOK, admin.at(p).status(t, "GET", "/api/v1/auth/me"), "replica %d knows the session", i+1)
	}

	t.Run("sign-out", func(t *testing.T) {
		s := newPerson(t, c.reps[1])
		s.login(t, adminEmail, adminPassword)
		s.everywhere(t, c.reps, "/api/v1/auth/me")
		// The jar forgets the cookie on sign-out: keep it to try again.
		host, err := url.Parse("http://" + c.reps[0].addr)
		require.NoError(t, err)
		cookies := s.client.Jar.Cookies(host)
		require.NotEmpty(t, cookies)
		status, out := s.at(c.reps[0]).call(t, "POST", "/api/v1/auth/logout", nil)
		require.Equal(t, http.StatusOK, status, out)
		s.client.Jar.SetCookies(host, cookies)
		for _, i := range []int{1, 2} {
			within(t, fmt.Sprintf("replica %d refuses the ended session", i+1), func() bool {
				return s.at(c.reps[i]).status(t, "GET", "/api/v1/auth/me") == http.StatusUnauthorized
			})
		}
	})

	t.Run("member removed", func(t *testing.T) {
		id := addMember(t, admin, "member@example.com", "Member", "member-password-1", "member")
		m := newPerson(t, c.reps[1])
		m.login(t, "member@example.com", "member-password-1")
		m.everywhere(t, c.reps, "/api/v1/orgs/active")
		status, out := admin.at(c.reps[0]).call(t, "DELETE", "/api/v1/orgs/active/members/"+id, nil)
		require.Equal(t, http.StatusOK, status, out)
		for _, i := range []int{1, 2} {
			within(t, fmt.Sprintf("replica %d refuses the removed member", i+1), func() bool {
				return m.at(c.reps[i]).status(t, "GET", "/api/v1/orgs/active") == http.StatusForbidden
			})
		}
	})

	// Last: it changes the admin's password.
	t.Run("password reset", func(t *testing.T) {
		old := newPerson(t, c.reps[2])
		old.login(t, adminEmail, adminPassword)
		old.everywhere(t, c.reps, "/api/v1/auth/me")
		status, out := newPerson(t, c.reps[1]).call(t, "POST", "/api/v1/auth/password-reset", map[string]string{"email": adminEmail})
		require.Equal(t, http.StatusOK, status, out)
		link := c.reps[1].waitEmail(t, adminEmail, "reset", "/reset-password")
		u, err := url.Parse(link)
		require.NoError(t, err)
		status, out = newPerson(t, c.reps[0]).call(t, "POST", "/api/v1/auth/password-reset/"+u.Query().Get("token"),
			map[string]string{"password": "a-new-password-2"})
		require.Equal(t, http.StatusOK, status, out)
		for _, i := range []int{1, 2} {
			within(t, fmt.Sprintf("replica %d refuses a session from before the reset", i+1), func() bool {
				return old.at(c.reps[i]).status(t, "GET", "/api/v1/auth/me") == http.StatusUnauthorized
			})
		}
		newPerson(t, c.reps[2]).login(t, adminEmail, "a-new-password-2")
	})
}

// approvalRule holds every chat call that speaks of a wire transfer.
const approvalRule = `policies:
  - id: wire-transfers
    target: chat
    when: request.messages.exists(m, m.content.lowerAscii().contains("wire transfer"))
    effect: require_approval
    reason: moving money needs a person
`

// gatewayRoute posts a chat call and returns its status, route and run id.
func gatewayRoute(t *testing.T, p *proc, token, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header.Get("x-svc-route"), res.Header.Get("x-svc-run-id")
}

// A setting changed, an approval granted and a cache emptied through one
// replica take effect on the others.
func TestReplicasChangesTakeEffectOnAll(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(approvalRule), 0o600))
	c := startReplicas(t, "SVC_POLICY_DIR="+dir)
	status, created := c.reps[0].call(t, "POST", "/api/v1/keys", bootstrap, `{"name":"optimizer","mode":"optimize"}`)
	require.Equal(t, http.StatusCreated, status, created)
	key := created["token"].(string)

	t.Run("redaction turned on", func(t *testing.T) {
		// Every replica has read the tenant's settings before the change.
		for _, p := range c.reps {
			status, _, _ := p.chat(t, key, `{"model":"gpt-4o-mini","temperature":1,"messages":[{"role":"user","content":"warm up"}]}`)
			require.Equal(t, http.StatusOK, status)
		}
		status, out := c.reps[0].call(t, "PUT", "/api/v1/settings", bootstrap, `{"key":"redaction","value":true}`)
		require.Equal(t, http.StatusOK, status, out)
		for _, i := range []int{1, 2} {
			p := c.reps[i]
			within(t, fmt.Sprintf("replica %d reads the setting back", i+1), func() bool {
				status, out := p.call(t, "GET", "/api/v1/settings", bootstrap, "")
				require.Equal(t, http.StatusOK, status)
				return settingValue(out, "redaction") == true
			})
			n := 0
			within(t, fmt.Sprintf("replica %d masks what it stores", i+1), func() bool {
				n++
				body := fmt.Sprintf(`{"model":"gpt-4o-mini","temperature":1,"messages":[{"role":"user","content":"write to jane.doe%d@example.com"}]}`, n)
				status, runID, _ := p.chat(t, key, body)
				require.Equal(t, http.StatusOK, status)
				status, run := p.call(t, "GET", "/api/v1/runs/"+runID, bootstrap, "")
				require.Equal(t, http.StatusOK, status, "run %s: %v", runID, run)
				stored, _ := json.Marshal(run["run"].(map[string]any)["request"])
				return strings.Contains(string(stored), "[email]") && !strings.Contains(string(stored), "jane.doe")
			})
		}
	})

	t.Run("approval granted", func(t *testing.T) {
		body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Make the wire transfer to ACME"}]}`
		for _, p := range c.reps { // each replica holds it first
			status, out, _ := gatewayChat(t, p, key, "", "", body)
			require.Equal(t, http.StatusForbidden, status, out)
		}
		status, out, _ := gatewayChat(t, c.reps[1], key, "", "", body)
		require.Equal(t, http.StatusForbidden, status, out)
		id, _ := out["verdict"].(map[string]any)["approvalId"].(string)
		require.NotEmpty(t, id, out)
		status, out = c.reps[0].call(t, "POST", "/api/v1/approvals/"+id+"/approve", bootstrap, `{"reason":"checked with ACME"}`)
		require.Equal(t, http.StatusOK, status, out)
		for _, i := range []int{1, 2} {
			within(t, fmt.Sprintf("replica %d lets the approved call through", i+1), func() bool {
				status, _, _ := gatewayChat(t, c.reps[i], key, "", "", body)
				return status == http.StatusOK
			})
		}
	})

	t.Run("cache invalidated", func(t *testing.T) {
		body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"What is the capital of Peru?"}]}`
		for i, p := range c.reps {
			status, _, _ := gatewayRoute(t, p, key, body)
			require.Equal(t, http.StatusOK, status)
			status, route, _ := gatewayRoute(t, p, key, body)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, "exact_cache", route, "replica %d answers a repeat from its cache", i+1)
		}
		status, out := c.reps[0].call(t, "POST", "/api/v1/cache/invalidate", bootstrap, `{"cacheType":"exact_response"}`)
		require.Equal(t, http.StatusOK, status, out)
		for _, i := range []int{1, 2} {
			// The notice reaches the replica a moment after the answer: wait
			// for its exact tier to empty (reading the stats stores nothing),
			// then the repeat must go to the provider.
			within(t, fmt.Sprintf("replica %d's exact cache is emptied", i+1), func() bool {
				status, out := c.reps[i].call(t, "GET", "/api/v1/cache/stats", bootstrap, "")
				require.Equal(t, http.StatusOK, status, out)
				for _, st := range out["stats"].([]any) {
					if st := st.(map[string]any); st["cacheType"] == "exact_response" {
						return st["entries"] == float64(0)
					}
				}
				return false
			})
			status, route, _ := gatewayRoute(t, c.reps[i], key, body)
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, "live", route, "replica %d's cache was emptied", i+1)
		}
	})
}

// settingValue finds key's value in a GET /api/v1/settings answer.
func settingValue(out map[string]any, key string) any {
	if s, ok := out["settings"].(map[string]any); ok {
		return s[key]
	}
	if list, ok := out["settings"].([]any); ok {
		for _, e := range list {
			if m, _ := e.(map[string]any); m["key"] == key {
				return m["value"]
			}
		}
	}
	return out[key]
}

// The per-caller rate limit holds on the caller's total across the
// replicas, not on each: a burst spread over three is admitted as one
// replica would admit it, within 10%.
func TestReplicasRateLimitHoldsOnTheTotal(t *testing.T) {
	const perMinute = 600 // a burst of 60, then 10 a second
	c := startReplicas(t, "SVC_RATE_LIMIT="+strconv.Itoa(perMinute))
	status, created := c.reps[0].call(t, "POST", "/api/v1/keys", bootstrap, `{"name":"limited","mode":"observe"}`)
	require.Equal(t, http.StatusCreated, status, created)
	key := created["token"].(string)

	const sent = 240 // four times the burst, well past three replicas' worth
	var admitted, limited atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range sent / 8 {
				switch c.pick().status(t, "GET", "/api/v1/settings", key) {
				case http.StatusOK:
					admitted.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// One bucket admits its burst and what refills while the requests last.
	allowed := float64(perMinute)/10 + elapsed.Seconds()*perMinute/60
	t.Logf("%d of %d admitted in %v across three replicas; one bucket allows %.0f", admitted.Load(), sent, elapsed, allowed)
	assert.Equal(t, int64(sent), admitted.Load()+limited.Load(), "every answer is 200 or 429")
	assert.LessOrEqual(t, float64(admitted.Load()), allowed*1.1, "the limit holds on the total, not per replica")
	assert.GreaterOrEqual(t, float64(admitted.Load()), float64(perMinute)/10*0.9, "the burst is admitted")

	// Sign-in attempts from one address: 10 a minute in all, not on each.
	const tries = 30
	judged := 0 // answered 401 (a wrong password), not 429
	for range tries {
		status, _ := c.pick().call(t, "POST", "/api/v1/auth/login", "", `{"email":"nobody@example.com","password":"wrong-password-1"}`)
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, status)
		if status == http.StatusUnauthorized {
			judged++
		}
	}
	t.Logf("%d of %d sign-in attempts judged across three replicas", judged, tries)
	assert.LessOrEqual(t, judged, 11, "the sign-in bucket holds on the total")
	assert.GreaterOrEqual(t, judged, 9, "the sign-in bucket's ten are judged")
}

// A job is run once with three replicas running workers: each event
// queued once is delivered to the tenant's webhook once.
func TestReplicasRunAJobOnce(t *testing.T) {
	const secret = "whsec-test-0123456789"
	rcv := newCounter(t, secret)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(denyBigModel), 0o600))
	c := startReplicas(t, "SVC_POLICY_DIR="+dir, "SVC_WEB_ALLOW_PRIVATE="+strings.TrimPrefix(rcv.URL, "http://"))
	for key, value := range map[string]string{"webhook_url": rcv.URL + "/hook", "webhook_secret": secret} {
		body, _ := json.Marshal(map[string]string{"key": key, "value": value})
		status, out := c.reps[0].call(t, "PUT", "/api/v1/settings", bootstrap, string(body))
		require.Equal(t, http.StatusOK, status, out)
	}

	const events = 12
	var runs []string
	for range events {
		status, runID, _ := c.pick().chat(t, bootstrap, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
		require.Equal(t, http.StatusForbidden, status)
		runs = append(runs, runID)
	}
	// Wait for the queue to be done with them, then count what arrived.
	require.Eventually(t, func() bool {
		status, out := c.pick().call(t, "GET", "/api/v1/jobs", bootstrap, "")
		if status != http.StatusOK {
			return false
		}
		stats := out["stats"].(map[string]any)
		return stats["succeeded"] == float64(events) && stats["queued"] == 0.0 && stats["running"] == 0.0
	}, 30*time.Second, 20*time.Millisecond, "the deliveries succeed")
	got := rcv.runIDs()
	assert.Len(t, got, events, "each event delivered once: %v", got)
	for _, id := range runs {
		assert.Equal(t, 1, got[id], "run %s's block delivered once", id)
	}
}

// counter is a webhook endpoint that checks each delivery's signature and
// counts the policy.blocked deliveries of each run.
type counter struct {
	*httptest.Server
	mu   sync.Mutex
	runs map[string]int
}

func newCounter(t *testing.T, secret string) *counter {
	c := &counter{runs: map[string]int{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := webhook.Verify(secret, req.Header.Get(webhook.HeaderTimestamp), body, req.Header.Get(webhook.HeaderSignature),
			time.Now(), webhook.DefaultTolerance); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var e struct {
			Type string `json:"type"`
			Data struct {
				RunID string `json:"runId"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Type != "policy.blocked" {
			return
		}
		c.mu.Lock()
		c.runs[e.Data.RunID]++
		c.mu.Unlock()
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *counter) runIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.runs {
		out[k] = v
	}
	return out
}

// A replica killed with SIGKILL under load loses no acknowledged run:
// restarted on its journal, every run whose answer was sent, by any
// replica, is found, and the ledger verifies.
func TestReplicasKill9UnderLoadLosesNoAnsweredRun(t *testing.T) {
	c := startReplicas(t)
	victim := c.reps[1]
	var (
		mu       sync.Mutex
		acked    []string
		stop     atomic.Bool
		wg       sync.WaitGroup
		n        atomic.Int64
		byVictim atomic.Int64 // answered by the replica to be killed
	)
	for w := range 6 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				p := c.reps[(w+i)%3]
				body := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"load %d-%d"}]}`, w, i)
				req, _ := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+bootstrap)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil { // the killed replica
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if res.StatusCode/100 == 2 {
					mu.Lock()
					acked = append(acked, res.Header.Get("x-svc-run-id"))
					mu.Unlock()
					n.Add(1)
					if p == victim {
						byVictim.Add(1)
					}
				}
			}
		})
	}
	// Kill it once it has answered a share of the load.
	require.Eventually(t, func() bool { return n.Load() >= 60 }, 30*time.Second, 5*time.Millisecond)
	plugins := childPIDs(t, victim.cmd.Process.Pid)
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	_ = victim.waitExit(t)
	for _, pid := range plugins {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	killedAt := n.Load()
	require.Positive(t, byVictim.Load(), "the killed replica had answered calls")
	require.Eventually(t, func() bool { return n.Load() >= killedAt+30 }, 30*time.Second, 5*time.Millisecond,
		"the other replicas go on answering")
	stop.Store(true)
	wg.Wait()

	c.restart(t, 1, victim.addr)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d runs acknowledged, %d by the killed replica", len(acked), byVictim.Load())
	// Each replica stores its journal in batches: a run answered by one
	// is found on another once its batch is in.
	for i, id := range acked {
		require.NotEmpty(t, id)
		p := c.reps[i%3]
		require.Eventually(t, func() bool { return p.status(t, "GET", "/api/v1/runs/"+id, bootstrap) == http.StatusOK },
			10*time.Second, 10*time.Millisecond, "run %s acknowledged but not found on replica %d", id, i%3+1)
	}

	status, key := c.reps[0].call(t, "GET", "/api/v1/ledger/key", bootstrap, "")
	require.Equal(t, http.StatusOK, status)
	for _, p := range c.reps {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, p.waitExit(t))
	}
	code, report := verifyDB(t, "-db", c.dsn, "-public-key", key["publicKey"].(string))
	assert.Equal(t, 0, code, report)
	m := regexp.MustCompile(`runs: (\d+) match the ledger`).FindStringSubmatch(report)
	require.NotNil(t, m, report)
	matched, _ := strconv.Atoi(m[1])
	assert.GreaterOrEqual(t, matched, len(acked), "every acknowledged run is in the verified ledger")
}
