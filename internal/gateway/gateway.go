// Package gateway is the chat-completions pipeline: identify, validate, let
// policies, caches and artifacts have their say, call the provider, and
// record the run. It knows nothing of HTTP; the handler adapts it.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/redact"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Recorder stores a finished run.
type Recorder interface {
	Record(ctx context.Context, rec *ledger.Record) error
}

// Gateway runs chat-completions calls.
type Gateway struct {
	router    *providers.Router
	recorder  Recorder
	governor  Governor
	cache     *cache.Cache
	redaction Redaction
	learner   Learner
	canary    Canary
	spend     Spend
	// release ends a reservation of a call that ends without a run.
	release func(*spend.Reservation)
	now     func() time.Time
	secrets []string // never shown in an error
	// traceContent records prompts and answers on the call's span.
	traceContent bool
}

// Options configure a Gateway.
type Options struct {
	// Router sends each call to its providers. Nil: Provider alone, named
	// ProviderName, one attempt per call (the tests' stand-ins).
	Router       *providers.Router
	Provider     pluginapi.Provider
	ProviderName string // "mock" or "openai", recorded on runs
	Recorder     Recorder
	// Prices is the price table; the router prices calls with it, where a
	// provider has no price of its own.
	Prices    *pricing.Table
	Governor  Governor     // nil: no policies
	Cache     *cache.Cache // nil: no exact cache
	Redaction Redaction    // nil: runs keep their text as it was
	Learner   Learner      // nil: no artifacts
	Canary    Canary       // nil: no canary
	// Spend counts what calls cost, for the rules and budgets that read
	// it; nil: spend is never gathered (budgets see none).
	Spend Spend
	Now   func() time.Time
	// Secrets are stripped from any provider error text (the provider key).
	Secrets []string
	// TraceContent records prompts and answers on the call's span
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), masked when the
	// tenant has redaction on.
	TraceContent bool
}

// New returns a gateway.
func New(o Options) *Gateway {
	if o.Now == nil {
		o.Now = time.Now
	}
	var secrets []string
	for _, s := range o.Secrets {
		if s != "" {
			secrets = append(secrets, s)
		}
	}
	router := o.Router
	if router == nil {
		router = providers.NewRouter(providers.Single(o.ProviderName, o.ProviderName, o.Provider), o.Now)
	}
	if o.Prices != nil {
		router.SetPrices(o.Prices)
	}
	return &Gateway{router: router, recorder: o.Recorder,
		governor: o.Governor, cache: o.Cache, redaction: o.Redaction, learner: o.Learner, canary: o.Canary,
		spend: o.Spend, release: (*spend.Reservation).Release, now: o.Now,
		secrets: secrets, traceContent: o.TraceContent}
}

// Redaction tells whether a tenant's stored text is to be masked.
type Redaction interface {
	Redaction(ctx context.Context, tenantID string) bool
}

// Result is a completed non-streamed call.
type Result struct {
	RunID string
	Route string
	Body  []byte
}

// call is one request on its way through the pipeline.
type call struct {
	// span is the call's span; one that does not record when svc traces
	// nothing.
	span  trace.Span
	id    *auth.Identity
	req   *Request
	run   *ledger.Run
	start time.Time
	// policy.evaluated events, for the ledger: on the request, before the
	// route is decided; on the tool calls of the answer, after it came.
	chatVerdicts, toolVerdicts []ledger.Event
	standing                   *ledger.Standing // the agent's standing after the verdicts
	plan                       *providers.Plan  // the providers the call goes to, and, once made, its attempts
	exact                      *exactLookup     // what the exact cache had; nil when not looked up
	hit                        *cache.Entry     // the cached answer served, if one was
	art                        *artifactLookup  // what the serving index had; nil when nothing
	providerFailure            error            // why the provider failed, when a cached answer stood in
	// estimatedUSD is what the call is expected to cost, when a rule or
	// a budget may read it (request.estimatedCostUsd).
	estimatedUSD float64
	// reservation counts the call's estimate as in flight, from its
	// admission on its spend to its run's recording; nil when not
	// admitted on spend.
	reservation *spend.Reservation
	// spent is the spend the call was judged with, for the refusal of a
	// budget to say; nil when not judged on its spend.
	spent *policy.Spend
	// masking is set by finish when the tenant's stored text is masked.
	masking bool
	// embeddings says the call is an embeddings call.
	embeddings     bool
	calledProvider bool
	// failureCode is the error code a call the provider failed was
	// answered with, told on its last provider.failed event (a stored
	// response's error reads it back).
	failureCode string
}

