package openai

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/pluginapi/providertest"
)

// newProvider is New for cfg, which must be valid.
func newProvider(t *testing.T, cfg pluginapi.ProviderConfig) *Upstream {
	t.Helper()
	p, err := New(cfg, nil)
	require.NoError(t, err)
	return p.(*Upstream)
}

// everyCall makes each kind of upstream call once through p, with the
// answers of the fake newHeaderRecorder starts, and fails t on an error.
func everyCall(t *testing.T, p pluginapi.Provider) {
	t.Helper()
	_, err := p.Chat(context.Background(), chatReq(simpleBody))
	require.NoError(t, err, "Chat")
	_, err = collect(t, p, chatReq(simpleBody))
	require.NoError(t, err, "StreamChat")
	_, err = p.Models(context.Background())
	require.NoError(t, err, "Models")
	_, err = embedder(t, p).Embed(context.Background(), embedReq(`{"model":"m","input":"a"}`))
	require.NoError(t, err, "Embed")
}

// headerRecorder keeps the headers of each request its fake upstream got.
type headerRecorder struct {
	mu   sync.Mutex
	seen map[string]http.Header // by path, the last request's
}

func (h *headerRecorder) take() map[string]http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := h.seen
	h.seen = map[string]http.Header{}
	return seen
}

// newHeaderRecorder starts a fake upstream that answers every call svc
// makes and records the headers it was sent.
func newHeaderRecorder(t *testing.T) (*headerRecorder, string) {
	rec := &headerRecorder{seen: map[string]http.Header{}}
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen[r.Method+" "+r.URL.Path] = r.Header.Clone()
		rec.mu.Unlock()
		switch {
		case r.URL.Path == "/models":
			io.WriteString(w, `{"data":[{"id":"m"}]}`)
		case r.URL.Path == "/embeddings":
			io.WriteString(w, `{"data":[]}`)
		case r.Header.Get("Accept") == "text/event-stream":
			writeSSE(w, "data: {\"choices\":[]}\n\n", "data: [DONE]\n\n")
		default:
			io.WriteString(w, `{"choices":[]}`)
		}
	})
	return rec, srv.URL
}

var everyPath = []string{"POST /chat/completions", "GET /models", "POST /embeddings"}

func TestNewTakesTheProviderConfig(t *testing.T) {
	u := newProvider(t, pluginapi.ProviderConfig{})
	assert.Equal(t, DefaultBaseURL, u.BaseURL)
	assert.Empty(t, u.APIKey)
	assert.Zero(t, u.Timeout)
	assert.NotNil(t, u.Client)

	u = newProvider(t, pluginapi.ProviderConfig{BaseURL: " http://127.0.0.1:11434/v1 ", APIKey: " " + testKey + " ",
		Timeout: 2 * time.Second, Headers: map[string]string{"X-Team": "search"}})
	assert.Equal(t, "http://127.0.0.1:11434/v1", u.BaseURL)
	assert.Equal(t, testKey, u.APIKey)
	assert.Equal(t, 2*time.Second, u.Timeout)
	assert.Equal(t, map[string]string{"X-Team": "search"}, u.Headers)

	for name, cfg := range map[string]pluginapi.ProviderConfig{
		"relative base URL":      {BaseURL: "/v1"},
		"base URL of no scheme":  {BaseURL: "api.example.com/v1"},
		"base URL not http":      {BaseURL: "ftp://example.com"},
		"negative timeout":       {Timeout: -time.Second},
		"header name with space": {Headers: map[string]string{"X Team": "a"}},
		"empty header name":      {Headers: map[string]string{"": "a"}},
		"header value with CRLF": {Headers: map[string]string{"X-Team": "a\r\nX-Evil: 1"}},
	} {
		_, err := New(cfg, nil)
		assert.Error(t, err, name)
	}
}

// A local upstream (vLLM, Ollama) takes no key: none is configured, and no
// Authorization header is sent, not even an empty one.
func TestNoKeySendsNoAuthorization(t *testing.T) {
	rec, url := newHeaderRecorder(t)
	providertest.Modes(t, newProvider(t, pluginapi.ProviderConfig{BaseURL: url}), func(t *testing.T, p pluginapi.Provider) {
		everyCall(t, p)
		seen := rec.take()
		for _, path := range everyPath {
			require.Contains(t, seen, path)
			_, present := seen[path]["Authorization"]
			assert.False(t, present, "%s sent Authorization %q", path, seen[path].Get("Authorization"))
		}
	})
}

// The configured headers go with every upstream request; the provider's
// own (the key's Authorization, Content-Type, Accept) are never replaced.
func TestHeadersGoWithEveryRequest(t *testing.T) {
	rec, url := newHeaderRecorder(t)
	headers := map[string]string{"X-Team": "search", "x-lower": "kept", "User-Agent": "search-team/1",
		"authorization": "Bearer not-the-key", "Content-Type": "text/plain", "Accept": "text/html"}
	u := newProvider(t, pluginapi.ProviderConfig{BaseURL: url, APIKey: testKey, Headers: headers})
	providertest.Modes(t, u, func(t *testing.T, p pluginapi.Provider) {
		everyCall(t, p)
		seen := rec.take()
		for _, path := range everyPath {
			h := seen[path]
			require.NotNil(t, h, path)
			assert.Equal(t, "search", h.Get("X-Team"), path)
			assert.Equal(t, "kept", h.Get("X-Lower"), path)
			assert.Equal(t, "search-team/1", h.Get("User-Agent"), path)
			assert.Equal(t, []string{"Bearer " + testKey}, h.Values("Authorization"), path)
			assert.NotEqual(t, "text/html", h.Get("Accept"), path)
			assert.NotContains(t, h.Values("Content-Type"), "text/plain", path)
		}
		assert.Equal(t, "application/json", seen["POST /chat/completions"].Get("Content-Type"))
	})

	// Without a key, an Authorization among the headers is not sent either.
	keyless := newProvider(t, pluginapi.ProviderConfig{BaseURL: url, Headers: headers})
	everyCall(t, keyless)
	for path, h := range rec.take() {
		assert.Empty(t, h.Values("Authorization"), path)
		assert.Equal(t, "search", h.Get("X-Team"), path)
	}
}

