package gateway

import (
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
// conventions ("chat gpt-4o-mini"), when the request's span records. The
// run names the call's trace whenever the context holds a valid one:
// svc's span, or the caller's traceparent when svc traces nothing.
func (g *Gateway) start(ctx context.Context, id *auth.Identity, req *Request, op attribute.KeyValue) (context.Context, *call) {
	c := g.begin(id, req)
	c.embeddings = op == semconv.GenAIOperationNameEmbeddings
	if tracing.Recording(ctx) {
		ctx, c.span = tracing.Start(ctx, op.Value.AsString()+" "+req.Model, trace.SpanKindInternal)
		if g.redaction != nil && g.redaction.Redaction(ctx, id.TenantID) {
			ctx = tracing.WithMasking(ctx) // the spans' error texts are masked as the run's
		}
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, op, semconv.GenAIRequestModel(req.Model), tracing.RunID.String(c.run.ID),
			tracing.TenantID.String(id.TenantID), attrMode.String(string(id.Mode)))
		if req.Temperature != nil {
			attrs = append(attrs, semconv.GenAIRequestTemperature(*req.Temperature))
		}
		if req.MaxTokens > 0 {
			attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
		}
		c.span.SetAttributes(attrs...)
	} else {
		c.span = trace.SpanFromContext(ctx)
	}
	c.run.TraceID = tracing.TraceID(ctx)
	return ctx, c
}

// end ends the call's span with what the run recorded: its route and
// provider, the answering model, its usage, and the error answered with.
// With content capture on, a chat's prompt and answer too, masked when the
// tenant has redaction on (an embeddings call has no messages to record). res is the answer when the caller has it (a
// stream's went to its client).
func (g *Gateway) end(ctx context.Context, c *call, res *Result, errp *error) {
	span := c.span
	if !span.IsRecording() {
		return
	}
	run := c.run
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, tracing.Route.String(run.Route))
	if run.Provider != "" {
		attrs = append(attrs, tracing.Provider.String(run.Provider))
	}
	if plugin := c.plugin(run.Provider); plugin != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(plugin))
	}
	if !run.UsageUnknown && run.TotalTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(int(run.PromptTokens)))
		if !c.embeddings { // an embedding has no output tokens
			attrs = append(attrs, semconv.GenAIUsageOutputTokens(int(run.CompletionTokens)))
		}
	}
	answer := run.Response
	if answer == nil && res != nil {
		answer = res.Body
	}
	if a := readAnswer(answer); a.ID != "" || a.Model != "" || len(a.reasons) > 0 {
		if a.ID != "" {
			attrs = append(attrs, semconv.GenAIResponseID(a.ID))
		}
		if a.Model != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(a.Model))
		}
		if len(a.reasons) > 0 {
			attrs = append(attrs, semconv.GenAIResponseFinishReasons(a.reasons...))
		}
	}
	if g.traceContent && !c.embeddings {
		masking := c.masking || tracing.Masking(ctx)
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(capContent(inputMessages(c.req.Messages, masking))))
		if answer != nil {
			if out, ok := outputMessages(answer, masking); ok {
				attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(capContent(out)))
			}
		}
	}
	span.SetAttributes(attrs...)
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

// startPolicy starts the span of a policy evaluation on target (chat, tool).
func startPolicy(ctx context.Context, target policy.Target) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, "policy.evaluate", trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(attrPolicyTarget.String(string(target)))
	}
	return ctx, span
}

// endPolicy ends a policy evaluation's span with the call's decision. A
// deny is a decision, not a failure: the status is an error only when no
// decision could be made.
func endPolicy(ctx context.Context, c *call, span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrPolicyDecision.String(c.run.Explanation.Policy.Decision))
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

// answerHead is what a span tells of an answer: its id, model and the
// finish reasons of its choices.
type answerHead struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	reasons []string
}

// readAnswer reads an answer: a chat.completion, or a stored stream, whose
// id and model are its first chunk's and whose finish reasons are every
// chunk's.
func readAnswer(body []byte) answerHead {
	var b struct {
		answerHead
		Chunks []answerHead `json:"chunks"`
	}
	if len(body) == 0 || json.Unmarshal(body, &b) != nil {
		return answerHead{}
	}
	a := b.answerHead
	heads := []answerHead{a}
	if a.ID == "" && a.Model == "" && len(b.Chunks) > 0 {
		a.ID, a.Model = b.Chunks[0].ID, b.Chunks[0].Model
		heads = b.Chunks
	}
	for _, h := range heads {
		for _, ch := range h.Choices {
			if ch.FinishReason != "" {
				a.reasons = append(a.reasons, ch.FinishReason)
			}
		}
	}
	return a
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
