package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/fakeclock"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/store"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/internal/webhook"
	"github.com/svc-gateway/svc/pkg/netguard"
)

const secret = "whsec-test-0123456789"

// delivery is one request a receiver got.
type delivery struct {
	method, path string
	header       http.Header
	body         []byte
	verifyErr    error // webhook.Verify's verdict at the receiver
}

// receiver is a webhook endpoint on 127.0.0.1 that checks every delivery's
// signature with Verify and answers the statuses it was given in turn (200
// once they run out).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []delivery
	statuses []int
	header   http.Header // added to every answer
}

func newReceiver(t *testing.T, now func() time.Time, statuses ...int) *receiver {
	t.Helper()
	rv := &receiver{statuses: statuses, header: http.Header{}}
	rv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body}
		d.verifyErr = webhook.Verify(secret, r.Header.Get(webhook.HeaderTimestamp), body, r.Header.Get(webhook.HeaderSignature), now(), time.Minute)
		rv.mu.Lock()
		rv.got = append(rv.got, d)
		status := http.StatusOK
		if len(rv.statuses) > 0 {
			status, rv.statuses = rv.statuses[0], rv.statuses[1:]
		}
		for k, v := range rv.header {
			w.Header()[k] = v
		}
		rv.mu.Unlock()
		if d.verifyErr != nil && status < 300 {
			status = http.StatusUnauthorized
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "answer "+strconv.Itoa(status))
	}))
	t.Cleanup(rv.Close)
	return rv
}

func (rv *receiver) deliveries() []delivery {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([]delivery(nil), rv.got...)
}

// hostPort is the receiver's 127.0.0.1:port, as an allowlist entry.
func (rv *receiver) hostPort() string { return strings.TrimPrefix(rv.URL, "http://") }

// env is svc's webhook machinery over a real temp store: settings, the job
// queue driven by RunDue, the deliverer and the notifier.
type env struct {
	store    *store.Store
	settings *settings.Service
	queue    *jobs.Queue
	notifier *webhook.Notifier
	clock    *fakeclock.Clock
}

// newEnv guards deliveries with the allowlist allow (the syntax of
// SVC_WEB_ALLOW_PRIVATE; "" allows public addresses only).
func newEnv(t *testing.T, allow string) *env {
	t.Helper()
	list, err := netguard.ParseAllowlist(allow)
	require.NoError(t, err)
	guard := &netguard.Guard{Allow: list}
	s := storetest.Open(t)
	c := fakeclock.New(time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)) // retries need no waiting
	set := settings.NewService(s, guard, c.Now)
	q := jobs.New(s, jobs.Options{Now: c.Now})
	t.Cleanup(q.Close)
	d := webhook.NewDeliverer(webhook.Options{Settings: set, Guard: guard, Now: c.Now, Timeout: 5 * time.Second})
	q.Register(webhook.JobType, d.Deliver)
	return &env{store: s, settings: set, queue: q, notifier: webhook.NewNotifier(q, set, nil), clock: c}
}

func (e *env) set(t *testing.T, key string, value any) {
	t.Helper()
	raw, err := json.Marshal(value)
	require.NoError(t, err)
	_, err = e.settings.Set(context.Background(), tenant.DefaultID, key, raw)
	require.NoError(t, err)
}

func (e *env) jobs(t *testing.T) jobs.Listing {
	t.Helper()
	l, err := e.queue.List(context.Background(), tenant.DefaultID, jobs.Filter{})
	require.NoError(t, err)
	return l
}

// onlyJob returns the one job of the default tenant.
func (e *env) onlyJob(t *testing.T) jobs.Job {
	t.Helper()
	l := e.jobs(t)
	require.Len(t, l.Jobs, 1)
	return l.Jobs[0]
}

func (e *env) runDue(t *testing.T) int {
	t.Helper()
	n, err := e.queue.RunDue(context.Background())
	require.NoError(t, err)
	return n
}

