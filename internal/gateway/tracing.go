package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/redact"
	"github.com/svc-gateway/svc/internal/tracing"
)

// The attributes of the call's child spans, beside the conventions'.
const (
	attrCacheTier      = attribute.Key("svc.cache.tier")
	attrCacheLookup    = attribute.Key("svc.cache.lookup") // off, skipped, miss, stale, fresh
	attrArtifactFound  = attribute.Key("svc.artifact.found")
	attrPolicyDecision = attribute.Key("svc.policy.decision")
	attrPolicyTarget   = attribute.Key("svc.policy.target") // chat, tool
	attrMode           = attribute.Key("svc.mode")
)

// start begins a call under its span, named by the OpenTelemetry GenAI
// conventions ("chat gpt-4o-mini"), when the request's span records: the
// span the request's HTTP layer started for the call (tracing.StartCall),
// or a span of its own for a call made in process (the demo's); its
// attributes are set when it ends, all in one call. The run names the
// call's trace whenever the context holds a valid one: svc's span, or the
// caller's traceparent when svc traces nothing.
func (g *Gateway) start(ctx context.Context, id *auth.Identity, req *Request, op attribute.KeyValue) (context.Context, *call) {
	c := g.begin(id, req)
	c.embeddings = op == semconv.GenAIOperationNameEmbeddings
	if tracing.Recording(ctx) {
		name := tracing.OperationName(op.Value.AsString(), req.Model)
		if c.span = tracing.TakeCall(ctx); c.span != nil {
			c.span.SetName(name) // the request's call span, its model now known
		} else {
			ctx, c.span = tracing.Start(ctx, name, trace.SpanKindInternal)
		}
		if g.redaction != nil && g.redaction.Redaction(ctx, id.TenantID) {
			ctx = tracing.WithMasking(ctx) // the spans' error texts are masked as the run's
		}
	} else {
		c.span = trace.SpanFromContext(ctx)
	}
	c.run.TraceID = tracing.TraceID(ctx)
	return ctx, c
}

