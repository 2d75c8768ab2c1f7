// Package anthropic is svc's provider for Anthropic's Messages API: it
// takes chat-completions requests, asks POST /v1/messages, and answers in
// the chat-completions format (streamed or not). See the plugin's README
// for what is translated and what is refused.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// DefaultBaseURL is the upstream used when the configuration names none.
const DefaultBaseURL = "https://api.anthropic.com"

// Version is the anthropic-version header every request carries.
const Version = "2023-06-01"

const (
	// DefaultMaxResponseBytes bounds a non-streamed answer and a single
	// streamed event.
	DefaultMaxResponseBytes = 32 << 20

	maxErrorBodyBytes  = 64 << 10
	maxModelsBodyBytes = 8 << 20
	maxModelPages      = 50 // of GET /v1/models, 1000 models each
	maxMessageBytes    = 4096
	maxTypeBytes       = 128 // of an error's type, which is also its code
	drainLimit         = 256 << 10
	drainWait          = 50 * time.Millisecond

	userAgent = "svc-provider-anthropic"

	typeInvalid     = "invalid_request_error"
	typeUpstream    = "upstream_error"
	typeRateLimit   = "rate_limit_error"
	codeAuth        = pluginapi.CodeUpstreamAuthFailed
	codeBilling     = pluginapi.CodeUpstreamBilling
	codeTimeout     = pluginapi.CodeTimeout
	codeUnreachable = pluginapi.CodeUpstreamUnreachable
	codeTooLarge    = pluginapi.CodeResponseTooLarge
	codeBadResponse = pluginapi.CodeBadResponse
)

// Provider answers chat completions from Anthropic's Messages API. It is
// safe for concurrent use.
type Provider struct {
	messagesURL string
	modelsURL   string
	apiKey      string
	timeout     time.Duration
	headers     http.Header // every request's, built once
	client      *http.Client
	log         hclog.Logger
	maxResponse int64
	now         func() time.Time
}

var _ pluginapi.Provider = (*Provider)(nil)

// New returns the provider cfg describes: cfg.BaseURL (default
// DefaultBaseURL, "/v1/messages" and "/v1/models" appended), cfg.APIKey
// sent as x-api-key (none when empty), cfg.Headers on every request, and
// cfg.Timeout bounding each call until its answer (a stream: its first
// event; Models: its last page). log may be nil.
func New(cfg pluginapi.ProviderConfig, log hclog.Logger) (pluginapi.Provider, error) {
	return newProvider(cfg, log)
}

func newProvider(cfg pluginapi.ProviderConfig, log hclog.Logger) (*Provider, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, errors.New("anthropic: base URL must be an absolute http(s) URL without credentials")
	}
	if err := cfg.Validate(); err != nil {
		return nil, errors.New("anthropic: " + err.Error())
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	h := make(http.Header, len(cfg.Headers)+5)
	for k, v := range cfg.Headers {
		switch http.CanonicalHeaderKey(k) {
		case "Authorization", "X-Api-Key", "Host":
			continue // only cfg.APIKey is sent as the key, to the base URL's host
		}
		h.Set(k, v)
	}
	if h.Get("User-Agent") == "" { // the operator's wins
		h.Set("User-Agent", userAgent)
	}
	if h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", Version)
	}
	if cfg.APIKey != "" {
		h.Set("X-Api-Key", cfg.APIKey)
	}
	return &Provider{
		messagesURL: base + "/v1/messages",
		modelsURL:   base + "/v1/models",
		apiKey:      cfg.APIKey,
		timeout:     cfg.Timeout,
		headers:     h,
		client:      pluginapi.NewUpstreamClient(),
		log:         log,
		maxResponse: DefaultMaxResponseBytes,
		now:         time.Now,
	}, nil
}

// Chat implements pluginapi.Provider.
func (p *Provider) Chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	res, err := p.chat(ctx, req)
	if err != nil {
		p.logError("chat", err, req.RequestID)
	}
	return res, err
}

// StreamChat implements pluginapi.Provider: each Messages API event
// becomes the chat.completion.chunk it means, and with req.IncludeUsage a
// last, usage-only chunk reports the call's tokens.
func (p *Provider) StreamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	err := p.streamChat(ctx, req, send)
	if err != nil {
		p.logError("stream", err, req.RequestID)
	}
	return err
}

// Models implements pluginapi.Provider from GET /v1/models, every page.
func (p *Provider) Models(ctx context.Context) ([]pluginapi.Model, error) {
	models, err := p.models(ctx)
	if err != nil {
		p.logError("models", err, "")
	}
	return models, err
}

