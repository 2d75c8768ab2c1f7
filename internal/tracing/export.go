package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/proto"
)

// httpConfig is what the OTLP/HTTP exporter reads from the OTEL_EXPORTER_OTLP_*
// variables, as the SDK's own exporter does: the traces' variable wins
// over the general one.
type httpConfig struct {
	url     string // where exports are posted
	headers http.Header
	gzip    bool
	timeout time.Duration // each attempt's
	tls     *tls.Config   // nil: the system's roots, no client certificate
}

// The stock exporter's limits and retry schedule.
const (
	defaultEndpoint = "localhost:4318"
	tracesPath      = "/v1/traces"
	defaultTimeout  = 10 * time.Second
	maxRequest      = 64 << 20
	maxResponse     = 4 << 20

	retryFirst   = 5 * time.Second
	retryMax     = 30 * time.Second
	retryElapsed = time.Minute
)

// readHTTPConfig reads the exporter's variables. A value that does not
// parse is reported to warn and ignored, as the SDK does.
func readHTTPConfig(getenv func(string) string, readFile func(string) ([]byte, error), warn func(error)) httpConfig {
	get := func(name string) string { return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name)) }
	cfg := httpConfig{timeout: defaultTimeout, headers: http.Header{}}
	host, urlPath, insecure := defaultEndpoint, tracesPath, false
	if v := get("ENDPOINT"); v != "" {
		if u, err := url.Parse(v); err != nil {
			warn(fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err))
		} else {
			host, urlPath, insecure = u.Host, path.Join(u.Path, tracesPath), insecureScheme(u)
		}
	}
	if v := get("TRACES_ENDPOINT"); v != "" {
		if u, err := url.Parse(v); err != nil {
			warn(fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: %w", err))
		} else {
			// The full URL, used as it is; one without a path posts to the
			// root, as the specification and the SDK's exporter say.
			host, urlPath, insecure = u.Host, u.Path, insecureScheme(u)
			if urlPath == "" {
				urlPath = "/"
			}
		}
	}
	for _, name := range []string{"INSECURE", "TRACES_INSECURE"} {
		if v := get(name); v != "" {
			insecure = strings.EqualFold(v, "true")
		}
	}
	scheme := "https"
	if insecure {
		scheme = "http"
	}
	cfg.url = (&url.URL{Scheme: scheme, Host: host, Path: cleanPath(urlPath)}).String()

	var headers string
	for _, name := range []string{"HEADERS", "TRACES_HEADERS"} {
		if v := get(name); v != "" {
			headers = v
		}
	}
	// In the SDK's order: the configured headers may replace the
	// User-Agent, not the Content-Type.
	cfg.headers.Set("User-Agent", "OTel OTLP Exporter Go/"+otlptrace.Version())
	for k, v := range parseHeaders(headers, warn) {
		cfg.headers.Set(k, v)
	}
	cfg.headers.Set("Content-Type", "application/x-protobuf")

	for _, name := range []string{"COMPRESSION", "TRACES_COMPRESSION"} {
		if v := get(name); v != "" {
			cfg.gzip = v == "gzip"
		}
	}
	for _, name := range []string{"TIMEOUT", "TRACES_TIMEOUT"} {
		if v := get(name); v != "" {
			if ms, err := strconv.Atoi(v); err != nil {
				warn(fmt.Errorf("OTEL_EXPORTER_OTLP_%s: %w", name, err))
			} else {
				cfg.timeout = time.Duration(ms) * time.Millisecond
			}
		}
	}

	t := &tls.Config{}
	for _, name := range []string{"CERTIFICATE", "TRACES_CERTIFICATE"} {
		if v := get(name); v != "" {
			if pool, err := certPool(readFile, v); err != nil {
				warn(fmt.Errorf("OTEL_EXPORTER_OTLP_%s: %w", name, err))
			} else {
				t.RootCAs = pool
			}
		}
	}
	for _, prefix := range []string{"", "TRACES_"} {
		certFile, keyFile := get(prefix+"CLIENT_CERTIFICATE"), get(prefix+"CLIENT_KEY")
		if certFile == "" || keyFile == "" {
			continue
		}
		if cert, err := clientCert(readFile, certFile, keyFile); err != nil {
			warn(fmt.Errorf("OTEL_EXPORTER_OTLP_%sCLIENT_CERTIFICATE: %w", prefix, err))
		} else {
			t.Certificates = []tls.Certificate{cert}
		}
	}
	if t.RootCAs != nil || len(t.Certificates) > 0 {
		cfg.tls = t
	}
	return cfg
}

