// Package openai is svc's provider for any OpenAI-compatible upstream,
// served by the svc-provider-openai plugin or run inside svc's process.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// DefaultBaseURL is the upstream used when the configuration names none.
const DefaultBaseURL = "https://api.openai.com/v1"

const (
	// DefaultMaxResponseBytes bounds a non-streamed answer and a single
	// streamed event.
	DefaultMaxResponseBytes = 32 << 20

	maxErrorBodyBytes  = 64 << 10 // read of a non-2xx body
	maxModelsBodyBytes = 8 << 20
	errorSnippetBytes  = 500  // of a non-JSON error body
	maxMessageBytes    = 4096 // of an upstream error message
	drainLimit         = 256 << 10
	drainWait          = 50 * time.Millisecond // for the rest of a body after the answer

	typeUpstream     = "upstream_error"
	typeInvalid      = "invalid_request_error"
	typeRateLimit    = "rate_limit_error"
	codeAuth         = pluginapi.CodeUpstreamAuthFailed
	codeTimeout      = pluginapi.CodeTimeout
	codeUnreachable  = pluginapi.CodeUpstreamUnreachable
	codeTooLarge     = pluginapi.CodeResponseTooLarge
	codeBadResponse  = pluginapi.CodeBadResponse
	userAgent        = "svc-provider-openai"
	mimeJSON         = "application/json"
	mimeEventStream  = "text/event-stream"
	headerRequestID  = "X-Request-Id"
	headerAuthorize  = "Authorization"
	headerContentTyp = "Content-Type"
	headerAccept     = "Accept"
	headerUserAgent  = "User-Agent"
)

// Shared header values. Each slice has len == cap, so a RoundTripper that
// Adds to a header gets a new backing array and never writes into these.
var (
	hdrJSON      = []string{mimeJSON}
	hdrSSE       = []string{mimeEventStream}
	hdrUserAgent = []string{userAgent}
	rawTrue      = json.RawMessage("true")
	doneMarker   = []byte("[DONE]")
)

// Upstream is an OpenAI-compatible chat-completions provider. It is safe for
// concurrent use. Set the fields before the first call and do not change them
// afterwards.
type Upstream struct {
	BaseURL string // e.g. https://api.openai.com/v1 (a trailing slash is ignored)
	APIKey  string // sent as "Authorization: Bearer <key>"; never logged; "" sends no Authorization
	Client  *http.Client

	// Timeout, when positive, bounds one call: until the whole answer is
	// read, or a stream's first chunk. It ends in a 502 upstream_timeout.
	Timeout time.Duration
	// Headers are added to every upstream request. Those the provider sets
	// itself (Authorization, Content-Type, Accept, X-Request-Id) are never
	// taken from here; a User-Agent here replaces svc's.
	Headers map[string]string

	// Logger receives one line per upstream failure (secrets removed).
	// Nil means no logging.
	Logger hclog.Logger
	// MaxResponseBytes bounds a non-streamed answer and one streamed event;
	// zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64

	once          sync.Once
	chatURL       string
	modelsURL     string
	embeddingsURL string
	auth          []string // nil: no key, no Authorization header
	extra         http.Header
	ownAgent      bool // extra has no User-Agent: send svc's
	timeoutErr    *pluginapi.ProviderError

	// afterFunc starts the timer of a stream's first chunk: time.AfterFunc,
	// unless a test stands in for it.
	afterFunc func(time.Duration, func()) stopper
}

// stopper is a timer: Stop reports whether it stopped the timer before it
// fired.
type stopper interface{ Stop() bool }

func afterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

var (
	_ pluginapi.Provider = (*Upstream)(nil)
	_ pluginapi.Embedder = (*Upstream)(nil)
)

