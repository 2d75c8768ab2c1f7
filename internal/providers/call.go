package providers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/calltime"
	"github.com/svc-gateway/svc/internal/tracing"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// ExhaustedError is a call that no provider answered: every attempt failed,
// or none could be made. Last is the last attempt's error (nil when none
// was made).
type ExhaustedError struct {
	Attempts []Attempt
	Skipped  []Skipped
	Last     error
}

// Error names every attempt, with its latency, and every provider skipped.
func (e *ExhaustedError) Error() string {
	var b strings.Builder
	if len(e.Attempts) == 0 {
		b.WriteString("no provider available: ")
	} else {
		b.WriteString("all providers failed: ")
	}
	n := 0
	sep := func() {
		if n > 0 {
			b.WriteString("; ")
		}
		n++
	}
	for _, a := range e.Attempts {
		sep()
		b.WriteString(a.Provider)
		b.WriteString(": ")
		b.WriteString(a.describe())
	}
	for _, s := range e.Skipped {
		if s.NotCandidate() {
			continue
		}
		sep()
		b.WriteString(s.Provider)
		b.WriteString(": ")
		b.WriteString(s.Reason)
	}
	return b.String()
}

// Unwrap returns the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Last }

// describe is an attempt as the exhausted error tells it: "503 upstream
// error (12 ms)", "timed out after 2s".
func (a Attempt) describe() string {
	if a.Outcome == OutcomeTimeout {
		return a.Error
	}
	s := a.Error
	if a.Status != 0 {
		s = strconv.Itoa(a.Status) + " " + s
	}
	return s + " (" + strconv.FormatFloat(math.Round(a.LatencyMS*10)/10, 'f', -1, 64) + " ms)"
}

// Chat answers req through the plan's providers.
func (r *Router) Chat(ctx context.Context, p *Plan, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	var res pluginapi.ChatResponse
	var body bodies
	err := r.execute(ctx, p, callChat, func(ctx context.Context, prov *Provider, model string, _ *attemptTimer) (bool, error) {
		cr, err := body.chat(ctx, req, model)
		if err != nil {
			return false, err
		}
		out, err := prov.Impl.Chat(ctx, cr)
		if err == nil {
			res = out
			answered(ctx, out.Usage, false)
		}
		return false, err
	})
	return res, err
}

// StreamChat streams req's answer through the plan's providers: a
// provider that fails before its first chunk reached send is retried or
// fallen back from; after it, its error is returned as it is, as a stream
// begun is never replayed.
func (r *Router) StreamChat(ctx context.Context, p *Plan, req pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	var body bodies
	return r.execute(ctx, p, callStream, func(ctx context.Context, prov *Provider, model string, timer *attemptTimer) (bool, error) {
		cr, err := body.chat(ctx, req, model)
		if err != nil {
			return false, err
		}
		var sent bool
		var sendErr error
		err = prov.Impl.StreamChat(ctx, cr, func(ch pluginapi.ChatChunk) error {
			if !sent {
				if !timer.stop() {
					return errTimedOut // the attempt's time ran out as its first chunk came
				}
				sent = true
			}
			if err := send(ch); err != nil {
				sendErr = err
				return err
			}
			return nil
		})
		if sendErr != nil && errors.Is(err, sendErr) {
			return true, &clientGone{err: err, sent: sendErr}
		}
		return sent, err
	})
}

// Embed answers req through the plan's providers. A provider that is not
// an Embedder serves no embeddings: it is skipped as not serving the model.
func (r *Router) Embed(ctx context.Context, p *Plan, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	var res pluginapi.EmbedResponse
	var body bodies
	err := r.execute(ctx, p, callEmbed, func(ctx context.Context, prov *Provider, model string, _ *attemptTimer) (bool, error) {
		er, err := body.embed(ctx, req, model)
		if err != nil {
			return false, err
		}
		out, err := prov.Impl.(pluginapi.Embedder).Embed(ctx, er)
		if err == nil {
			res = out
			answered(ctx, out.Usage, true)
		}
		return false, err
	})
	return res, err
}

// What a call asks of a provider.
const (
	callChat = iota
	callStream
	callEmbed
)