// insecureScheme says whether an endpoint's scheme means no TLS.
func insecureScheme(u *url.URL) bool {
	s := strings.ToLower(u.Scheme)
	return s == "http" || s == "unix"
}

// cleanPath is the traces' path, absolute, /v1/traces when empty.
func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	if p == "" || p == "." {
		return tracesPath
	}
	if !path.IsAbs(p) {
		p = "/" + p
	}
	return p
}

// parseHeaders reads "key=value,…", each value URL-decoded.
func parseHeaders(s string, warn func(error)) map[string]string {
	h := map[string]string{}
	if s == "" {
		return h
	}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !httpguts.ValidHeaderFieldName(k) {
			warn(fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value", pair))
			continue
		}
		v, err := url.PathUnescape(v)
		if err != nil {
			warn(fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %w", err))
			continue
		}
		h[k] = strings.TrimSpace(v)
	}
	return h
}

func certPool(readFile func(string) ([]byte, error), file string) (*x509.CertPool, error) {
	b, err := readFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("no PEM certificate in " + file)
	}
	return pool, nil
}

func clientCert(readFile func(string) ([]byte, error), certFile, keyFile string) (tls.Certificate, error) {
	cert, err := readFile(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := readFile(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}

// httpExporter posts spans to an OTLP/HTTP collector in protobuf, encoded
// straight from the SDK's spans into a buffer kept from one export to the
// next. It behaves as the SDK's otlptracehttp exporter: the same
// variables, a timeout per attempt, retries of 429, 502, 503 and 504 (and
// of a temporary network failure) for at most a minute with backoff from
// 5 s to 30 s or the collector's Retry-After, and a partial success
// reported as an error.
type httpExporter struct {
	cfg    httpConfig
	client *http.Client

	stop     context.Context // done once shut down: an export under way is cancelled
	shutdown context.CancelFunc
	backoff  time.Duration // the first retry's, before its jitter

	mu  sync.Mutex // the batch processor exports one batch at a time; this makes sure
	enc encoder
	buf []byte
	gz  *gzip.Writer
	zip bytes.Buffer
}

func newHTTPExporter(cfg httpConfig) *httpExporter {
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       cfg.tls,
	}
	stop, shutdown := context.WithCancel(context.Background())
	return &httpExporter{cfg: cfg, client: &http.Client{Transport: transport, Timeout: cfg.timeout},
		stop: stop, shutdown: shutdown, backoff: retryFirst}
}

var errShutDown = errors.New("the exporter is shut down")

// ExportSpans encodes spans and posts them, retrying as the SDK's exporter
// does.
func (e *httpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	if e.stop.Err() != nil {
		return errShutDown
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.stop, cancel)()

	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf = e.enc.appendRequest(e.buf[:0], spans)
	body := e.buf
	if len(body) == 0 {
		return nil
	}
	if len(body) > maxRequest {
		return fmt.Errorf("request body too large: exceeded %d bytes", maxRequest)
	}
	if e.cfg.gzip {
		e.zip.Reset()
		if e.gz == nil {
			e.gz = gzip.NewWriter(&e.zip)
		} else {
			e.gz.Reset(&e.zip)
		}
		if _, err := e.gz.Write(body); err != nil {
			return err
		}
		if err := e.gz.Close(); err != nil {
			return err
		}
		body = e.zip.Bytes()
	}
	return e.send(ctx, body)
}

// send posts body until it is taken, refused for good, or the retries
// run out.
func (e *httpExporter) send(ctx context.Context, body []byte) error {
	start := time.Now()
	backoff := e.backoff
	for {
		err := e.post(ctx, body)
		var retry *retryable
		if err == nil || !errors.As(err, &retry) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
		// The stock exporter's backoff: ±50 %, times 1.5 each attempt.
		delay := max(retry.after, time.Duration(float64(backoff)*(0.5+rand.Float64())))
		backoff = min(time.Duration(float64(backoff)*1.5), retryMax)
		if time.Since(start)+delay > retryElapsed {
			return fmt.Errorf("max retry time would elapse: %w", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// retryable is a failure worth another attempt, after at least after.
type retryable struct {
	after time.Duration
	err   error
}

func (r *retryable) Error() string { return "retry-able request failure: " + r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// post makes one attempt. The body is read only while post runs: the
// transport may still hold the request once it has an answer (one that
// came before the body was sent), so the reader is cut off from the
// buffer, which the next export reuses.
func (e *httpExporter) post(ctx context.Context, body []byte) error {
	src := &detachable{b: body}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.url, src.reader())
	if err != nil {
		return err
	}
	defer src.detach()
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return src.reader(), nil }
	for k, v := range e.cfg.headers {
		req.Header[k] = v
	}
	if e.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	res, err := e.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) && uerr.Temporary() {
			return &retryable{err: err}
		}
		return err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, maxResponse+1))
	if err != nil {
		return err
	}
	if len(answer) > maxResponse {
		return fmt.Errorf("response body too large: exceeded %d bytes", maxResponse)
	}
	if res.StatusCode >= 200 && res.StatusCode <= 299 {
		return partialSuccess(res.Header.Get("Content-Type"), answer)
	}
	text := strings.TrimSpace(string(answer))
	if text == "" {
		text = "(empty)"
	}
	failure := fmt.Errorf("body: %s", text)
	switch res.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &retryable{after: retryAfter(res.Header.Get("Retry-After")), err: failure}
	}
	return fmt.Errorf("failed to send to %s: %s (%w)", e.cfg.url, res.Status, failure)
}