// New returns the provider for cfg: its BaseURL (DefaultBaseURL when
// empty), APIKey (empty: no Authorization header, for a local upstream such
// as vLLM or Ollama), Timeout and Headers, with an HTTP client tuned for
// many concurrent keep-alive calls to one host. log receives one line per
// upstream failure, never the key; nil logs nothing.
func New(cfg pluginapi.ProviderConfig, log hclog.Logger) (pluginapi.Provider, error) {
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("the provider's base URL must be an absolute http(s) URL")
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("the provider's timeout must not be negative")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	up := newUpstream(base, strings.TrimSpace(cfg.APIKey))
	up.Timeout, up.Headers, up.Logger = cfg.Timeout, cfg.Headers, log
	if log != nil && log.IsDebug() {
		log.Debug("provider configured", "base_url", u.Redacted(), "key", cfg.APIKey != "",
			"timeout", cfg.Timeout.String(), "headers", len(cfg.Headers))
	}
	return up, nil
}

// newUpstream returns an Upstream for baseURL using apiKey, with
// pluginapi.NewUpstreamClient.
func newUpstream(baseURL, apiKey string) *Upstream {
	return &Upstream{BaseURL: baseURL, APIKey: apiKey, Client: pluginapi.NewUpstreamClient()}
}

var (
	defaultClientOnce sync.Once
	defaultClient     *http.Client
)

func (u *Upstream) init() {
	u.once.Do(func() {
		base := strings.TrimRight(strings.TrimSpace(u.BaseURL), "/")
		if base == "" {
			base = DefaultBaseURL
		}
		u.chatURL = base + "/chat/completions"
		u.modelsURL = base + "/models"
		u.embeddingsURL = base + "/embeddings"
		if u.APIKey != "" {
			u.auth = []string{"Bearer " + u.APIKey}
		}
		u.ownAgent = true
		for name, value := range u.Headers {
			name = http.CanonicalHeaderKey(name)
			switch name {
			case headerAuthorize, headerContentTyp, headerAccept, headerRequestID, "Host":
				continue // the provider's own
			case headerUserAgent:
				u.ownAgent = false
			}
			if u.extra == nil {
				u.extra = make(http.Header, len(u.Headers))
			}
			u.extra[name] = []string{value}
		}
		u.timeoutErr = &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeTimeout,
			Message: "provider timed out after " + u.Timeout.String(),
		}
	})
}

// errTimeout is the cause of a context that Timeout ended.
var errTimeout = errors.New("provider timeout")

// withTimeout bounds a call's ctx by Timeout, when set.
func (u *Upstream) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if u.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, u.Timeout, errTimeout)
}

// timedOut reports whether Timeout ended ctx (and not the caller).
func timedOut(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), errTimeout)
}

func (u *Upstream) client() *http.Client {
	if u.Client != nil {
		return u.Client
	}
	defaultClientOnce.Do(func() { defaultClient = pluginapi.NewUpstreamClient() })
	return defaultClient
}

func (u *Upstream) maxResponse() int64 {
	if u.MaxResponseBytes > 0 {
		return u.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}

// Chat implements pluginapi.Provider: the request body goes upstream
// unchanged and the upstream's body comes back unchanged.
func (u *Upstream) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	u.init()
	ctx, cancel := u.withTimeout(ctx)
	res, err := u.chat(ctx, req)
	cancel()
	if err != nil {
		u.logError("chat", err, req.RequestID)
	}
	return res, err
}

// StreamChat implements pluginapi.Provider: it asks the upstream to stream
// (and to report usage when req.IncludeUsage) and calls send once per
// chat.completion.chunk as each arrives. Timeout bounds the wait for the
// first chunk only: a stream that has begun takes as long as it takes.
func (u *Upstream) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	u.init()
	var err error
	if u.Timeout > 0 {
		err = u.streamFirstChunkWithin(ctx, req, send)
	} else {
		err = u.streamChat(ctx, req, send)
	}
	if err != nil {
		u.logError("stream", err, req.RequestID)
	}
	return err
}