// deadline bounds a call by the configured timeout: stop ends the bound
// (once the answer or the first event came), and fired reports that it
// cancelled the call.
type deadline struct {
	timer *time.Timer
	fired atomic.Bool
}

// withTimeout's cancel also stops the timer, so that a call ending on any
// path (an error before the answer, say) does not leave it pending until
// the timeout passes.
func (p *Provider) withTimeout(ctx context.Context) (context.Context, context.CancelFunc, *deadline) {
	ctx, cancel := context.WithCancel(ctx)
	d := &deadline{}
	if p.timeout <= 0 {
		return ctx, cancel, d
	}
	d.timer = time.AfterFunc(p.timeout, func() { d.fired.Store(true); cancel() })
	return ctx, func() { d.timer.Stop(); cancel() }, d
}

func (d *deadline) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}

func (p *Provider) chat(ctx context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	mr, err := translate(req.Body, false)
	if err != nil {
		return pluginapi.ChatResponse{}, err
	}
	body, err := json.Marshal(mr)
	if err != nil {
		return pluginapi.ChatResponse{}, invalid("", "request cannot be encoded: "+err.Error())
	}
	ctx, cancel, dl := p.withTimeout(ctx)
	defer cancel()
	resp, err := p.do(ctx, dl, http.MethodPost, p.messagesURL, body, req.Call(), "application/json")
	if err != nil {
		return pluginapi.ChatResponse{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return pluginapi.ChatResponse{}, p.statusError(resp)
	}
	raw, err := readBody(resp, p.maxResponse)
	dl.stop()
	if err != nil {
		return pluginapi.ChatResponse{}, p.readError(ctx, dl, err, "response")
	}
	msg, err := p.readMessage(raw)
	if err != nil {
		return pluginapi.ChatResponse{}, err
	}
	out, usage := completionOf(msg, p.now().Unix())
	return pluginapi.ChatResponse{Body: out, Usage: usage}, nil
}

// readMessage reads a 2xx answer's body: a message, or an error sent with
// a 2xx status ({"type":"error",…}), or anything else, a bad response.
func (p *Provider) readMessage(raw []byte) (*msgResponse, error) {
	var msg msgResponse
	err := json.Unmarshal(raw, &msg)
	if err == nil && msg.Type == "error" && msg.Error != nil {
		return nil, p.errorEvent(msg.Error.Type, msg.Error.Message)
	}
	// The documentation's own examples sometimes leave "type" out; an id
	// or content is what makes a message.
	if err != nil || !isObject(raw) || msg.Type != "" && msg.Type != "message" || msg.ID == "" && msg.Content == nil {
		return nil, &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
			Message: "provider returned a response that is not a message",
		}
	}
	return &msg, nil
}

func (p *Provider) streamChat(ctx context.Context, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	mr, err := translate(req.Body, true)
	if err != nil {
		return err
	}
	body, err := json.Marshal(mr)
	if err != nil {
		return invalid("", "request cannot be encoded: "+err.Error())
	}
	ctx, cancel, dl := p.withTimeout(ctx)
	defer cancel()
	resp, err := p.do(ctx, dl, http.MethodPost, p.messagesURL, body, req.Call(), "text/event-stream")
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return p.statusError(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		drainClose(resp.Body)
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
			Message: "provider answered without an event stream",
		}
	}
	t := &streamTranslator{includeUsage: req.IncludeUsage, created: p.now().Unix(), send: send}
	err = readEvents(resp.Body, p.maxResponse, func(event, data []byte) error {
		dl.stop() // the first event came: the rest of the stream is unbounded
		return t.event(p, event, data)
	})
	if !t.stopped && t.finished && (err == nil || t.cut(ctx, err)) {
		// Cut after the finish chunk, before message_stop: the answer is
		// whole, so it ends as message_stop would have ended it.
		resp.Body.Close()
		return t.end()
	}
	if err == nil && !t.stopped {
		err = &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
			Message: "provider stream ended before message_stop",
		}
	}
	if err != nil {
		resp.Body.Close() // aborted: do not read on
		var pe *pluginapi.ProviderError
		if errors.As(err, &pe) || t.sendErr != nil && errors.Is(err, t.sendErr) {
			return err
		}
		return p.readError(ctx, dl, err, "stream")
	}
	drainClose(resp.Body)
	return nil
}