// ReasonNoEmbeddings skips a provider that serves no embeddings.
const ReasonNoEmbeddings = ReasonNotServed + ": no embeddings"

// ReasonRemoved skips a candidate whose name the set a reload put in
// place since the call was planned no longer holds.
const ReasonRemoved = "removed by a reload"

// ReasonChanged skips a candidate that a reload since the call was
// planned gave another plugin, or models without the one planned.
const ReasonChanged = "changed by a reload: another plugin, or the model no longer served"

// The reasons a candidate was not tried when the call ended at another's
// answer: the client left, or a stream had begun (it is never replayed).
const (
	ReasonClientLeft  = "not tried: the client went away"
	ReasonStreamBegun = "not tried: a stream already begun is not replayed"
)

// tryFunc makes one attempt on prov, asking for model. sent says that a
// streamed chunk reached the client: the call cannot be retried.
type tryFunc func(ctx context.Context, prov *Provider, model string, timer *attemptTimer) (sent bool, err error)

// tried is what one call knows of one of its candidates.
type tried struct {
	n           int           // attempts made on it
	out         bool          // not to be tried again in this call
	retryAfter  time.Duration // what its last 429 asked
	unsupported bool          // it refused the request as one it cannot serve
}

// execute makes the plan's attempts, per the attempt rules: in the plan's
// order, then again from the first, with backoff, until one answers, the
// failure is the caller's, or MaxAttempts are spent.
func (r *Router) execute(ctx context.Context, p *Plan, kind int, try tryFunc) error {
	st := p.st
	set := st.set
	maxAttempts := max(set.Retries.MaxAttempts, 1)
	n := len(p.Candidates)
	var one [1]tried
	tr := one[:]
	if n > 1 {
		tr = make([]tried, n)
	}
	if p.Attempts == nil {
		p.Attempts = p.attempt1[:0]
	}
	var last, lastUnsupported error
	made, noEmbeddings := 0, 0
	deadline, hasDeadline := ctx.Deadline()
calls:
	for made < maxAttempts {
		progressed := false
	candidates:
		for i := 0; i < n && made < maxAttempts; i++ {
			t := &tr[i]
			if t.out {
				continue
			}
			c := &p.Candidates[i]
			prov, h := set.Providers[p.order[i]], st.health[p.order[i]]
			if r.state.Load() != st { // a reload since the plan
				var gone string
				if prov, h, gone = r.serving(c); gone != "" {
					t.out = true
					p.skip(c.Provider, gone)
					continue
				}
			}
			if reason, ok := p.forbidden[c.Provider]; ok {
				t.out = true
				p.skip(c.Provider, reason)
				continue
			}
			if kind == callEmbed {
				if !Embeds(prov.Impl) {
					t.out = true
					noEmbeddings++
					p.skip(c.Provider, ReasonNoEmbeddings)
					continue
				}
			}
			var wait time.Duration
			if t.n > 0 {
				wait = r.backoff(set.Retries, t.n)
				if t.retryAfter > wait {
					if t.retryAfter > set.Retries.MaxBackoff || hasDeadline && t.retryAfter > deadline.Sub(r.now()) {
						t.out = true
						p.skip(c.Provider, "asked to retry after "+t.retryAfter.String()+", longer than the call can wait")
						continue
					}
					wait = t.retryAfter
				}
			}
			if wait > 0 {
				if out, reason, limitedFor := h.outAfter(r.now, n > 1, wait); out {
					// Its breaker opened (or a rate limit came) since it was
					// tried: waiting for it would be waiting for nothing.
					t.out = true
					p.Skipped = append(p.Skipped, Skipped{Provider: c.Provider, Reason: reason, RetryAfterMS: limitedFor.Milliseconds()})
					continue
				}
				// The wait between attempts is on the provider's account,
				// not svc's: it counts on the call's clock as provider time.
				clock := calltime.From(ctx)
				clock.AttemptBegan(time.Now())
				err := r.sleep(ctx, wait)
				clock.AttemptEnded(time.Now())
				if err != nil {
					if errors.Is(ctx.Err(), context.Canceled) {
						p.skipUntried(tr, ReasonClientLeft)
						return context.Canceled
					}
					break calls // the call's deadline passed while waiting
				}
			}
			ok, probe, reason, limitedFor := h.admit(r.now, n > 1)
			if !ok {
				t.out = true
				p.Skipped = append(p.Skipped, Skipped{Provider: c.Provider, Reason: reason, RetryAfterMS: limitedFor.Milliseconds()})
				continue
			}
			a, v, err := r.attempt(ctx, prov, h, c.Model, probe, kind, try)
			for tries := 0; v == verdictRetired; tries++ {
				// The instance was closed by a reload as the attempt began:
				// the one serving now answers instead.
				var gone string
				if prov, h, gone = r.serving(c); gone != "" || tries == 3 {
					t.out = true
					p.skip(c.Provider, cmp.Or(gone, ReasonRemoved))
					continue candidates
				}
				if ok, probe, reason, limitedFor = h.admit(r.now, n > 1); !ok {
					t.out = true
					p.Skipped = append(p.Skipped, Skipped{Provider: c.Provider, Reason: reason, RetryAfterMS: limitedFor.Milliseconds()})
					continue candidates
				}
				a, v, err = r.attempt(ctx, prov, h, c.Model, probe, kind, try)
			}
			if v == verdictNoEmbeddings {
				t.out = true
				noEmbeddings++
				p.skip(c.Provider, ReasonNoEmbeddings)
				continue
			}
			made++
			if a.Unsupported {
				t.unsupported, lastUnsupported = true, err
			}
			progressed = true
			t.n++
			p.lastTried, p.lastProvider = i+1, prov
			a.WaitedMS = ms(wait)
			p.Attempts = append(p.Attempts, a)
			// A retry is a further attempt on a provider this call already
			// tried; the first attempt on the next one is a fallback's.
			r.counters(h, prov.Name).Attempt(a.Outcome, time.Duration(a.LatencyMS*float64(time.Millisecond)), t.n > 1)
			switch v {
			case verdictOK:
				p.Answered = c.Provider
				if first := p.Attempts[0].Provider; first != prov.Name {
					r.metrics.Fallback(first, prov.Name)
				}
				return nil
			case verdictSent, verdictStop:
				p.skipUntried(tr, stopReason(v, a))
				return err
			case verdictDeadline:
				last = err
				break calls
			case verdictNext:
				t.out = true
			case verdictRetry:
				t.retryAfter = time.Duration(a.RetryAfterMS) * time.Millisecond
			}
			last = err
		}
		if !progressed {
			break
		}
	}
	p.skipUntried(tr, ReasonExhausted)
	if kind == callEmbed && made == 0 && noEmbeddings == n {
		return pluginapi.NoEmbeddings(p.Model)
	}
	if made == 1 && n == 1 {
		return last
	}
	if lastUnsupported != nil && !slices.ContainsFunc(tr, func(t tried) bool { return !t.unsupported }) {
		return lastUnsupported // every candidate refused it: the request is the caller's to change
	}
	return &ExhaustedError{Attempts: p.Attempts, Skipped: p.Skipped, Last: last}
}