// Models implements pluginapi.Provider from GET {BaseURL}/models.
func (u *Upstream) Models(ctx context.Context) ([]pluginapi.Model, error) {
	u.init()
	ctx, cancel := u.withTimeout(ctx)
	models, err := u.models(ctx)
	cancel()
	if err != nil {
		u.logError("models", err, "")
	}
	return models, err
}

func (u *Upstream) chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	resp, err := u.do(ctx, http.MethodPost, u.chatURL, req.Body, req.Call(), hdrJSON)
	if err != nil {
		return pluginapi.ChatResponse{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return pluginapi.ChatResponse{}, u.statusError(resp)
	}
	body, err := readBody(resp, u.maxResponse())
	if err != nil {
		return pluginapi.ChatResponse{}, u.readError(ctx, err, "response")
	}
	// A member of an odd type only loses the usage; anything but an object
	// is no completion.
	parsed, ok := readAnswer(body)
	if !ok {
		return pluginapi.ChatResponse{}, &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
			Message: "provider returned a response that is not a JSON object",
		}
	}
	if !isNull(parsed.Error) {
		return pluginapi.ChatResponse{}, u.inBodyError(parsed.Error)
	}
	var usage pluginapi.Usage
	if parsed.Usage != nil {
		usage = parsed.Usage.usage()
	}
	return pluginapi.ChatResponse{Body: validUTF8(body), Usage: usage}, nil
}

// validUTF8 is b with what is not UTF-8 replaced by U+FFFD: an upstream's
// stray bytes, which in valid JSON can only sit inside strings, would make
// the answer, and the run that keeps it, unreadable to strict parsers.
func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

// streamFirstChunkWithin is streamChat with Timeout on its first chunk: a
// timer cancels the call unless the first chunk stops it in time.
func (u *Upstream) streamFirstChunkWithin(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := u.afterFunc
	if start == nil {
		start = afterFunc
	}
	timer := start(u.Timeout, func() { cancel(errTimeout) })
	defer timer.Stop()
	started := false
	return u.streamChat(ctx, req, func(c pluginapi.ChatChunk) error {
		if !started {
			if !timer.Stop() { // too late: the call is being cancelled
				return u.timeoutErr
			}
			started = true
		}
		return send(c)
	})
}

func (u *Upstream) streamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	body, err := streamRequestBody(req.Body, req.IncludeUsage)
	if err != nil {
		return &pluginapi.ProviderError{
			Status: http.StatusBadRequest, Type: typeInvalid,
			Message: "request body must be a JSON object",
		}
	}
	resp, err := u.do(ctx, http.MethodPost, u.chatURL, body, req.Call(), hdrSSE)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return u.statusError(resp)
	}
	ct := resp.Header.Get(headerContentTyp)
	if strings.HasPrefix(ct, mimeJSON) {
		// Not a stream: an error object, or an upstream that ignored
		// "stream": true. Neither can be relayed as chunks.
		b, _ := readLimited(resp.Body, maxErrorBodyBytes)
		drainClose(resp.Body)
		f := parseErrorBody(b)
		if f.Message == "" || hasNonNullKey(b, keyChoices) { // a completion is no error to quote
			f = errorFields{Message: "provider answered without streaming"}
		}
		return u.streamError(f)
	}

	s := getSSE(resp.Body, u.maxResponse())
	err = s.run(ctx, u, send)
	switch {
	case err != nil:
	case s.events == 0 && !strings.HasPrefix(ct, mimeEventStream):
		// An HTML page or a text error with a 200: not a stream at all.
		err = u.streamError(errorFields{Message: "provider answered without an event stream"})
	case !s.ended():
		// The connection closed cleanly mid-answer (a body delimited by
		// its close, a proxy that ended it): the answer is not whole.
		err = u.streamError(errorFields{Message: "provider stream ended before its answer did (no finish_reason, no [DONE])"})
	}
	putSSE(s)
	if err != nil {
		resp.Body.Close() // aborted: do not read on
		return err
	}
	drainClose(resp.Body) // after [DONE]: read the rest so the connection is reused
	return nil
}