// end releases the reservation of a call that ended without a run, and
// ends the call's span with what the run recorded: its route and
// provider, the answering model, its usage, and the error answered with.
// With content capture on, a chat's prompt and answer too, masked when the
// tenant has redaction on (an embeddings call has no messages to record). res is the answer when the caller has it (a
// stream's went to its client).
func (g *Gateway) end(ctx context.Context, c *call, res *Result, errp *error) {
	g.releaseReservation(c)
	span := c.span
	if !span.IsRecording() {
		return
	}
	run, req := c.run, c.req
	attrs := tracing.NewAttrs()
	op := semconv.GenAIOperationNameChat
	if c.embeddings {
		op = semconv.GenAIOperationNameEmbeddings
	}
	attrs.Add(op, semconv.GenAIRequestModel(req.Model), tracing.RunID.String(run.ID),
		tracing.TenantID.String(run.TenantID), attrMode.String(run.Mode))
	if req.Temperature != nil {
		attrs.Add(semconv.GenAIRequestTemperature(*req.Temperature))
	}
	if req.MaxTokens > 0 {
		attrs.Add(semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	attrs.Add(tracing.Route.String(run.Route))
	// Only a call that asked a provider names one: not one blocked before
	// any was called, nor one the cache or an artifact answered (their runs
	// keep the one planned first). One blocked on its answer's tool calls
	// names the provider that answered; one a cached answer stood in for,
	// the last that failed.
	if run.Provider != "" && c.plan != nil && len(c.plan.Attempts) > 0 {
		attrs.Add(tracing.Provider.String(run.Provider))
		if plugin := c.plugin(run.Provider); plugin != "" {
			attrs.Add(semconv.GenAIProviderNameKey.String(plugin))
		}
	}
	// A cached or an artifact's answer carries the usage of the call it
	// stands for: this call used no tokens.
	answeredHere := run.Route != ledger.RouteExactCache && run.Route != ledger.RouteArtifact
	if answeredHere && !run.UsageUnknown && run.TotalTokens > 0 {
		attrs.Add(semconv.GenAIUsageInputTokens(int(run.PromptTokens)))
		if !c.embeddings { // an embedding has no output tokens
			attrs.Add(semconv.GenAIUsageOutputTokens(int(run.CompletionTokens)))
		}
	}
	answer := run.Response
	if answer == nil && res != nil {
		answer = res.Body
	}
	id, model := answerID(answer)
	if id != "" {
		attrs.Add(semconv.GenAIResponseID(id))
	}
	if model != "" {
		attrs.Add(semconv.GenAIResponseModel(model))
	}
	if reasons := finishReasons(answer); len(reasons) > 0 {
		attrs.Add(semconv.GenAIResponseFinishReasons(reasons...))
	}
	if g.traceContent && !c.embeddings {
		masking := c.masking || tracing.Masking(ctx)
		attrs.Add(semconv.GenAIInputMessagesKey.String(capContent(inputMessages(c.req.Messages, masking))))
		if answer != nil {
			if out, ok := outputMessages(answer, masking); ok {
				attrs.Add(semconv.GenAIOutputMessagesKey.String(capContent(out)))
			}
		}
	}
	attrs.SetOn(span)
	if errp != nil {
		failed(ctx, span, *errp)
	}
	span.End()
}

// failed marks the span of a call, or of a step of it, with the error it
// ended with, its text masked when the call masks. A client that went away
// is no failure of svc's: error.type "cancelled", the status left unset
// (the server's span records the 499).
func failed(ctx context.Context, span trace.Span, err error) {
	if err == nil {
		return
	}
	var left *clientLeft
	if errors.Is(err, context.Canceled) || errors.As(err, &left) {
		span.SetAttributes(semconv.ErrorTypeKey.String("cancelled"))
		return
	}
	tracing.Fail(span, errs.Code(err), tracing.Describe(ctx, errs.Public(err)))
}

// startPolicy starts the span of a policy evaluation.
func startPolicy(ctx context.Context) (context.Context, trace.Span) {
	return tracing.Start(ctx, "policy.evaluate", trace.SpanKindInternal)
}

// endPolicy ends a policy evaluation's span on target (chat, tool) with the
// call's decision, its attributes set in one call. A deny is a decision,
// not a failure: the status is an error only when no decision could be
// made.
func endPolicy(ctx context.Context, c *call, span trace.Span, target policy.Target, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrPolicyTarget.String(string(target)), attrPolicyDecision.String(c.run.Explanation.Policy.Decision))
	if c.run.Route != ledger.RouteBlocked {
		failed(ctx, span, err)
	}
	span.End()
}

// maxContent bounds a captured messages attribute: a long conversation
// does not make every span of its call a large export.
const maxContent = 64 << 10

// capContent cuts s to maxContent bytes, at a character's boundary (the
// JSON is then cut short, as an attribute limit would cut it).
func capContent(s string) string {
	if len(s) <= maxContent {
		return s
	}
	i := maxContent
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// plugin is the plugin of the call's provider named name (gen_ai.provider.name):
// openai, anthropic; empty when unknown, or a binary's path.
func (c *call) plugin(name string) string {
	if name == "" || c.plan == nil {
		return ""
	}
	for _, cand := range c.plan.Candidates {
		if cand.Provider == name {
			if strings.ContainsAny(cand.Plugin, `/\`) {
				return ""
			}
			return cand.Plugin
		}
	}
	return ""
}

// finishReasons are the finish reasons of an answer's choices (every
// chunk's, for a stored stream), found by their key without decoding the
// answer: inside a JSON string a quote is escaped, so the key's bytes
// appear only as a key.
func finishReasons(body []byte) []string {
	var reasons []string
	const key = `"finish_reason"`
	for i := bytes.Index(body, []byte(key)); i >= 0; {
		j := skipSpace(body, i+len(key))
		if j < len(body) && body[j] == ':' {
			j = skipSpace(body, j+1)
			if j < len(body) && body[j] == '"' {
				if end := stringEnd(body, j); end > 0 && !bytes.ContainsRune(body[j:end], '\\') {
					reasons = append(reasons, finishReason(body[j+1:end-1]))
				}
			}
		}
		next := bytes.Index(body[i+len(key):], []byte(key))
		if next < 0 {
			break
		}
		i += len(key) + next
	}
	return reasons
}

// finishReason is a finish reason as a string, the OpenAI API's own
// without a copy.
func finishReason(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	}
	return string(b)
}

// answerID reads the id and the model of an answer: a chat.completion, or
// a stored stream's first chunk (`{"chunks":[...]}`). It walks the
// answer's top-level keys, skipping their values unread, and stops once it
// has both: an answer names them before its choices, so a long answer is
// not decoded for its span. What is not a JSON object gives neither.
func answerID(body []byte) (id, model string) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return "", ""
	}
	i++
	for {
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != '"' {
			return id, model // the end of the object, or not one
		}
		end := stringEnd(body, i)
		if end < 0 {
			return "", ""
		}
		key := body[i+1 : end-1]
		i = skipSpace(body, end)
		if i >= len(body) || body[i] != ':' {
			return "", ""
		}
		i = skipSpace(body, i+1)
		vend := valueEnd(body, i)
		if vend < 0 {
			return "", ""
		}
		switch string(key) {
		case "id", "model":
			v, ok := jsonString(body[i:vend])
			if !ok {
				return "", ""
			}
			if string(key) == "id" {
				id = v
			} else {
				model = v
			}
			if id != "" && model != "" {
				return id, model
			}
		case "chunks":
			if id == "" && model == "" {
				return firstChunk(body[i:vend])
			}
		}
		i = skipSpace(body, vend)
		if i < len(body) && body[i] == ',' {
			i++
		}
	}
}

// jsonString is the string a JSON value holds, read without a decoder
// when it has nothing to unescape; ok is false when it is no string. The
// decoder's result lives on the heap, so only a value that needs it pays
// for that.
func jsonString(raw []byte) (string, bool) {
	if raw[0] == '"' && !bytes.ContainsRune(raw, '\\') {
		return string(raw[1 : len(raw)-1]), true // nothing to unescape
	}
	return decodeString(raw)
}

func decodeString(raw []byte) (string, bool) {
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// firstChunk reads the id and the model of the first chunk of a stored
// stream's chunks.
func firstChunk(chunks []byte) (id, model string) {
	i := skipSpace(chunks, 0)
	if i >= len(chunks) || chunks[i] != '[' {
		return "", ""
	}
	i = skipSpace(chunks, i+1)
	end := valueEnd(chunks, i)
	if end < 0 {
		return "", ""
	}
	return answerID(chunks[i:end])
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the JSON string that starts at b[i],
// -1 when it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd is the index just past the JSON value that starts at b[i]: a
// string, an object or array (its strings skipped whole), or a bare word
// or number; -1 when it does not end.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// message is a message as the GenAI conventions record it: a role and
// its parts.
type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type part struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// inputMessages is gen_ai.input.messages: the request's messages, their
// text masked when masking.
func inputMessages(msgs []Message, masking bool) string {
	out := make([]message, len(msgs))
	for i, m := range msgs {
		text := m.Content
		if masking {
			text = redact.String(text)
		}
		out[i] = message{Role: m.Role, Parts: []part{{Type: "text", Content: text}}}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// outputMessages is gen_ai.output.messages: the answer's text, masked
// when masking; false when it has none.
func outputMessages(answer []byte, masking bool) (string, bool) {
	r := shape.ReadReply(answer)
	if !r.HasText {
		return "", false
	}
	text := r.Text
	if masking {
		text = redact.String(text)
	}
	b, _ := json.Marshal([]message{{Role: "assistant", Parts: []part{{Type: "text", Content: text}}}})
	return string(b), true
}