func (g *Gateway) begin(id *auth.Identity, req *Request) *call {
	start := g.now()
	return &call{id: id, req: req, start: start, run: &ledger.Run{
		ID: ids.Ordered("run", start), TenantID: id.TenantID, CreatedAt: start.UTC().Truncate(time.Millisecond),
		Route: ledger.RouteLive, Model: req.Model, App: id.App, Agent: id.Agent, Subject: id.Subject,
		Mode: string(id.Mode), KeyID: id.KeyID, Stream: req.Stream, Request: req.Body,
		Explanation: liveExplanation(),
	}}
}

// Complete answers a non-streamed call through the provider and records it.
// The run id is returned with the error too, when a run was recorded.
func (g *Gateway) Complete(ctx context.Context, id *auth.Identity, req *Request) (res Result, err error) {
	ctx, c := g.start(ctx, id, req, semconv.GenAIOperationNameChat)
	defer g.end(ctx, c, &res, &err)
	if err := g.route(ctx, c); err != nil {
		return Result{RunID: c.run.ID, Route: c.run.Route}, err
	}
	if err := g.governChat(ctx, c); err != nil {
		return Result{RunID: c.run.ID, Route: c.run.Route}, err
	}
	g.lookupExact(ctx, c)
	if !c.servable() {
		g.lookupArtifact(ctx, c)
	}
	var body []byte
	if c.servable() {
		body = g.serveExact(c, nil)
	} else if c.artifactServable() {
		body = g.serveArtifact(c)
		if err := g.finish(ctx, c, httpstatus.Of(nil), ""); err != nil {
			return Result{}, err
		}
		return Result{RunID: c.run.ID, Route: c.run.Route, Body: body}, nil
	} else {
		c.calledProvider = true
		res, err := g.router.Chat(ctx, c.plan, pluginapi.ChatRequest{Body: req.Body, Model: req.Model, RequestID: c.run.ID})
		if err != nil {
			fb := g.fallback(c, err)
			if fb == nil {
				return Result{RunID: c.run.ID, Route: c.run.Route}, g.fail(ctx, c, err)
			}
			body = g.serveExact(c, fb)
		} else {
			body = res.Body
			c.run.Response = res.Body
			g.price(c, &res.Usage)
			g.shadowEvaluate(c, body)
		}
	}
	// A cached answer never skips a policy: its tool calls are judged too.
	if err := g.governToolCalls(ctx, c, body); err != nil {
		return Result{RunID: c.run.ID, Route: c.run.Route}, err
	}
	if err := g.finish(ctx, c, httpstatus.Of(nil), ""); err != nil {
		return Result{}, err
	}
	g.storeExact(c, body)
	return Result{RunID: c.run.ID, Route: c.run.Route, Body: body}, nil
}

// fallback decides whether a cached answer, even an expired one, stands in
// for a provider that failed: only for a provider-side failure, in optimize
// mode.
func (g *Gateway) fallback(c *call, err error) *fallbackDetail {
	if c.exact == nil || c.exact.found == cache.Miss || c.id.Mode != auth.Optimize {
		return nil
	}
	perr := g.providerError(err)
	if !errs.Is(perr, errs.Upstream) {
		return nil
	}
	e := c.exact.entry
	return &fallbackDetail{Used: true, Reason: errs.Public(perr), Tier: cache.ExactResponse,
		Stale: c.exact.found == cache.Stale, StoredAt: e.StoredAt.UTC(), cause: perr}
}

// Sink receives a streamed answer. Begin is called once, before the first
// chunk, so that an error before it can still be answered with a status.
type Sink interface {
	Begin(runID, route string) error
	Chunk(data []byte) error
}

// clientSink is the Sink of a call, whose write failures say that the
// client went away: they are no provider's failure.
type clientSink struct{ sink Sink }