func (u *Upstream) models(ctx context.Context) ([]pluginapi.Model, error) {
	resp, err := u.do(ctx, http.MethodGet, u.modelsURL, nil, pluginapi.Call{}, hdrJSON)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, u.statusError(resp)
	}
	limit := int64(maxModelsBodyBytes)
	if m := u.maxResponse(); m < limit {
		limit = m
	}
	body, err := readBody(resp, limit)
	if err != nil {
		return nil, u.readError(ctx, err, "response")
	}
	var list struct {
		Data []struct {
			ID      string          `json:"id"`
			OwnedBy string          `json:"owned_by"`
			Created json.RawMessage `json:"created"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
			Message: "provider returned an invalid model list",
		}
	}
	models := make([]pluginapi.Model, 0, min(len(list.Data), pluginapi.MaxModels))
	for _, d := range list.Data {
		kind := modelKind(d.ID)
		if d.ID == "" || kind == "" {
			continue // svc could not answer it
		}
		if len(models) == pluginapi.MaxModels {
			break
		}
		models = append(models, pluginapi.Model{ID: d.ID, OwnedBy: d.OwnedBy, Created: rawInt(d.Created), Kind: kind})
	}
	return models, nil
}

// do sends one request. Its errors are ready to return: ctx.Err() when the
// caller went away, otherwise a *ProviderError.
func (u *Upstream) do(ctx context.Context, method, target string, body []byte, c pluginapi.Call, accept []string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body) // sets ContentLength and GetBody
	}
	r, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeUnreachable,
			Message: "provider URL is invalid: " + u.sanitize(innerError(err)),
		}
	}
	h := r.Header
	for name, v := range u.extra {
		h[name] = v
	}
	if u.auth != nil {
		h[headerAuthorize] = u.auth
	}
	h[headerAccept] = accept
	if u.ownAgent {
		h[headerUserAgent] = hdrUserAgent
	}
	if body != nil {
		h[headerContentTyp] = hdrJSON
	}
	c.SetHeaders(h)
	resp, err := u.client().Do(r)
	if err != nil {
		return nil, u.transportError(ctx, err)
	}
	return resp, nil
}

// transportError maps a failed round trip.
func (u *Upstream) transportError(ctx context.Context, err error) error {
	if errors.Is(err, pluginapi.ErrHeadersTooLarge) {
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeTooLarge,
			Message: "provider answer's headers too large",
		}
	}
	return u.failure(ctx, err, "provider unreachable: ")
}

// readError maps a failure while reading a 2xx body; what names the body
// ("response", "stream").
func (u *Upstream) readError(ctx context.Context, err error, what string) error {
	if errors.Is(err, errTooLarge) {
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeTooLarge,
			Message: "provider " + what + " too large",
		}
	}
	return u.failure(ctx, err, "provider "+what+" interrupted: ")
}

// failure maps a network failure: the client's cancellation stays itself, a
// timeout and anything else become a 502, described after prefix.
func (u *Upstream) failure(ctx context.Context, err error, prefix string) error {
	if timedOut(ctx) {
		return u.timeoutErr
	}
	if cerr := ctx.Err(); errors.Is(cerr, context.Canceled) {
		return cerr
	}
	if isTimeout(ctx, err) {
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeTimeout,
			Message: "provider timed out",
		}
	}
	return &pluginapi.ProviderError{
		Status: http.StatusBadGateway, Type: typeUpstream, Code: codeUnreachable,
		Message: prefix + u.sanitize(innerError(err)),
	}
}

func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// innerError drops the *url.Error wrapping ("Post \"https://…\": "), so that
// the message names the failure rather than the operator's provider URL.
func innerError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return err.Error()
}

// statusError reads a non-2xx answer, releases the connection and maps it.
// An answer svc retries keeps the upstream's advice on when to try again.
func (u *Upstream) statusError(resp *http.Response) error {
	body, _ := readLimited(resp.Body, maxErrorBodyBytes)
	drainClose(resp.Body)
	pe := u.mapStatus(resp.StatusCode, body)
	pe.RetryAfter = pluginapi.RetryAfter(resp, time.Now())
	return pe
}

// mapStatus is the error mapping of a non-2xx upstream answer:
//
//	401, 403    -> 502 upstream_error (svc's provider key was refused; the
//	               upstream text is dropped as it may echo part of the key)
//	429         -> 429 with the upstream's type, code and message
//	other 4xx   -> same status with the upstream's type, code, param, message
//	5xx         -> same status, upstream_error with the upstream's code and
//	               message (svc answers any 5xx as 502; the status is kept
//	               for the run's record of the attempt)
//	others      -> 502 upstream_error (a 1xx or 3xx is no answer either)
func (u *Upstream) mapStatus(status int, body []byte) *pluginapi.ProviderError {
	f := parseErrorBody(body)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeAuth,
			Message: "provider rejected svc's credentials (HTTP " + strconv.Itoa(status) +
				"); the operator must check the provider's key",
		}
	case status == http.StatusTooManyRequests:
		return &pluginapi.ProviderError{
			Status: status, Type: u.sanitize(orDefault(f.Type, typeRateLimit)), Code: u.sanitize(f.Code),
			Param: u.sanitize(f.Param), Message: u.sanitize(orDefault(f.Message, "provider rate limit exceeded")),
		}
	case status >= 400 && status < 500:
		return &pluginapi.ProviderError{
			Status: status, Type: u.sanitize(orDefault(f.Type, typeInvalid)), Code: u.sanitize(f.Code),
			Param: u.sanitize(f.Param), Message: u.sanitize(orDefault(f.Message, http.StatusText(status))),
		}
	}
	msg := "provider error (HTTP " + strconv.Itoa(status) + ")"
	if f.Message != "" {
		msg += ": " + f.Message
	}
	if status < 500 || status > 599 {
		status = http.StatusBadGateway
	}
	return &pluginapi.ProviderError{
		Status: status, Type: typeUpstream, Code: u.sanitize(f.Code),
		Param: u.sanitize(f.Param), Message: u.sanitize(msg),
	}
}

// inBodyError maps an "error" object found in a 2xx body.
func (u *Upstream) inBodyError(raw json.RawMessage) *pluginapi.ProviderError {
	return u.streamError(errorFieldsOf(raw))
}

// streamError maps an error reported inside a 2xx answer (a stream event
// or a body): the HTTP status has already been spent, so it is a 502.
func (u *Upstream) streamError(f errorFields) *pluginapi.ProviderError {
	return &pluginapi.ProviderError{
		Status: http.StatusBadGateway, Type: u.sanitize(orDefault(f.Type, typeUpstream)),
		Code: u.sanitize(f.Code), Param: u.sanitize(f.Param),
		Message: u.sanitize("provider error: " + orDefault(f.Message, "unspecified error")),
	}
}

// sanitize removes the API key from s wherever it appears.
func (u *Upstream) sanitize(s string) string {
	return pluginapi.Redact(s, u.APIKey)
}

// logError logs a failed call: upstream failures at warn, refusals the
// client caused at debug. Messages are sanitized again in case an error
// did not come from this file.
func (u *Upstream) logError(op string, err error, requestID string) {
	if u.Logger == nil {
		return
	}
	var pe *pluginapi.ProviderError
	switch {
	case errors.As(err, &pe) && pe.Status >= 500:
		if u.Logger.IsWarn() {
			u.Logger.Warn("provider call failed", "op", op, "status", pe.Status, "type", pe.Type,
				"code", pe.Code, "error", u.sanitize(pe.Message), "request_id", requestID)
		}
	case pe != nil:
		if u.Logger.IsDebug() {
			u.Logger.Debug("provider refused call", "op", op, "status", pe.Status, "type", pe.Type,
				"code", pe.Code, "error", u.sanitize(pe.Message), "request_id", requestID)
		}
	default: // the caller went away, or send failed
		if u.Logger.IsDebug() {
			u.Logger.Debug("provider call ended", "op", op, "error", u.sanitize(err.Error()), "request_id", requestID)
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ---- error bodies ----

type errorFields struct {
	Message, Type, Code, Param string
}

// parseErrorBody extracts the error of an upstream answer: OpenAI's
// {"error":{message,type,code,param}}, {"error":"text"}, {"message":…} or
// FastAPI's {"detail":…}; anything else yields its first 500 bytes.
func parseErrorBody(body []byte) errorFields {
	body = bytes.TrimSpace(body)
	if isObject(body) {
		var env struct {
			Error   json.RawMessage `json:"error"`
			Message json.RawMessage `json:"message"`
			Detail  json.RawMessage `json:"detail"`
			Type    json.RawMessage `json:"type"`
			Code    json.RawMessage `json:"code"`
			Param   json.RawMessage `json:"param"`
		}
		if json.Unmarshal(body, &env) == nil {
			var f errorFields
			if !isNull(env.Error) {
				f = errorFieldsOf(env.Error)
			} else {
				f = errorFields{
					Message: rawText(env.Message), Type: rawText(env.Type),
					Code: rawText(env.Code), Param: rawText(env.Param),
				}
				if f.Message == "" {
					f.Message = rawText(env.Detail)
				}
			}
			if f.Message != "" {
				return f
			}
		}
	}
	return errorFields{Message: snippet(body, errorSnippetBytes)}
}

// errorFieldsOf reads an "error" value: an object or a bare string.
func errorFieldsOf(raw json.RawMessage) errorFields {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return errorFields{Message: rawText(raw)}
	}
	var obj struct {
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   json.RawMessage `json:"param"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return errorFields{Message: snippet(raw, errorSnippetBytes)}
	}
	f := errorFields{
		Message: rawText(obj.Message), Type: rawText(obj.Type),
		Code: rawText(obj.Code), Param: rawText(obj.Param),
	}
	if f.Message == "" {
		f.Message = snippet(raw, errorSnippetBytes)
	}
	return f
}