func TestDeliveryIsSignedAndRetriedUntilAccepted(t *testing.T) {
	ctx := context.Background()
	var e *env
	rv := newReceiver(t, func() time.Time { return e.clock.Now() }, http.StatusInternalServerError, http.StatusOK)
	e = newEnv(t, rv.hostPort())
	e.set(t, settings.WebhookURL, rv.URL+"/hooks/svc")
	e.set(t, settings.WebhookSecret, secret)

	e.notifier.Notify(ctx, tenant.DefaultID, "policy.denied", map[string]any{"rule": "no-pii", "runId": "run_1"})
	queued := e.onlyJob(t)
	assert.Equal(t, webhook.JobType, queued.Type)
	assert.Equal(t, jobs.Queued, queued.Status)
	assert.Empty(t, rv.deliveries(), "Notify only queues")

	// First attempt: the receiver answers 500, so the job waits for a retry.
	require.Equal(t, 1, e.runDue(t))
	first := e.onlyJob(t)
	assert.Equal(t, jobs.Queued, first.Status)
	assert.Equal(t, 1, first.Attempts)
	assert.Equal(t, `receiver answered 500 Internal Server Error: "answer 500"`, first.LastError)
	assert.True(t, first.RunAt.After(e.clock.Now()), "the retry waits for the backoff")
	assert.Equal(t, 0, e.runDue(t), "not before the backoff")

	// Second attempt, once the backoff has passed: accepted.
	e.clock.Set(first.RunAt)
	require.Equal(t, 1, e.runDue(t))
	done := e.onlyJob(t)
	assert.Equal(t, jobs.Succeeded, done.Status)
	assert.Equal(t, 2, done.Attempts)

	got := rv.deliveries()
	require.Len(t, got, 2, "the receiver saw the retry")
	for i, d := range got {
		require.NoError(t, d.verifyErr, "delivery %d verifies with the tenant's secret", i)
		assert.Equal(t, http.MethodPost, d.method)
		assert.Equal(t, "/hooks/svc", d.path)
		assert.Equal(t, "application/json", d.header.Get("Content-Type"))
		assert.Equal(t, "policy.denied", d.header.Get(webhook.HeaderEvent))
		assert.Equal(t, queued.ID, d.header.Get(webhook.HeaderDelivery), "one delivery id across retries")
		assert.Equal(t, webhook.Sign(secret, mustInt(t, d.header.Get(webhook.HeaderTimestamp)), d.body), d.header.Get(webhook.HeaderSignature))
	}
	assert.Equal(t, strconv.FormatInt(queued.CreatedAt.Unix(), 10), got[0].header.Get(webhook.HeaderTimestamp))
	assert.Equal(t, strconv.FormatInt(first.RunAt.Unix(), 10), got[1].header.Get(webhook.HeaderTimestamp), "each attempt is stamped when sent")
	assert.Equal(t, string(got[0].body), string(got[1].body), "a retry sends the same body")
	assert.JSONEq(t, `{
		"id": "`+queued.ID+`",
		"type": "policy.denied",
		"tenantId": "`+tenant.DefaultID+`",
		"createdAt": "2030-06-01T12:00:00Z",
		"data": {"rule": "no-pii", "runId": "run_1"}
	}`, string(got[0].body))

	// The receiver's check refuses the same delivery with its body changed.
	tampered := []byte(strings.Replace(string(got[1].body), "no-pii", "no-pij", 1))
	err := webhook.Verify(secret, got[1].header.Get(webhook.HeaderTimestamp), tampered, got[1].header.Get(webhook.HeaderSignature), first.RunAt, time.Minute)
	require.ErrorIs(t, err, webhook.ErrInvalidSignature)
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

func TestNoWebhookURLNothingIsQueued(t *testing.T) {
	e := newEnv(t, "")
	e.notifier.Notify(context.Background(), tenant.DefaultID, "policy.denied", map[string]any{"x": 1})
	e.set(t, settings.WebhookSecret, secret) // a secret alone sends nothing
	e.notifier.Notify(context.Background(), tenant.DefaultID, "policy.denied", map[string]any{"x": 2})
	l := e.jobs(t)
	assert.Empty(t, l.Jobs)
	assert.Equal(t, jobs.Stats{}, l.Stats)

	var n *webhook.Notifier
	assert.NotPanics(t, func() { n.Notify(context.Background(), tenant.DefaultID, "policy.denied", nil) }, "a nil Notifier drops events")
}

func TestNotifyDropsBadEvents(t *testing.T) {
	e := newEnv(t, "")
	// Saved while it was public; the address is judged again at send time.
	require.NoError(t, e.store.PutTenantSetting(context.Background(), tenant.DefaultID, settings.WebhookURL, json.RawMessage(`"https://hooks.example.com/in"`), time.Now()))
	for _, tc := range []struct {
		name, typ string
		data      any
	}{
		{"type with spaces", "policy denied", 1},
		{"uppercase type", "Policy.Denied", 1},
		{"empty type", "", 1},
		{"type too long", strings.Repeat("a", 101), 1},
		{"data that does not encode", "policy.denied", func() {}},
		{"data too large", "policy.denied", strings.Repeat("x", webhook.MaxDataBytes)},
	} {
		e.notifier.Notify(context.Background(), tenant.DefaultID, tc.typ, tc.data)
		assert.Empty(t, e.jobs(t).Jobs, tc.name)
	}
	e.notifier.Notify(context.Background(), tenant.DefaultID, "approval.required_2", nil)
	assert.Len(t, e.jobs(t).Jobs, 1, "a good event is queued")
}

// Without the allowlist, a receiver on a loopback address is refused when
// the client dials, whether the URL names the address or a name that
// resolves to it (as a rebinding DNS answer would), and the job fails at
// once without retries.
func TestPrivateAddressIsRefusedAtSendTime(t *testing.T) {
	var e *env
	rv := newReceiver(t, func() time.Time { return e.clock.Now() })
	_, port, _ := strings.Cut(rv.hostPort(), ":")
	for _, target := range []string{rv.URL + "/hook", "http://localhost:" + port + "/hook"} {
		t.Run(target, func(t *testing.T) {
			e = newEnv(t, "")
			// Settings refuse this URL; write it the way one saved while
			// its name resolved to a public address would be.
			require.NoError(t, e.store.PutTenantSetting(context.Background(), tenant.DefaultID, settings.WebhookURL, mustJSON(t, target), time.Now()))

			e.notifier.Notify(context.Background(), tenant.DefaultID, "policy.denied", map[string]any{"x": 1})
			require.Equal(t, 1, e.runDue(t))
			j := e.onlyJob(t)
			assert.Equal(t, jobs.Failed, j.Status)
			assert.Equal(t, 1, j.Attempts, "no retries")
			assert.Contains(t, j.LastError, "refused at send time: address ")
			assert.Contains(t, j.LastError, "is a loopback address")
			assert.NotContains(t, j.LastError, "/hook", "the URL is not repeated")

			e.clock.Set(e.clock.Now().Add(time.Hour))
			assert.Equal(t, 0, e.runDue(t))
			assert.Empty(t, rv.deliveries(), "nothing reached the receiver")
		})
	}
}

// A stored webhook_url whose host ends in a number but is no valid IPv4
// address ("425.510.425.510", which a lax parser reads as 169.254.169.254)
// is refused before the client would send the name to DNS.
func TestHostsEndingInANumberAreRefusedAtSendTime(t *testing.T) {
	e := newEnv(t, "")
	require.NoError(t, e.store.PutTenantSetting(context.Background(), tenant.DefaultID, settings.WebhookURL, mustJSON(t, "http://425.510.425.510/hook"), time.Now()))
	e.notifier.Notify(context.Background(), tenant.DefaultID, "policy.denied", map[string]any{"x": 1})
	require.Equal(t, 1, e.runDue(t))
	j := e.onlyJob(t)
	assert.Equal(t, jobs.Failed, j.Status)
	assert.Equal(t, 1, j.Attempts, "no retries")
	assert.Contains(t, j.LastError, "ends in a number")
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

func TestNoSecretMeansNoSignatureHeader(t *testing.T) {
	var e *env
	rv := newReceiver(t, func() time.Time { return e.clock.Now() })
	e = newEnv(t, rv.hostPort())
	e.set(t, settings.WebhookURL, rv.URL)
	e.notifier.Notify(context.Background(), tenant.DefaultID, "policy.denied", nil)
	require.Equal(t, 1, e.runDue(t))
	got := rv.deliveries()
	require.Len(t, got, 1)
	_, has := got[0].header[webhook.HeaderSignature]
	assert.False(t, has)
	assert.NotEmpty(t, got[0].header.Get(webhook.HeaderTimestamp))
	assert.JSONEq(t, `null`, string(mustField(t, got[0].body, "data")))
}

func mustField(t *testing.T, body []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	return m[key]
}

// Which answers are retried and which end the job.
func TestReceiverAnswers(t *testing.T) {
	for _, tc := range []struct {
		status     int
		wantStatus string
		wantError  string
	}{
		{http.StatusNoContent, jobs.Succeeded, ""},
		{http.StatusAccepted, jobs.Succeeded, ""},
		{http.StatusBadRequest, jobs.Failed, "receiver answered 400 Bad Request"},
		{http.StatusNotFound, jobs.Failed, "receiver answered 404 Not Found"},
		{http.StatusGone, jobs.Failed, "receiver answered 410 Gone"},
		{http.StatusRequestTimeout, jobs.Queued, "receiver answered 408 Request Timeout"},
		{http.StatusTooManyRequests, jobs.Queued, "receiver answered 429 Too Many Requests"},
		{http.StatusBadGateway, jobs.Queued, "receiver answered 502 Bad Gateway"},
		{http.StatusServiceUnavailable, jobs.Queued, "receiver answered 503 Service Unavailable"},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			var e *env
			rv := newReceiver(t, func() time.Time { return e.clock.Now() }, tc.status)
			e = newEnv(t, rv.hostPort())
			e.set(t, settings.WebhookURL, rv.URL)
			e.set(t, settings.WebhookSecret, secret)
			e.notifier.Notify(context.Background(), tenant.DefaultID, "policy.denied", nil)
			require.Equal(t, 1, e.runDue(t))
			j := e.onlyJob(t)
			assert.Equal(t, tc.wantStatus, j.Status)
			assert.Equal(t, 1, j.Attempts)
			assert.Contains(t, j.LastError, tc.wantError)
		})
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	var e *env
	now := func() time.Time { return e.clock.Now() }
	target := newReceiver(t, now)
	rv := newReceiver(t, now, http.StatusTemporaryRedirect)
	rv.header.Set("Location", target.URL+"/elsewhere")
	e = newEnv(t, rv.hostPort()+","+target.hostPort())
	e.set(t, settings.WebhookURL, rv.URL)
	e.notifier.Notify(context.Background(), tenant.DefaultID, "policy.denied", nil)
	require.Equal(t, 1, e.runDue(t))

	j := e.onlyJob(t)
	assert.Equal(t, jobs.Failed, j.Status)
	assert.Equal(t, 1, j.Attempts)
	assert.Contains(t, j.LastError, "redirects are not followed")
	assert.Len(t, rv.deliveries(), 1)
	assert.Empty(t, target.deliveries(), "the redirect's target is never asked")
}

func TestClearedWebhookURLDropsQueuedDeliveries(t *testing.T) {
	var e *env
	rv := newReceiver(t, func() time.Time { return e.clock.Now() })
	e = newEnv(t, rv.hostPort())
	e.set(t, settings.WebhookURL, rv.URL)
	e.notifier.Notify(context.Background(), tenant.DefaultID, "policy.denied", nil)
	e.set(t, settings.WebhookURL, nil)
	require.Equal(t, 1, e.runDue(t))
	j := e.onlyJob(t)
	assert.Equal(t, jobs.Failed, j.Status)
	assert.Equal(t, "webhook_url is no longer set; delivery dropped", j.LastError)
	assert.Empty(t, rv.deliveries())
}

func TestUnansweredDeliveryIsRetried(t *testing.T) {
	e := newEnv(t, "")
	hang := make(chan struct{})
	rv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer rv.Close()
	defer close(hang)
	list, err := netguard.ParseAllowlist(strings.TrimPrefix(rv.URL, "http://"))
	require.NoError(t, err)
	q := jobs.New(e.store, jobs.Options{Now: e.clock.Now})
	q.Register(webhook.JobType, webhook.NewDeliverer(webhook.Options{
		Settings: e.settings, Guard: &netguard.Guard{Allow: list}, Now: e.clock.Now, Timeout: 50 * time.Millisecond,
	}).Deliver)
	require.NoError(t, e.store.PutTenantSetting(context.Background(), tenant.DefaultID, settings.WebhookURL, mustJSON(t, rv.URL), time.Now()))
	webhook.NewNotifier(q, e.settings, nil).Notify(context.Background(), tenant.DefaultID, "policy.denied", nil)

	n, err := q.RunDue(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	j := e.onlyJob(t)
	assert.Equal(t, jobs.Queued, j.Status)
	assert.Equal(t, "no answer within 50ms", j.LastError)
}