func (s clientSink) Begin(runID, route string) error { return leftIf(s.sink.Begin(runID, route)) }

func (s clientSink) Chunk(data []byte) error { return leftIf(s.sink.Chunk(data)) }

// clientLeft is a failed write to the client.
type clientLeft struct{ err error }

func (e *clientLeft) Error() string { return "the client went away: " + e.err.Error() }

func (e *clientLeft) Unwrap() error { return e.err }

// leftIf is err as the client's going away, but for a sink that refuses
// an answer it cannot carry to the client (a ProviderError: one too large
// to translate, say), which fails the call as the provider's doing.
func leftIf(err error) error {
	var pe *pluginapi.ProviderError
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return &clientLeft{err: err}
}

// Stream answers a streamed call, passing chunks to sink as they arrive, and
// records the run before returning: the caller ends the stream after that.
// Result carries no Body: the answer went to sink.
func (g *Gateway) Stream(ctx context.Context, id *auth.Identity, req *Request, client Sink) (_ Result, err error) {
	sink := clientSink{sink: client}
	ctx, c := g.start(ctx, id, req, semconv.GenAIOperationNameChat)
	defer g.end(ctx, c, nil, &err)
	if err := g.route(ctx, c); err != nil {
		return Result{RunID: c.run.ID, Route: c.run.Route}, err
	}
	if err := g.governChat(ctx, c); err != nil {
		return Result{RunID: c.run.ID, Route: c.run.Route}, err
	}
	g.lookupExact(ctx, c)
	if c.servable() {
		return g.streamExact(ctx, c, sink, nil)
	}
	g.lookupArtifact(ctx, c)
	if c.artifactServable() {
		return g.streamArtifact(ctx, c, sink)
	}
	res := Result{RunID: c.run.ID, Route: c.run.Route}
	c.calledProvider = true
	// Where tool calls are enforced (tool rules, an optimize key, tools on
	// offer), the answer is held until its tool calls are judged: a stream
	// cannot take back what it sent.
	hold := g.holdsStream(c)
	var (
		usage   *pluginapi.Usage
		started bool
		chunks  = make([]json.RawMessage, 0, 32)
		kept    int  // bytes of chunks
		cut     bool // chunks past maxKeptStream were relayed, not kept
	)
	err = g.router.StreamChat(ctx, c.plan, pluginapi.ChatRequest{Body: req.Body, Model: req.Model, IncludeUsage: true, RequestID: c.run.ID},
		func(ch pluginapi.ChatChunk) error {
			if ch.Usage != nil {
				usage = ch.Usage
			}
			if ch.UsageOnly && !req.IncludeUsage {
				return nil // svc asked for usage to price the call; the client did not
			}
			if !oneLineJSON(ch.Data) {
				return errBadChunk
			}
			if kept += len(ch.Data); kept > maxKeptStream {
				if hold {
					return errStreamTooLarge
				}
				cut = true
			} else {
				chunks = append(chunks, ch.Data)
			}
			if hold {
				return nil
			}
			if !started {
				started = true
				if err := sink.Begin(c.run.ID, c.run.Route); err != nil {
					return err
				}
			}
			return sink.Chunk(ch.Data)
		})
	c.run.Response = streamRecord(chunks, cut)
	if err != nil {
		if started || len(chunks) > 0 {
			// The client has the status line and part of an answer (or a
			// held stream had part of one): the provider may bill it, so
			// the run records usage unknown unless the provider reported
			// it before failing.
			g.price(c, usage)
		} else if fb := g.fallback(c, err); fb != nil {
			c.run.Response = nil
			return g.streamExact(ctx, c, sink, fb)
		}
		return res, g.fail(ctx, c, err)
	}
	g.price(c, usage)
	if c.art != nil && !cut {
		if body, ok := assembleCompletion(chunks, nil, answerText); ok {
			g.shadowEvaluate(c, body)
		}
	}
	if hold {
		if err := g.governTools(ctx, c, streamedToolCalls(chunks), false); err != nil {
			return Result{RunID: c.run.ID, Route: c.run.Route}, err
		}
		if err := g.replay(sink, c, chunks); err != nil {
			return res, g.fail(ctx, c, err)
		}
	} else {
		g.governStreamedToolCalls(ctx, c, chunks)
	}
	if err := g.finish(ctx, c, httpstatus.Of(nil), ""); err != nil {
		return res, err
	}
	if c.exact != nil && !cut {
		if body, ok := assembleCompletion(chunks, usageJSON(usage), wholeAnswer); ok {
			g.storeExact(c, body)
		}
	}
	return res, nil
}