func (p *Plan) skip(provider, reason string) {
	p.Skipped = append(p.Skipped, Skipped{Provider: provider, Reason: reason})
}

// skipUntried gives reason for every candidate the call ended without
// trying, or the reason a policy forbade it.
func (p *Plan) skipUntried(tr []tried, reason string) {
	for i := range tr {
		if !tr[i].out && tr[i].n == 0 {
			name := p.Candidates[i].Provider
			if forbidden, ok := p.forbidden[name]; ok {
				p.skip(name, forbidden)
				continue
			}
			p.skip(name, reason)
		}
	}
}

// stopReason is why a call that attempt a ended (verdict v) tried no
// other candidate.
func stopReason(v int, a Attempt) string {
	switch {
	case a.Outcome == OutcomeCancelled:
		return ReasonClientLeft
	case v == verdictSent:
		return ReasonStreamBegun
	default:
		return "not tried: " + a.Provider + " refused the request as the caller's fault"
	}
}

// What an attempt's outcome means for the call.
const (
	verdictOK    = iota
	verdictRetry // the provider failed: another attempt may answer
	verdictNext  // the provider's configuration failed (401, 403, 404, its key or account refused), or it cannot serve the request: another provider may answer
	verdictStop  // the caller's fault, or the caller gone: no attempt can do better
	verdictSent  // a stream failed after its first chunk: it is not replayed
	// verdictDeadline: the call's own deadline passed: no attempt has time
	// left, and those made are told.
	verdictDeadline
	// verdictRetired: the plan's instance was closed by a reload before the
	// attempt began; it is not an attempt.
	verdictRetired
	// verdictNoEmbeddings: the provider serves no embeddings at all (a
	// plugin's answer): a skip, not an attempt.
	verdictNoEmbeddings
)