// hangingUpstream answers nothing until the test ends; got is told of each
// request it holds.
func hangingUpstream(t *testing.T) (url string, got chan string) {
	got = make(chan string, 16)
	release := make(chan struct{})
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // before the server's own clean-up
	return srv.URL, got
}

// Timeout ends a call whose upstream does not answer: a 502
// upstream_timeout that names the limit, in both modes.
func TestTimeoutEndsACallTheUpstreamDoesNotAnswer(t *testing.T) {
	url, got := hangingUpstream(t)
	u := newProvider(t, pluginapi.ProviderConfig{BaseURL: url, APIKey: testKey, Timeout: 20 * time.Millisecond})
	providertest.Modes(t, u, func(t *testing.T, p pluginapi.Provider) {
		// The caller's own deadline is far off: only Timeout can end these
		// calls with the error checked.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for name, call := range map[string]func() error{
			"Chat": func() error { _, err := p.Chat(ctx, chatReq(simpleBody)); return err },
			"StreamChat": func() error {
				return p.StreamChat(ctx, chatReq(simpleBody), func(pluginapi.ChatChunk) error { return nil })
			},
			"Models": func() error { _, err := p.Models(ctx); return err },
			"Embed": func() error {
				_, err := embedder(t, p).Embed(ctx, embedReq(`{"model":"m","input":"a"}`))
				return err
			},
		} {
			t.Run(name, func(t *testing.T) {
				err := call()
				<-got // the upstream had the call
				pe := requireProviderError(t, err)
				assert.Equal(t, pluginapi.ProviderError{Status: http.StatusBadGateway, Type: "upstream_error",
					Code: codeTimeout, Message: "provider timed out after 20ms"}, *pe)
			})
		}
	})
}

// A non-streamed answer must come whole within Timeout: headers in time
// and a body that stops are a timeout too.
func TestTimeoutCoversTheWholeAnswer(t *testing.T) {
	release := make(chan struct{})
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	u := newProvider(t, pluginapi.ProviderConfig{BaseURL: srv.URL, Timeout: 20 * time.Millisecond})
	providertest.Modes(t, u, func(t *testing.T, p pluginapi.Provider) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // far off, as above
		defer cancel()
		_, err := p.Chat(ctx, chatReq(simpleBody))
		assert.Equal(t, "provider timed out after 20ms", requireProviderError(t, err).Message)
	})
}

// fakeTimer stands in for the first-chunk timer: it fires when the test
// says.
type fakeTimer struct {
	mu      sync.Mutex
	f       func()
	stopped bool
	fired   bool
	started chan struct{} // closed when the timer is started
}

func (ft *fakeTimer) start(_ time.Duration, f func()) stopper {
	ft.mu.Lock()
	ft.f = f
	ft.mu.Unlock()
	close(ft.started)
	return ft
}

func (ft *fakeTimer) Stop() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	stopped := !ft.fired && !ft.stopped
	ft.stopped = true
	return stopped
}

// fire runs the timer's function unless it was stopped first.
func (ft *fakeTimer) fire() {
	ft.mu.Lock()
	f := ft.f
	run := !ft.stopped && !ft.fired
	ft.fired = true
	ft.mu.Unlock()
	if run {
		f()
	}
}

// Timeout bounds a stream until its first chunk: once it has begun, the
// stream runs on after the limit, however long it takes.
func TestTimeoutStopsAtAStreamsFirstChunk(t *testing.T) {
	var more chan struct{} // each mode's, made before its call
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		select {
		case <-more:
		case <-r.Context().Done():
			return
		}
		writeSSE(w, "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n", "data: [DONE]\n\n")
	})
	u := newProvider(t, pluginapi.ProviderConfig{BaseURL: srv.URL, Timeout: time.Hour})
	var timer *fakeTimer
	u.afterFunc = func(d time.Duration, f func()) stopper { return timer.start(d, f) }
	providertest.Modes(t, u, func(t *testing.T, p pluginapi.Provider) {
		timer, more = &fakeTimer{started: make(chan struct{})}, make(chan struct{})
		var chunks []string
		err := p.StreamChat(context.Background(), chatReq(simpleBody), func(c pluginapi.ChatChunk) error {
			chunks = append(chunks, string(c.Data))
			if len(chunks) == 1 {
				timer.fire() // the limit passes while the stream goes on
				close(more)
			}
			return nil
		})
		require.NoError(t, err)
		assert.Len(t, chunks, 2)
	})

	// Before the first chunk, the same timer ends the stream.
	t.Run("before the first chunk", func(t *testing.T) {
		url, got := hangingUpstream(t)
		u := newProvider(t, pluginapi.ProviderConfig{BaseURL: url, Timeout: time.Hour})
		ft := &fakeTimer{started: make(chan struct{})}
		u.afterFunc = ft.start
		go func() {
			<-ft.started
			<-got
			ft.fire()
		}()
		err := u.StreamChat(context.Background(), chatReq(simpleBody), func(pluginapi.ChatChunk) error { return nil })
		assert.Equal(t, "provider timed out after 1h0m0s", requireProviderError(t, err).Message)
	})
}