// do sends one request. Its errors are ready to return: ctx.Err() when the
// caller went away, otherwise a *ProviderError.
func (p *Provider) do(ctx context.Context, dl *deadline, method, target string, body []byte, c pluginapi.Call, accept string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeUnreachable,
			Message: "provider URL is invalid",
		}
	}
	for k, v := range p.headers {
		r.Header[k] = v
	}
	r.Header.Set("Accept", accept)
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	c.SetHeaders(r.Header)
	resp, err := p.client.Do(r)
	if err != nil {
		if errors.Is(err, pluginapi.ErrHeadersTooLarge) {
			return nil, &pluginapi.ProviderError{
				Status: http.StatusBadGateway, Type: typeUpstream, Code: codeTooLarge,
				Message: "provider answer's headers too large",
			}
		}
		return nil, p.failure(ctx, dl, err, "provider unreachable: ")
	}
	return resp, nil
}

// readError maps a failure while reading a 2xx body.
func (p *Provider) readError(ctx context.Context, dl *deadline, err error, what string) error {
	if errors.Is(err, errTooLarge) {
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeTooLarge,
			Message: "provider " + what + " too large",
		}
	}
	return p.failure(ctx, dl, err, "provider "+what+" interrupted: ")
}

// failure maps a network failure: the caller's cancellation stays itself;
// the configured timeout, a deadline and anything else become a 502.
func (p *Provider) failure(ctx context.Context, dl *deadline, err error, prefix string) error {
	timedOut := dl != nil && dl.fired.Load()
	if cerr := ctx.Err(); errors.Is(cerr, context.Canceled) && !timedOut {
		return cerr
	}
	var ne net.Error
	if timedOut || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeTimeout,
			Message: "provider timed out",
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil { // not the URL: the failure
		err = ue.Err
	}
	return &pluginapi.ProviderError{
		Status: http.StatusBadGateway, Type: typeUpstream, Code: codeUnreachable,
		Message: p.sanitize(prefix + err.Error()),
	}
}

// ---- errors ----

// apiError is the Messages API's error body: {"type":"error","error":{…}}.
type apiError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// statusOfType is the HTTP status each documented error type comes with,
// for an error reported inside a stream.
var statusOfType = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// errorEvent maps an error reported after a 2xx status (in a stream's
// error event, or a body): the status is the one its type comes with.
func (p *Provider) errorEvent(typ, msg string) *pluginapi.ProviderError {
	status, ok := statusOfType[typ]
	if !ok {
		status = http.StatusBadGateway
	}
	return p.mapError(status, typ, msg)
}

// statusError reads a non-2xx answer, releases the connection and maps it.
func (p *Provider) statusError(resp *http.Response) error {
	body, _ := readLimited(resp.Body, maxErrorBodyBytes)
	drainClose(resp.Body)
	var e apiError
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		e.Error.Message = pluginapi.Truncate(string(bytes.TrimSpace(body)), 500)
	}
	pe := p.mapError(resp.StatusCode, e.Error.Type, e.Error.Message)
	pe.RetryAfter = pluginapi.RetryAfter(resp, time.Now())
	return pe
}

// mapError is the mapping of an Anthropic error (status, type, message) to
// what svc's client sees. The upstream status is kept, so that svc can tell
// a caller's mistake (4xx, answered as is) from a failure to retry or fall
// back from (429, 5xx including 529 overloaded). 401 and 403 (svc's key)
// and 402 (billing_error, the operator's account) are 502s with codes that
// send a router to the next provider: the client never sees a 401 or 403
// caused by svc's key, nor the upstream's words about it.
func (p *Provider) mapError(status int, typ, msg string) *pluginapi.ProviderError {
	msg = pluginapi.Truncate(p.sanitize(msg), maxMessageBytes)
	typ = pluginapi.Truncate(p.sanitize(typ), maxTypeBytes)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeAuth,
			Message: "provider rejected svc's credentials (HTTP " + strconv.Itoa(status) + " " + orDefault(typ, "error") +
				"); the operator must check the provider's API key",
		}
	case status == http.StatusPaymentRequired:
		// The operator's account, not the caller's request: a failure of
		// the provider, which svc may fall back from.
		return &pluginapi.ProviderError{
			Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBilling,
			Message: "provider refused the call for the operator's account (HTTP 402): " + orDefault(msg, "payment required"),
		}
	case status == http.StatusTooManyRequests:
		return &pluginapi.ProviderError{
			Status: status, Type: typeRateLimit, Code: orDefault(typ, typeRateLimit),
			Message: orDefault(msg, "provider rate limit exceeded"),
		}
	case status == http.StatusNotFound:
		return &pluginapi.ProviderError{
			Status: status, Type: typeInvalid, Code: "model_not_found", Param: "model",
			Message: orDefault(msg, "model not found"),
		}
	case status >= 400 && status < 500:
		return &pluginapi.ProviderError{
			Status: status, Type: typeInvalid, Code: typ,
			Message: orDefault(msg, http.StatusText(status)),
		}
	}
	text := "provider error (HTTP " + strconv.Itoa(status)
	if typ != "" {
		text += " " + typ
	}
	text += ")"
	if msg != "" {
		text += ": " + msg
	}
	if status < 500 { // a 1xx or 3xx is no answer either
		status = http.StatusBadGateway
	}
	return &pluginapi.ProviderError{Status: status, Type: typeUpstream, Code: typ, Message: text}
}