// Embeds says whether impl serves embeddings: an Embedder, unless it says
// otherwise (a wrapper that is one whatever it wraps).
func Embeds(impl pluginapi.Provider) bool {
	if e, ok := impl.(interface{ Embeds() bool }); ok {
		return e.Embeds()
	}
	_, ok := impl.(pluginapi.Embedder)
	return ok
}

// serving is the instance that serves candidate c after a reload since its
// plan: the one of that name in the set serving now, as configured now,
// when it is still what was planned (and judged by the provider rules),
// the same plugin serving the model; else nil and why c is skipped.
func (r *Router) serving(c *Candidate) (*Provider, *health, string) {
	st := r.state.Load()
	j, ok := st.byName[c.Provider]
	if !ok {
		return nil, nil, ReasonRemoved
	}
	if prov := st.set.Providers[j]; prov.Plugin != c.Plugin || !prov.Serves(c.Model) {
		return nil, nil, ReasonChanged
	}
	return st.set.Providers[j], st.health[j], ""
}

// attempt makes one attempt and tells its outcome.
func (r *Router) attempt(ctx context.Context, prov *Provider, h *health, model string, probe bool, kind int, try tryFunc) (Attempt, int, error) {
	actx, timer := ctx, (*attemptTimer)(nil)
	switch {
	case prov.Timeout <= 0:
	case kind != callStream && r.afterFunc == nil:
		// Nothing stops the clock early: a deadline costs least.
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(ctx, prov.Timeout, errTimedOut)
		defer cancel()
	default:
		// A stream stops its timer at its first chunk.
		var cancel context.CancelCauseFunc
		actx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		timer = r.startTimer(prov.Timeout, func() { cancel(errTimedOut) })
	}
	if probe {
		defer releaseProbe(r.now, h)
	}
	actx, span := startAttempt(actx, prov, model, kind)
	var a Attempt
	// Deferred now, so that a try that panics still ends the span.
	defer endAttempt(actx, span, &a, r.scrub)
	clock := calltime.From(ctx) // real time, whatever r.now is: the overhead svc reports is measured
	clock.AttemptBegan(time.Now())
	start := r.now()
	sent, err := try(actx, prov, model, timer)
	timer.stop()
	end := r.now()
	clock.AttemptEnded(time.Now())
	a = Attempt{Provider: prov.Name, Model: model, Outcome: OutcomeOK, LatencyMS: ms(end.Sub(start))}
	if err == nil {
		h.done(end, probe, resultOK, "", 0)
		return a, verdictOK, nil
	}
	var pe *pluginapi.ProviderError
	// The provider is given the same timeout (ProviderConfig.Timeout), and
	// its timer may end the call before svc's: its own timeout error, once
	// the instance's timeout has passed, is the attempt's timeout too.
	ownTimeout := errors.As(err, &pe) && pe.Code == pluginapi.CodeTimeout
	timedOut := errors.Is(err, errTimedOut) || prov.Timeout > 0 && ctx.Err() == nil &&
		(errors.Is(context.Cause(actx), errTimedOut) || ownTimeout && !sent && end.Sub(start) >= prov.Timeout)
	v, result, rateLimitedFor := verdictRetry, resultFailure, time.Duration(0)
	var unavailable *pluginapi.UnavailableError
	var gone *clientGone
	switch {
	case errors.As(err, &gone) && errors.As(gone.sent, &pe):
		// The caller refused a chunk as the provider's fault (an answer
		// svc does not pass on): the stream began, and the provider failed.
		// An answer past svc's own bound on what it holds says nothing of
		// the provider's health: every tenant's calls share its breaker.
		a.Outcome, a.Error, v = OutcomeError, pe.Message, verdictSent
		if pe.Code == pluginapi.CodeResponseTooLarge {
			result = resultNeutral
		}
		err = gone.err
	case errors.As(err, &gone):
		a.Outcome, a.Error, v, result = OutcomeCancelled, "the client went away", verdictSent, resultNeutral
		err = gone.err
	case errors.Is(ctx.Err(), context.Canceled):
		a.Outcome, a.Error, v, result = OutcomeCancelled, "the client went away", verdictStop, resultNeutral
		if !sent {
			err = context.Canceled
		}
	case ctx.Err() != nil:
		a.Outcome, a.Error, v, result = OutcomeTimeout, "timed out: the call's deadline passed", verdictDeadline, resultNeutral
	case timedOut:
		a.Outcome, a.Error = OutcomeTimeout, "timed out after "+prov.Timeout.String()
		if errors.Is(err, errTimedOut) || !errors.Is(err, context.DeadlineExceeded) {
			err = context.DeadlineExceeded // as a provider's own timeout reads
		}
	case errors.Is(err, context.DeadlineExceeded):
		a.Outcome, a.Error = OutcomeTimeout, "timed out"
	case errors.As(err, &pe):
		a.Status, a.Error = pe.Status, pe.Message
		switch {
		case ownTimeout: // the provider's own, shorter than the instance's
			a.Outcome = OutcomeTimeout
		case pe.Status == http.StatusTooManyRequests:
			a.Outcome, a.RetryAfterMS = OutcomeRateLimited, pe.RetryAfter.Milliseconds()
			rateLimitedFor = pe.RetryAfter
		case pe.Code == pluginapi.CodeUpstreamUnreachable: // no answer: no upstream status either
			a.Outcome, a.Status = OutcomeUnavailable, 0
		case pe.Code == pluginapi.CodeUnsupported: // this provider's limit, its upstream never asked: another may serve it
			a.Outcome, a.Unsupported, v, result = OutcomeRefused, true, verdictNext, resultNeutral
		case pe.Code == pluginapi.CodeUpstreamAuthFailed || pe.Code == pluginapi.CodeUpstreamBilling:
			a.Outcome, v = OutcomeRefused, verdictNext // svc's key or account: a 502 to the client
		case pe.Status == 0 || pluginapi.Retried(pe.Status):
			a.Outcome = OutcomeError
		case pe.Status == http.StatusUnauthorized || pe.Status == http.StatusForbidden || pe.Status == http.StatusNotFound:
			a.Outcome, v = OutcomeRefused, verdictNext
		default: // the caller's request is at fault: the provider is well
			a.Outcome, v, result = OutcomeRefused, verdictStop, resultOK
		}
	case errors.As(err, &unavailable), errors.Is(err, context.Canceled):
		a.Outcome, a.Error = OutcomeUnavailable, err.Error()
	default:
		a.Outcome, a.Error = OutcomeError, err.Error()
	}
	if pe != nil && v == verdictRetry && a.RetryAfterMS == 0 {
		// A 503 or 529 may ask for a wait too; only a 429 marks the
		// provider rate limited.
		a.RetryAfterMS = pe.RetryAfter.Milliseconds()
	}
	if err == errRetired {
		h.release(probe)
		return a, verdictRetired, err
	}
	if kind == callEmbed && pluginapi.IsNoEmbeddings(err) {
		h.release(probe)
		return a, verdictNoEmbeddings, err
	}
	if sent {
		v = verdictSent
	}
	errText := a.Error
	if result == resultFailure {
		errText = r.scrub(errText) // the status shows it to admins
	}
	h.done(end, probe, result, errText, rateLimitedFor)
	return a, v, err
}