// maxKeptStream bounds the chunks of a streamed answer svc keeps, for its
// run's record, the exact cache and the judgement of its tool calls: an
// upstream's stream of any length cannot make svc hold more. A stream
// relayed as it comes goes on past it, its record cut there (and not
// cached); one held to judge its tool calls fails, as a non-streamed
// answer past the provider's bound does.
const maxKeptStream = 32 << 20

var errStreamTooLarge = &pluginapi.ProviderError{Status: http.StatusBadGateway, Type: "upstream_error",
	Code: pluginapi.CodeResponseTooLarge, Message: "the provider's streamed answer is larger than the 32 MiB svc holds to judge its tool calls"}

// errBadChunk ends a stream whose provider sent a chunk that cannot go to
// the client as one event.
var errBadChunk = &pluginapi.ProviderError{Status: http.StatusBadGateway, Type: "upstream_error",
	Code: pluginapi.CodeBadResponse, Message: "the provider sent a stream chunk that is not JSON on one line"}

// oneLineJSON says whether a chunk can go to the client as one event: JSON,
// on one line, which no provider, of any origin, may break out of.
func oneLineJSON(b []byte) bool {
	return json.Valid(b) && bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0
}

// streamRecord is a streamed answer's record in its run: its chunks, each
// checked JSON as it came, and whether they stop short of the answer (cut:
// it was larger than svc keeps).
func streamRecord(chunks []json.RawMessage, cut bool) []byte {
	const head, tail = `{"object":"chat.completion.stream","chunks":[`, `],"cut":true}`
	n := len(head) + len(tail)
	for _, ch := range chunks {
		n += len(ch) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, head...)
	for i, ch := range chunks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, ch...)
	}
	if cut {
		return append(b, tail...)
	}
	return append(b, ']', '}')
}

// streamExact answers a streamed call from the exact cache, replaying the
// cached answer as chunks.
func (g *Gateway) streamExact(ctx context.Context, c *call, sink Sink, fb *fallbackDetail) (Result, error) {
	body := g.serveExact(c, fb)
	if err := g.governToolCalls(ctx, c, body); err != nil {
		return Result{RunID: c.run.ID, Route: c.run.Route}, err
	}
	return g.streamHeld(ctx, c, sink, body)
}

// streamHeld streams an answer svc already holds (a cached one, an
// artifact's) as the chunks of a stream, and records the run.
func (g *Gateway) streamHeld(ctx context.Context, c *call, sink Sink, body []byte) (Result, error) {
	res := Result{RunID: c.run.ID, Route: c.run.Route}
	if err := g.replay(sink, c, completionChunks(body, c.req.IncludeUsage)); err != nil {
		return res, g.fail(ctx, c, err)
	}
	return res, g.finish(ctx, c, httpstatus.Of(nil), "")
}

// streamArtifact answers a streamed call from a promoted artifact, as the
// chunks of its answer.
func (g *Gateway) streamArtifact(ctx context.Context, c *call, sink Sink) (Result, error) {
	body := g.serveArtifact(c)
	return g.streamHeld(ctx, c, sink, body)
}

// maskResponse masks a stored answer. A streamed answer's text is split
// across chunks, where no chunk holds a whole email or card number, so it is
// stored put back together (as the chat.completion the same request answers
// without streaming) and masked as a whole; one that cannot be put back
// together (tool calls) is masked chunk by chunk.
func maskResponse(res []byte, stream bool) []byte {
	if stream && res != nil {
		var s struct {
			Chunks []json.RawMessage `json:"chunks"`
		}
		if json.Unmarshal(res, &s) == nil {
			if whole, ok := assembleCompletion(s.Chunks, nil, answerText); ok {
				return redact.Bytes(whole)
			}
		}
	}
	return redact.Bytes(res)
}

