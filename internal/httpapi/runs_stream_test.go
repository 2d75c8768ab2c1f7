package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before the server closes, which waits for it
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
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
	} {
		res := ts.call(t, "GET", "/api/v1/runs/stream?"+tc.q, bootstrap, "")
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
