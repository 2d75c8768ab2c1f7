package tracing

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func vars(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func noFile(string) ([]byte, error) { return nil, errors.New("no file") }

// The exporter reads the variables the SDK's OTLP/HTTP exporter reads, with
// the same meaning: the base endpoint gets /v1/traces, the traces' one is
// used as it is (the root when it has no path), an http:// scheme means no
// TLS unless INSECURE says otherwise, and the traces' variable wins.
func TestHTTPConfig(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "https://localhost:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector/otlp/"}, "https://collector/otlp/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/custom"}, "http://b:4318/custom"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318"}, "http://b:4318/"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_INSECURE": "false"}, "https://a:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://a", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true"}, "http://a/v1/traces"},
	} {
		cfg := readHTTPConfig(vars(c.env), noFile, func(err error) { t.Errorf("%v: %v", c.env, err) })
		assert.Equal(t, c.want, cfg.url, "%v", c.env)
	}

	var warned []error
	cfg := readHTTPConfig(vars(map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":            "api-key=secret%20one, x-tenant = t1 ,broken,bad key=1",
		"OTEL_EXPORTER_OTLP_TIMEOUT":            "2500",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT":     "soon",
		"OTEL_EXPORTER_OTLP_COMPRESSION":        "gzip",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        "/ca.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/c.pem",
	}), noFile, func(err error) { warned = append(warned, err) })
	assert.Equal(t, "secret one", cfg.headers.Get("Api-Key"))
	assert.Equal(t, "t1", cfg.headers.Get("X-Tenant"))
	assert.Equal(t, "application/x-protobuf", cfg.headers.Get("Content-Type"))
	assert.Equal(t, 2500*time.Millisecond, cfg.timeout, "a timeout that does not parse is ignored")
	assert.True(t, cfg.gzip)
	assert.Nil(t, cfg.tls, "a certificate that cannot be read is ignored")
	assert.Len(t, warned, 4, "two bad headers, the timeout and the certificate: %v", warned)

	cfg = readHTTPConfig(vars(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none"}), noFile, func(error) {})
	assert.Empty(t, cfg.headers.Get("a"), "the traces' headers replace the general ones")
	assert.Equal(t, "2", cfg.headers.Get("b"))
	assert.False(t, cfg.gzip)

	cfg = readHTTPConfig(vars(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "user-agent=mine,content-type=text/plain"}), noFile, func(error) {})
	assert.Equal(t, "mine", cfg.headers.Get("User-Agent"), "the configured headers may replace the User-Agent")
	assert.Equal(t, "application/x-protobuf", cfg.headers.Get("Content-Type"), "but not the Content-Type")
}

// collector is an OTLP/HTTP endpoint that answers with the statuses it is
// given, in turn, and keeps the requests it took.
type collector struct {
	mu       sync.Mutex
	statuses []int
	headers  []http.Header
	exports  []*coltracepb.ExportTraceServiceRequest
	answer   []byte
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	status := http.StatusOK
	if len(c.statuses) > 0 {
		status, c.statuses = c.statuses[0], c.statuses[1:]
	}
	c.headers = append(c.headers, r.Header.Clone())
	if status != http.StatusOK {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "try later", status)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	b, _ := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.exports = append(c.exports, &req)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(c.answer)
}

func exporterTo(t *testing.T, c *collector, env map[string]string) *httpExporter {
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	m := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}
	for k, v := range env {
		m[k] = v
	}
	e := newHTTPExporter(readHTTPConfig(vars(m), noFile, func(err error) { t.Error(err) }))
	e.backoff = time.Millisecond
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// Spans are posted to /v1/traces as the stock exporter would send them,
// with the configured headers, gzipped when asked, batch after batch from
// the one buffer.
func TestHTTPExporterPosts(t *testing.T) {
	spans := everything(t)
	for _, zip := range []string{"none", "gzip"} {
		c := &collector{}
		e := exporterTo(t, c, map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "api-key=k", "OTEL_EXPORTER_OTLP_COMPRESSION": zip})
		require.NoError(t, e.ExportSpans(context.Background(), spans))
		require.NoError(t, e.ExportSpans(context.Background(), spans[:1]))
		require.Len(t, c.exports, 2)
		sameRequest(t, stock(t, spans), c.exports[0])
		sameRequest(t, stock(t, spans[:1]), c.exports[1])
		h := c.headers[0]
		assert.Equal(t, "k", h.Get("Api-Key"))
		assert.Equal(t, "application/x-protobuf", h.Get("Content-Type"))
		assert.Contains(t, h.Get("User-Agent"), "OTel OTLP Exporter Go/")
		if zip == "gzip" {
			assert.Equal(t, "gzip", h.Get("Content-Encoding"))
		} else {
			assert.Empty(t, h.Get("Content-Encoding"))
		}
	}
}

// A collector that is busy (429, 502, 503, 504) is tried again; one that
// refuses the request is not; a partial success is an error.
func TestHTTPExporterRetries(t *testing.T) {
	spans := everything(t)[:1]
	c := &collector{statuses: []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}}
	require.NoError(t, exporterTo(t, c, nil).ExportSpans(context.Background(), spans))
	assert.Len(t, c.headers, 3)
	assert.Len(t, c.exports, 1)

	c = &collector{statuses: []int{http.StatusBadRequest}}
	err := exporterTo(t, c, nil).ExportSpans(context.Background(), spans)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "400")
	assert.Len(t, c.headers, 1)

	partial, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1, ErrorMessage: "too old"}})
	c = &collector{answer: partial}
	err = exporterTo(t, c, nil).ExportSpans(context.Background(), spans)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too old (1 spans rejected)")
}

// Retries stop with the export's context, and a shut down exporter sends
// nothing more.
func TestHTTPExporterStops(t *testing.T) {
	spans := everything(t)[:1]
	c := &collector{statuses: []int{503, 503, 503, 503, 503, 503, 503, 503}}
	e := exporterTo(t, c, nil)
	e.backoff = 20 * time.Second // within the minute retries may take
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.ExportSpans(ctx, spans) }()
	require.Eventually(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.headers) == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)

	require.NoError(t, e.Shutdown(context.Background()))
	require.ErrorIs(t, e.ExportSpans(context.Background(), spans), errShutDown)
	assert.Len(t, c.headers, 1)
}

// A body the transport still holds after its answer (one that came before
// the body was read) is cut off from the buffer the next export reuses.
func TestDetachedBodyReadsNothing(t *testing.T) {
	d := &detachable{b: []byte("abcdef")}
	r := d.reader()
	p := make([]byte, 2)
	n, err := r.Read(p)
	require.NoError(t, err)
	assert.Equal(t, "ab", string(p[:n]))
	d.detach()
	_, err = r.Read(p)
	assert.ErrorIs(t, err, errDetached)
	rest, err := io.ReadAll(d.reader())
	assert.ErrorIs(t, err, errDetached)
	assert.Empty(t, rest)
}