// rawText renders a JSON value as text: a string unquoted, null as "",
// anything else (a number code, an array of details) as its JSON.
func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return pluginapi.Truncate(s, maxMessageBytes)
		}
	}
	return snippet(raw, maxMessageBytes)
}

// isObject reports whether b is a JSON object (by its first byte; the
// decoder checks the rest).
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// snippet returns at most n bytes of b as valid UTF-8 text.
func snippet(b []byte, n int) string {
	return pluginapi.Truncate(string(bytes.TrimSpace(b)), n)
}

func rawInt(raw json.RawMessage) int64 {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return 0
	}
	if raw[0] == '"' && len(raw) >= 2 {
		raw = raw[1 : len(raw)-1]
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f > -1<<62 && f < 1<<62 {
		return int64(f) // a time: one beyond int64 is no time at all
	}
	return 0
}

// ---- usage ----

// usageJSON accepts integer or float counts, and the input/output names
// some OpenAI-compatible servers use.
type usageJSON struct {
	PromptTokens     float64 `json:"prompt_tokens"`
	CompletionTokens float64 `json:"completion_tokens"`
	TotalTokens      float64 `json:"total_tokens"`
	InputTokens      float64 `json:"input_tokens"`
	OutputTokens     float64 `json:"output_tokens"`
	// PromptTokensDetails.CachedTokens is OpenAI's count of the prompt
	// tokens read from its prompt cache; CacheCreationInputTokens is the
	// count of those written to one, by the servers that report it.
	PromptTokensDetails struct {
		CachedTokens float64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CacheCreationInputTokens float64 `json:"cache_creation_input_tokens"`
}

func (j *usageJSON) usage() pluginapi.Usage {
	u := pluginapi.Usage{
		PromptTokens:     int64(j.PromptTokens),
		CompletionTokens: int64(j.CompletionTokens),
		TotalTokens:      int64(j.TotalTokens),
	}
	if u.PromptTokens == 0 {
		u.PromptTokens = int64(j.InputTokens)
	}
	if u.CompletionTokens == 0 {
		u.CompletionTokens = int64(j.OutputTokens)
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	// Kept within the prompt: a cache count above it is not believed.
	u.CachedPromptTokens = min(max(int64(j.PromptTokensDetails.CachedTokens), 0), u.PromptTokens)
	u.CacheWriteTokens = min(max(int64(j.CacheCreationInputTokens), 0), u.PromptTokens-u.CachedPromptTokens)
	return u
}

// ---- bodies ----

var errTooLarge = errors.New("response too large")

// bufPool holds read buffers for bodies of unknown length.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

const maxPooledBuf = 1 << 20

// readBody reads a whole 2xx body of at most limit bytes into a new slice
// and releases the connection. The result is the only allocation when the
// length is known.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	if cl := resp.ContentLength; cl >= 0 {
		if cl > limit {
			resp.Body.Close()
			return nil, errTooLarge
		}
		b := make([]byte, cl)
		_, err := io.ReadFull(resp.Body, b)
		resp.Body.Close() // at EOF: the last read of a sized body reports it
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	b, err := readLimited(resp.Body, limit) // to EOF, so the connection is reused
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	return b, nil
}

// readLimited reads r to EOF into a pooled buffer and returns a copy;
// errTooLarge past limit.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	p := bufPool.Get().(*[]byte)
	b := (*p)[:0]
	var err error
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		var n int
		n, err = r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			err = errTooLarge
			break
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			break
		}
	}
	out := bytes.Clone(b)
	if cap(b) <= maxPooledBuf {
		*p = b[:0]
		bufPool.Put(p)
	}
	return out, err
}

