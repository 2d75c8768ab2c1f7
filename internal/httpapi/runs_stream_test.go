package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/auth"
)

// sseEvent is one event of a stream, or a comment (a ping).
type sseEvent struct {
	event, id, data, comment string
}

// liveStream reads GET /api/v1/runs/stream in the background.
type liveStream struct {
	events chan sseEvent // closed when the stream ends
	cancel context.CancelFunc
}

// openStream opens a live stream at base+path and waits for its headers:
// from then on every run recorded is on it.
func openStream(t *testing.T, base, path, token string) *liveStream {
	t.Helper()
	return openStreamWith(t, http.DefaultClient, base+path, token)
}

// openStream opens a live stream as the browser's signed-in person.
func (b *browser) openStream(t *testing.T, path string) *liveStream {
	t.Helper()
	return openStreamWith(t, b.client, b.ts.URL+path, "")
}

// openStreamWith is openStream through client, with token unless it is "".
func openStreamWith(t *testing.T, client *http.Client, url, token string) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before the server closes, which waits for it
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	s := &liveStream{events: make(chan sseEvent, 100), cancel: cancel}
	go func() {
		defer close(s.events)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				s.events <- e
				e = sseEvent{}
			case strings.HasPrefix(line, ":"):
				e.comment = strings.TrimSpace(line[1:])
			default:
				k, v, _ := strings.Cut(line, ": ")
				switch k {
				case "event":
					e.event = v
				case "id":
					e.id = v
				case "data":
					e.data = v
				}
			}
		}
	}()
	return s
}

// next returns the stream's next event or comment; ok is false once the
// stream ended.
func (s *liveStream) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	select {
	case e, ok := <-s.events:
		return e, ok
	case <-time.After(10 * time.Second):
		t.Fatal("the stream said nothing for 10 s")
		return sseEvent{}, false
	}
}

// ended waits for the stream to end, past its pings, and fails on a run
// it sends meanwhile or if it still runs after 10 s.
func (s *liveStream) ended(t *testing.T) {
	t.Helper()
	limit := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				return
			}
			require.Empty(t, e.event, "the stream sent %s %s before it ended", e.event, e.id)
		case <-limit:
			t.Fatal("the stream still runs after 10 s")
		}
	}
}

// nextRun returns the stream's next run event, past its pings.
func (s *liveStream) nextRun(t *testing.T) sseEvent {
	t.Helper()
	for {
		e, ok := s.next(t)
		require.True(t, ok, "the stream ended")
		if e.comment == "" {
			return e
		}
	}
}

func TestRunStreamIsTenantScoped(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{})
	other, err := ts.store.CreateTenant(context.Background(), "Other")
	require.NoError(t, err)
	_, theirToken, err := ts.keys.Create(context.Background(), other.ID, auth.NewKey{Name: "theirs", Mode: auth.Observe})
	require.NoError(t, err)
	mine := openStream(t, ts.URL, "/api/v1/runs/stream", bootstrap)
	theirs := openStream(t, ts.URL, "/api/v1/runs/stream", theirToken)

	myRun := ts.chatRun(t, bootstrap, triage, "X-Svc-App", "support")
	e := mine.nextRun(t)
	assert.Equal(t, "run", e.event)
	assert.Equal(t, myRun, e.id)
	var streamed map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.data), &streamed))
	listed := ts.call(t, "GET", "/api/v1/runs", bootstrap, "").json["runs"].([]any)[0]
	assert.Equal(t, listed, streamed, "a run streams as the list shows it")
	assert.NotContains(t, streamed, "request")

	theirRun := ts.chatRun(t, theirToken, triage)
	assert.Equal(t, theirRun, theirs.nextRun(t).id, "the other tenant's first run is its own: it never saw ours")
	again := ts.chatRun(t, bootstrap, strings.Replace(triage, "twice", "three times", 1))
	assert.Equal(t, again, mine.nextRun(t).id, "nor did we see theirs")
}

func TestRunStreamFilters(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{})
	support := openStream(t, ts.URL, "/api/v1/runs/stream?app=support&route=live&status=ok&model=gpt-4o-mini&agent=bot", bootstrap)
	ts.chatRun(t, bootstrap, triage, "X-Svc-App", "billing", "X-Svc-Agent", "bot")
	ts.chatRun(t, bootstrap, triage, "X-Svc-App", "support")
	want := ts.chatRun(t, bootstrap, strings.Replace(triage, "twice", "three times", 1), "X-Svc-App", "support", "X-Svc-Agent", "bot")
	assert.Equal(t, want, support.nextRun(t).id)

	for _, tc := range []struct{ q, param string }{
		{"route=teleport", "route"}, {"status=meh", "status"}, {"app=" + strings.Repeat("a", 201), "app"},
		{"agent=%FF", "agent"}, {"model=" + strings.Repeat("m", 201), "model"},
		// the list's own filters, which a stream cannot apply
		{"q=refund", "q"}, {"since=2026-01-02T15:04:05Z", "since"}, {"until=2026-01-02T15:04:05Z", "until"},
		{"limit=5", "limit"}, {"offset=5", "offset"}, {"since=yesterday", "since"},
	} {
		// a stream that opened would never end: the client gives up
		res := send(t, &http.Client{Timeout: 10 * time.Second}, "GET", ts.URL+"/api/v1/runs/stream?"+tc.q, "",
			"Authorization", "Bearer "+bootstrap)
		assert.Equal(t, http.StatusBadRequest, res.status, tc.q)
		assert.Equal(t, tc.param, res.json["error"].(map[string]any)["param"], tc.q)
	}
	assert.Equal(t, http.StatusUnauthorized, ts.call(t, "GET", "/api/v1/runs/stream", "", "").status)
}