// sanitize removes the API key from s wherever it appears.
func (p *Provider) sanitize(s string) string {
	return pluginapi.Redact(s, p.apiKey)
}

// logError logs a failed call: upstream failures at warn, refusals the
// caller caused at debug.
func (p *Provider) logError(op string, err error, requestID string) {
	var pe *pluginapi.ProviderError
	switch {
	case errors.As(err, &pe) && (pe.Status >= 500 || pe.Status == 429 || pe.Code == codeAuth):
		p.log.Warn("provider call failed", "op", op, "status", pe.Status, "type", pe.Type,
			"code", pe.Code, "error", p.sanitize(pe.Message), "request_id", requestID)
	case pe != nil:
		p.log.Debug("provider refused call", "op", op, "status", pe.Status, "type", pe.Type,
			"code", pe.Code, "error", p.sanitize(pe.Message), "request_id", requestID)
	default:
		p.log.Debug("provider call ended", "op", op, "error", p.sanitize(err.Error()), "request_id", requestID)
	}
}

// ---- models ----

type modelPage struct {
	Data []struct {
		ID        string `json:"id"`
		CreatedAt string `json:"created_at"`
	} `json:"data"`
	HasMore bool   `json:"has_more"`
	LastID  string `json:"last_id"`
}

// models reads every page within the configured timeout, all together.
func (p *Provider) models(ctx context.Context) ([]pluginapi.Model, error) {
	ctx, cancel, dl := p.withTimeout(ctx)
	defer cancel()
	var models []pluginapi.Model
	after := ""
	budget := min(maxModelsBodyBytes, p.maxResponse) // of all the pages together
	for page := 0; page < maxModelPages && budget > 0; page++ {
		target := p.modelsURL + "?limit=1000"
		if after != "" {
			target += "&after_id=" + url.QueryEscape(after)
		}
		resp, err := p.do(ctx, dl, http.MethodGet, target, nil, pluginapi.Call{}, "application/json")
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return nil, p.statusError(resp)
		}
		body, err := readBody(resp, budget)
		if err != nil {
			return nil, p.readError(ctx, dl, err, "response")
		}
		budget -= int64(len(body))
		var list modelPage
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, &pluginapi.ProviderError{
				Status: http.StatusBadGateway, Type: typeUpstream, Code: codeBadResponse,
				Message: "provider returned an invalid model list",
			}
		}
		for _, d := range list.Data {
			if d.ID == "" {
				continue
			}
			if len(models) == pluginapi.MaxModels {
				return models, nil
			}
			m := pluginapi.Model{ID: d.ID, OwnedBy: "anthropic", Kind: pluginapi.KindChat}
			if at, err := time.Parse(time.RFC3339, d.CreatedAt); err == nil {
				m.Created = at.Unix()
			}
			models = append(models, m)
		}
		if !list.HasMore || list.LastID == "" || list.LastID == after {
			return models, nil
		}
		after = list.LastID
	}
	return models, nil // a list longer than any real one: what was read
}

// ---- bodies ----

var errTooLarge = errors.New("response too large")

// readBody reads a whole 2xx body of at most limit bytes and releases the
// connection.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, errTooLarge
	}
	b, err := readLimited(resp.Body, limit)
	resp.Body.Close()
	return b, err
}

// readLimited reads r to EOF; errTooLarge past limit.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// drainClose reads what is left of a body, bounded in bytes and time, and
// closes it, so that the connection goes back to the pool.
func drainClose(body io.ReadCloser) {
	stop := time.AfterFunc(drainWait, func() { body.Close() })
	defer stop.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
	body.Close()
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