// holdsStream says whether a streamed answer must be held back until its
// tool calls are judged.
func (g *Gateway) holdsStream(c *call) bool {
	return g.governor != nil && c.id.Mode == auth.Optimize && g.governor.Has(policy.Tool) &&
		(len(c.req.Tools) > 0 || bytes.Contains(c.req.Body, []byte(`"functions"`)))
}

// replay sends held chunks.
func (g *Gateway) replay(sink Sink, c *call, chunks []json.RawMessage) error {
	if err := sink.Begin(c.run.ID, c.run.Route); err != nil {
		return err
	}
	for _, ch := range chunks {
		if err := sink.Chunk(ch); err != nil {
			return err
		}
	}
	return nil
}

// Models lists the models of every provider, and the routes' aliases.
func (g *Gateway) Models(ctx context.Context) ([]pluginapi.Model, error) {
	models, err := g.router.Models(ctx)
	if err != nil {
		return nil, g.providerError(err)
	}
	return models, nil
}

// price fills usage and cost, at the price of the provider that answered;
// a call whose usage is unknown, or not believable, is flagged as such
// rather than priced at zero silently.
func (g *Gateway) price(c *call, u *pluginapi.Usage) {
	run := c.run
	if u == nil || (u.PromptTokens == 0 && u.CompletionTokens == 0 && u.TotalTokens == 0) || !u.Believable() {
		run.UsageUnknown = true
		_, known := g.router.Cost(c.plan, pricing.Tokens{})
		run.PriceUnknown = !known
		return
	}
	run.PromptTokens, run.CompletionTokens = u.PromptTokens, u.CompletionTokens
	run.TotalTokens = u.TotalTokens
	if run.TotalTokens == 0 {
		run.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	cost, known := g.router.Cost(c.plan, pricing.Tokens{Prompt: u.PromptTokens, Completion: u.CompletionTokens,
		CachedPrompt: u.CachedPromptTokens, CacheWrite: u.CacheWriteTokens})
	run.CostUSD, run.PriceUnknown = cost, !known
}

// fail records a run that the provider failed, or that its client left,
// and returns the error to answer with.
func (g *Gateway) fail(ctx context.Context, c *call, err error) error {
	var left *clientLeft
	if errors.As(err, &left) || errors.Is(err, context.Canceled) {
		if c.calledProvider && !c.run.UsageUnknown && c.run.TotalTokens == 0 {
			g.price(c, nil) // the provider was called, and may bill: usage unknown, not 0
		}
		if rerr := g.finish(ctx, c, httpstatus.ClientClosed, "the client went away"); rerr != nil {
			return rerr
		}
		return context.Canceled
	}
	perr := g.providerError(err)
	c.failureCode = errs.Code(perr)
	if rerr := g.finish(ctx, c, httpstatus.Of(perr), errs.Public(perr)); rerr != nil {
		return rerr
	}
	return perr
}

// finish records the run with its events and status, the one its caller
// is answered with (httpstatus.Of the answer's error, so that the run and
// the answer agree); it returns once the run is committed, whether or not
// the client is still there.
func (g *Gateway) finish(ctx context.Context, c *call, status int, failure string) error {
	// The run is recorded under the call's span, whichever step ends it.
	ctx = trace.ContextWithSpan(context.WithoutCancel(ctx), c.span)
	end := g.now()
	run := c.run
	masking := g.redaction != nil && g.redaction.Redaction(ctx, run.TenantID)
	c.masking = masking
	if masking {
		// Only what is stored is masked: the caller has, or gets, the
		// answer as it was.
		failure = redact.String(failure)
		run.Request, run.Response = redact.Bytes(run.Request), maskResponse(run.Response, run.Stream)
	}
	run.HTTPStatus = status
	run.Status = ledger.StatusOK
	switch {
	case run.Route == ledger.RouteBlocked:
		run.Status, run.Error = ledger.StatusBlocked, failure
	case failure != "":
		run.Status, run.Error = ledger.StatusError, failure
	}
	run.LatencyMS = float64(end.Sub(c.start).Microseconds()) / 1000
	origin := c.req.Origin
	if masking && origin != nil {
		origin = redact.Bytes(origin)
	}
	events := make([]ledger.Event, 0, 3+len(c.chatVerdicts)+len(c.toolVerdicts))
	events = append(events, ledger.Event{Type: "request.received", At: c.start, Payload: payload(requestEvent{
		Model: run.Model, Stream: run.Stream, Messages: len(c.req.Messages), Tools: len(c.req.Tools),
		App: run.App, Agent: run.Agent, Subject: run.Subject, Mode: run.Mode, Origin: origin,
	})})
	events = append(events, c.chatVerdicts...)
	events = append(events, ledger.Event{Type: "route.decided", At: c.start, Payload: payload(routeEvent{
		Route: run.Route, Reason: run.Explanation.Reason, Policy: run.Explanation.Policy.Decision})})
	if c.hit != nil {
		run.SavedMS = max(0, c.hit.Meta.LatencyMS-run.LatencyMS)
	}
	served := c.art != nil && c.art.serve != nil && run.Route == ledger.RouteArtifact
	if served {
		run.SavedMS = max(0, c.art.serve.AvgLatencyMS-run.LatencyMS)
		c.art.detail.SavedMS = run.SavedMS
	}
	g.explainProviders(c)
	attempt := 0 // the number of the attempt the call's outcome tells of
	if c.plan != nil {
		attempt = len(c.plan.Attempts)
	}
	switch {
	case !c.calledProvider:
		// Stopped before the provider, or answered from the cache.
	case c.providerFailure != nil: // a cached answer stood in for the failed providers
		events = g.failedAttempts(events, c, end)
	case status == httpstatus.ClientClosed: // the call was cut, not failed
		events = g.failedAttempts(events, c, end)
		events = append(events, ledger.Event{Type: "provider.cancelled", At: end, Payload: payload(providerEvent{
			Provider: run.Provider, Status: status, Error: failure, PromptTokens: run.PromptTokens,
			CompletionTokens: run.CompletionTokens, UsageUnknown: run.UsageUnknown, CostUSD: run.CostUSD, LatencyMS: run.LatencyMS,
		})})
	case failure == "" || run.Route == ledger.RouteBlocked:
		events = g.failedAttempts(events, c, end)
		events = append(events, ledger.Event{Type: "provider.completed", At: end, Payload: payload(providerEvent{
			Provider: run.Provider, Status: httpstatus.Of(nil), PromptTokens: run.PromptTokens, CompletionTokens: run.CompletionTokens,
			UsageUnknown: run.UsageUnknown, CostUSD: run.CostUSD, LatencyMS: run.LatencyMS, Attempt: attempt,
		})})
	case attempt > 0: // each failed attempt is told
		events = g.failedAttempts(events, c, end)
		refused := c.failureCode == pluginapi.CodeBadResponse || c.failureCode == pluginapi.CodeResponseTooLarge
		if last := c.plan.Attempts[attempt-1]; last.Outcome == providers.OutcomeOK && refused {
			// The provider answered, and svc refused its answer.
			events = append(events, ledger.Event{Type: "provider.failed", At: end, Payload: payload(providerEvent{
				Provider: last.Provider, Status: status, Error: failure, Code: c.failureCode, LatencyMS: last.LatencyMS, Attempt: attempt,
			})})
		}
	default:
		// No attempt was made (every candidate skipped): no provider
		// failed, and the route explanation says why none was tried.
	}
	if c.hit != nil {
		g.cache.Served(run.TenantID, cache.ExactResponse)
		events = append(events, ledger.Event{Type: "cache.hit", At: end, Payload: payload(cacheHitEvent{
			Tier: string(cache.ExactResponse), SourceRunID: c.hit.Meta.RunID, StoredAt: c.hit.StoredAt.UTC(),
			Fallback: run.Explanation.Fallback != nil, SavedUSD: run.SavedUSD, SavedMS: run.SavedMS})})
	}
	if served {
		p := c.art.serve
		events = append(events, ledger.Event{Type: "artifact.served", At: end, Payload: payload(artifactServedEvent{
			ArtifactID: p.ArtifactID, PatternID: p.PatternID, Type: p.Type, SavedUSD: run.SavedUSD, SavedMS: run.SavedMS})})
	}
	events = append(events, c.toolVerdicts...)
	rec := ledger.NewRecord(run, events, end)
	rec.Standing = c.standing
	g.recorded(c)
	if err := g.recorder.Record(ctx, rec); err != nil {
		return errs.Wrap(err, errs.Internal, "internal", "the run could not be recorded")
	}
	artifactType := ""
	if served {
		artifactType = c.art.serve.Type
	}
	report(ctx, run, artifactType)
	return nil
}

type requestEvent struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages int    `json:"messages"`
	Tools    int    `json:"tools"`
	App      string `json:"app"`
	Agent    string `json:"agent"`
	Subject  string `json:"subject"`
	Mode     string `json:"mode"`
	// Origin is Request.Origin.
	Origin json.RawMessage `json:"origin,omitempty"`
}