// releaseProbe, deferred by a half-open probe's attempt, records a failure
// when the provider panicked, so the probe slot is freed (not "in flight"
// for ever), and panics on.
func releaseProbe(now func() time.Time, h *health) {
	if v := recover(); v != nil {
		h.done(now(), true, resultFailure, "the provider panicked", 0)
		panic(v)
	}
}

// errTimedOut is an attempt's cause when its Timeout passed.
var errTimedOut = errors.New("the attempt timed out")

// clientGone is a stream cut because send failed: the client went away,
// or (a ProviderError) the caller refused the chunk as the provider's.
type clientGone struct {
	err  error // the stream's error
	sent error // send's, which cut it
}

func (e *clientGone) Error() string { return e.err.Error() }
func (e *clientGone) Unwrap() error { return e.err }

// attemptTimer is an attempt's Timeout; a stream stops it at its first
// chunk. A nil one never fires.
type attemptTimer struct {
	t     *time.Timer
	stopf func() bool // a UseTimers timer's
}

func (r *Router) startTimer(d time.Duration, f func()) *attemptTimer {
	if r.afterFunc != nil {
		return &attemptTimer{stopf: r.afterFunc(d, f)}
	}
	return &attemptTimer{t: time.AfterFunc(d, f)}
}

// stop stops the timer; false when it fired already.
func (a *attemptTimer) stop() bool {
	switch {
	case a == nil:
		return true
	case a.stopf != nil:
		return a.stopf()
	}
	return a.t.Stop()
}