// drainClose reads what is left of a body, bounded in bytes and in time,
// and closes it, so that the connection goes back to the pool. An upstream
// that holds the body open after its answer costs the connection, not the
// caller's wait.
func drainClose(body io.ReadCloser) {
	stop := time.AfterFunc(drainWait, func() { body.Close() })
	defer stop.Stop()
	p := bufPool.Get().(*[]byte)
	b := (*p)[:cap(*p)]
	for total := 0; total < drainLimit; {
		n, err := body.Read(b)
		total += n
		if err != nil {
			break
		}
	}
	bufPool.Put(p)
	body.Close()
}

// ---- request rewrite ----

// streamRequestBody returns body with "stream": true and, when
// includeUsage, "stream_options.include_usage": true merged into whatever
// stream_options the client sent. Every other member keeps its value's
// exact bytes (they are copied, not re-encoded); member order becomes
// sorted by name.
func streamRequestBody(body []byte, includeUsage bool) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("body is null")
	}
	m["stream"] = rawTrue
	if includeUsage {
		var opts map[string]json.RawMessage
		if so := m["stream_options"]; isObject(so) {
			_ = json.Unmarshal(so, &opts)
		}
		if opts == nil {
			opts = make(map[string]json.RawMessage, 1)
		}
		opts["include_usage"] = rawTrue
		m["stream_options"] = appendObject(nil, opts)
	}
	return appendObject(make([]byte, 0, len(body)+48), m), nil
}

// appendObject writes m as a JSON object with its raw values verbatim
// (json.Marshal would compact them and escape <, > and &).
func appendObject(dst []byte, m map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendKey(dst, k)
		dst = append(dst, ':')
		dst = append(dst, m[k]...)
	}
	return append(dst, '}')
}

func appendKey(dst []byte, k string) []byte {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c == '"' || c == '\\' {
			q, _ := json.Marshal(k)
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, k...)
	return append(dst, '"')
}