type cacheHitEvent struct {
	Tier        string    `json:"tier"`
	SourceRunID string    `json:"sourceRunId"`
	StoredAt    time.Time `json:"storedAt"`
	Fallback    bool      `json:"fallback"`
	SavedUSD    float64   `json:"savedUsd"`
	SavedMS     float64   `json:"savedMs"`
}

type routeEvent struct {
	Route  string `json:"route"`
	Reason string `json:"reason"`
	Policy string `json:"policy"`
}

type providerEvent struct {
	Provider         string  `json:"provider"`
	Status           int     `json:"status"`
	PromptTokens     int64   `json:"promptTokens,omitempty"`
	CompletionTokens int64   `json:"completionTokens,omitempty"`
	UsageUnknown     bool    `json:"usageUnknown,omitempty"`
	CostUSD          float64 `json:"costUsd,omitempty"`
	LatencyMS        float64 `json:"latencyMs"`
	Error            string  `json:"error,omitempty"`
	// Attempt numbers the attempt among the call's, from 1; UpstreamStatus
	// is the status the provider answered that attempt with.
	Attempt        int `json:"attempt,omitempty"`
	UpstreamStatus int `json:"upstreamStatus,omitempty"`
	// Code, on the last provider.failed event of a call that failed, is
	// the error code the call was answered with.
	Code string `json:"code,omitempty"`
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed event structs reach here
	}
	return b
}