// backoff is the wait before the (n+1)th attempt on a provider:
// min(MaxBackoff, Backoff·2^(n-1)) with full jitter.
func (r *Router) backoff(rt Retries, n int) time.Duration {
	if rt.Backoff <= 0 {
		return 0
	}
	ceiling := rt.Backoff << min(n-1, 30)
	if ceiling <= 0 || rt.MaxBackoff > 0 && ceiling > rt.MaxBackoff {
		ceiling = rt.MaxBackoff
	}
	return time.Duration(r.float64() * float64(ceiling))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// bodies rewrites a request body's "model" for a provider that names the
// model otherwise, once per model of a call.
type bodies struct {
	model string
	body  []byte
}

// chat is req as the attempt in ctx sends it to a provider asked for
// model: that model in its body, and the attempt's trace context.
func (b *bodies) chat(ctx context.Context, req pluginapi.ChatRequest, model string) (pluginapi.ChatRequest, error) {
	body, err := b.of(req.Body, req.Model, model)
	req.Body, req.Model = body, model
	req.TraceParent, req.TraceState = tracing.W3C(ctx)
	return req, err
}

// embed is chat's counterpart for an embeddings request.
func (b *bodies) embed(ctx context.Context, req pluginapi.EmbedRequest, model string) (pluginapi.EmbedRequest, error) {
	body, err := b.of(req.Body, req.Model, model)
	req.Body, req.Model = body, model
	req.TraceParent, req.TraceState = tracing.W3C(ctx)
	return req, err
}

// of is body as a provider asked for model sees it: body itself when model
// is the one the caller named.
func (b *bodies) of(body []byte, callerModel, model string) ([]byte, error) {
	if model == callerModel {
		return body, nil
	}
	if b.body != nil && b.model == model {
		return b.body, nil
	}
	out, err := withModel(body, model)
	if err != nil {
		return nil, err
	}
	b.model, b.body = model, out
	return out, nil
}

// withModel returns body with its top-level "model" set to model: the one
// value replaced in place, every other byte as it was.
func withModel(body []byte, model string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("the request body is not a JSON object")
	}
	quoted, _ := json.Marshal(model)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if key, _ := tok.(string); key == "model" {
			end := int(dec.InputOffset())
			start := end - len(raw)
			out := make([]byte, 0, len(body)-len(raw)+len(quoted))
			out = append(out, body[:start]...)
			out = append(out, quoted...)
			return append(out, body[end:]...), nil
		}
	}
	out := make([]byte, 0, len(body)+len(quoted)+10)
	out = append(out, `{"model":`...)
	out = append(out, quoted...)
	rest := bytes.TrimSpace(body)[1:]
	if len(bytes.TrimSpace(rest)) > 1 {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}