// partialSuccess is the error a collector's answer reports: spans it
// rejected, or a warning.
func partialSuccess(contentType string, answer []byte) error {
	if len(answer) == 0 || contentType != "application/x-protobuf" {
		return nil
	}
	var res coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal(answer, &res); err != nil {
		return err
	}
	ps := res.GetPartialSuccess()
	if ps == nil || ps.GetRejectedSpans() == 0 && ps.GetErrorMessage() == "" {
		return nil
	}
	msg := ps.GetErrorMessage()
	if msg == "" {
		msg = "empty message"
	}
	return fmt.Errorf("OTLP partial success: %s (%d spans rejected)", msg, ps.GetRejectedSpans())
}

// retryAfter is a Retry-After of whole seconds (0 otherwise).
func retryAfter(v string) time.Duration {
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil || s < 0 {
		return 0
	}
	if s > int64(1<<63-1)/int64(time.Second) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(s) * time.Second
}

// Shutdown stops the exporter; an export under way is cancelled.
func (e *httpExporter) Shutdown(ctx context.Context) error {
	e.shutdown()
	e.client.CloseIdleConnections()
	return ctx.Err()
}

// detachable is a request body whose readers stop reading its bytes once
// it is detached.
type detachable struct {
	mu sync.Mutex
	b  []byte // nil once detached
}

var errDetached = errors.New("the export's body is no longer available")

func (d *detachable) reader() io.ReadCloser { return &bodyReader{src: d} }

func (d *detachable) detach() {
	d.mu.Lock()
	d.b = nil
	d.mu.Unlock()
}

// bodyReader reads a detachable from its start. It has no WriteTo, so
// the transport copies out of it only through Read.
type bodyReader struct {
	src *detachable
	off int
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	if r.src.b == nil {
		return 0, errDetached
	}
	if r.off >= len(r.src.b) {
		return 0, io.EOF
	}
	n := copy(p, r.src.b[r.off:])
	r.off += n
	return n, nil
}

func (*bodyReader) Close() error { return nil }