// providerError maps a provider failure to an error in the provider's
// terms, with every secret removed from its text.
func (g *Gateway) providerError(err error) error {
	var pe *pluginapi.ProviderError
	var unavailable *pluginapi.UnavailableError
	var exhausted *providers.ExhaustedError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &exhausted):
		return g.exhaustedError(exhausted)
	case errors.As(err, &pe):
		// The refusal is the cause, its text scrubbed: a 4xx the client
		// caused keeps the provider's status through it (httpstatus.Of).
		cause := *pe
		cause.Message = g.scrub(pe.Message)
		e := &errs.Error{Kind: httpstatus.KindOf(pe.Status), Code: pe.Code, Type: pe.Type, Param: pe.Param, Public: cause.Message,
			Retry: pe.RetryAfter, Err: &cause} // the provider's Retry-After (a 429, a 5xx), passed on
		if e.Code == "" {
			e.Code = pe.Type
		}
		if e.Kind == errs.Upstream && e.Type == "" {
			e.Type = "upstream_error"
		}
		return e
	case errors.Is(err, context.DeadlineExceeded):
		return &errs.Error{Kind: errs.Upstream, Code: "upstream_timeout", Type: "upstream_error", Public: "the provider timed out"}
	case errors.As(err, &unavailable):
		return &errs.Error{Kind: errs.Upstream, Code: "provider_unavailable", Type: "upstream_error", Public: "the provider plugin is unavailable: " + g.scrub(unavailable.Err.Error()), Err: err}
	}
	return &errs.Error{Kind: errs.Upstream, Code: "upstream_error", Type: "upstream_error", Public: "the provider failed: " + g.scrub(err.Error())}
}

func (g *Gateway) scrub(s string) string {
	for _, secret := range g.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	for _, secret := range g.router.Secrets() {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}