func TestRunStreamPings(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	s := openStream(t, ts.URL, "/api/v1/runs/stream", bootstrap)
	e, ok := s.next(t)
	require.True(t, ok)
	assert.Equal(t, sseEvent{comment: "ping"}, e)
}

// A server's read and write timeouts do not cut a live stream.
func TestRunStreamOutlivesTheServerTimeouts(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{})
	const timeout = 100 * time.Millisecond
	srv := httptest.NewUnstartedServer(ts.handler)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = timeout, timeout
	srv.Start()
	t.Cleanup(srv.Close)
	opened := time.Now()
	s := openStream(t, srv.URL, "/api/v1/runs/stream", bootstrap)
	for time.Since(opened) < 3*timeout {
		_, ok := s.next(t)
		require.True(t, ok, "the stream ended after %s", time.Since(opened))
	}
	run := ts.chatRun(t, bootstrap, triage)
	assert.Equal(t, run, s.nextRun(t).id)
}

// A revoked key's stream ends at the next run of its tenant, which it
// does not see; pings are out of the picture.
func TestRunStreamEndsWhenItsKeyIsRevoked(t *testing.T) {
	ts := newServerOptions(t, bootstrap, nil, &fakeProvider{}, func(o *app.Options) { o.StreamPing = time.Hour })
	keyID, token := ts.createKey(t, bootstrap, `{"name":"console","mode":"observe"}`)
	revoked := openStream(t, ts.URL, "/api/v1/runs/stream", token)
	stays := openStream(t, ts.URL, "/api/v1/runs/stream", bootstrap)
	require.Equal(t, http.StatusOK, ts.call(t, "POST", "/api/v1/keys/"+keyID+"/revoke", bootstrap, "").status)

	run := ts.chatRun(t, bootstrap, triage)
	revoked.ended(t)
	assert.Equal(t, run, stays.nextRun(t).id, "a stream whose caller stands goes on")
}

// A person removed from the org loses its stream at the next ping.
func TestRunStreamEndsWhenItsMemberIsRemoved(t *testing.T) {
	ts := newServer(t, "", accountEnv())
	owner := ts.signedIn(t, adminEmail, adminPassword)
	newOrg(t, owner, "Acme")
	member := joined(t, ts, owner, "member@example.com", "member")
	admin := joined(t, ts, owner, "admin@example.com", "admin")
	ids := userIDs(t, owner)
	removed := member.openStream(t, "/api/v1/runs/stream")
	demoted := admin.openStream(t, "/api/v1/runs/stream")

	res := owner.do(t, "PATCH", "/api/v1/orgs/active/members/"+ids["admin@example.com"], `{"role":"member"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	res = owner.do(t, "DELETE", "/api/v1/orgs/active/members/"+ids["member@example.com"], "")
	require.Equal(t, http.StatusOK, res.status, res.body)
	removed.ended(t)
	for range 3 { // pings, each after the caller is checked again
		e, ok := demoted.next(t)
		require.True(t, ok, "a member still reads runs: the demoted admin's stream goes on")
		assert.Equal(t, "ping", e.comment)
	}
}

// Deleting an org ends its streams at once, whoever holds them; pings are
// out of the picture.
func TestRunStreamEndsWhenItsOrgIsDeleted(t *testing.T) {
	ts := newServerOptions(t, "", accountEnv(), mockProvider(t), func(o *app.Options) { o.StreamPing = time.Hour })
	owner := ts.signedIn(t, adminEmail, adminPassword)
	newOrg(t, owner, "Acme")
	member := joined(t, ts, owner, "member@example.com", "member")
	mine := owner.openStream(t, "/api/v1/runs/stream")
	theirs := member.openStream(t, "/api/v1/runs/stream")
	feed := ts.recorder.Feed()
	require.Equal(t, 2, feed.Subscribers())

	res := owner.do(t, "DELETE", "/api/v1/orgs/active", `{"confirm":"Acme"}`)
	require.Equal(t, http.StatusOK, res.status, res.body)
	mine.ended(t)
	theirs.ended(t)
	assert.Zero(t, feed.Subscribers())
}

// stuckWriter is a connection whose reader stopped reading: a write
// without a deadline blocks until the test ends; one with a deadline fails
// as the deadline passes, at once.
type stuckWriter struct {
	header   http.Header
	deadline time.Time
	release  chan struct{}
}

func (w *stuckWriter) Header() http.Header { return w.header }
func (w *stuckWriter) WriteHeader(int)     {}
func (w *stuckWriter) FlushError() error   { return nil }

func (w *stuckWriter) SetWriteDeadline(d time.Time) error {
	w.deadline = d
	return nil
}

func (w *stuckWriter) Write([]byte) (int, error) {
	if w.deadline.IsZero() {
		<-w.release
		return 0, net.ErrClosed
	}
	return 0, os.ErrDeadlineExceeded
}

// A reader that stops reading is dropped by its write deadline: the
// handler returns and its subscription leaves the feed.
func TestRunStreamDropsAReaderThatStopsReading(t *testing.T) {
	ts := newServerWith(t, bootstrap, nil, &fakeProvider{})
	w := &stuckWriter{header: http.Header{}, release: make(chan struct{})}
	t.Cleanup(func() { close(w.release) }) // before the server closes
	req := httptest.NewRequest("GET", "/api/v1/runs/stream", nil)
	req.Header.Set("Authorization", "Bearer "+bootstrap)
	feed := ts.recorder.Feed()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.handler.ServeHTTP(w, req)
	}()
	select { // the first ping, or a run, is written to nobody
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream's handler is stuck writing to a reader that does not read")
	}
	assert.Zero(t, feed.Subscribers())
}
