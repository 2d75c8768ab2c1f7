package gateway

import (
	"bytes"
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/redact"
	"github.com/svc-gateway/svc/internal/tracing"
)

// The attributes of the call's child spans, beside the conventions'.
const (
	attrCacheTier      = attribute.Key("svc.cache.tier")
	attrCacheLookup    = attribute.Key("svc.cache.lookup") // off, skipped, miss, stale, fresh
	attrArtifactFound  = attribute.Key("svc.artifact.found")
	attrPolicyDecision = attribute.Key("svc.policy.decision")
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
	if !run.UsageUnknown && run.TotalTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(int(run.PromptTokens)), semconv.GenAIUsageOutputTokens(int(run.CompletionTokens)))
	}
	answer := run.Response
	if answer == nil && res != nil {
		answer = res.Body
	}
	if id, model := answerID(answer); model != "" || id != "" {
		if id != "" {
			attrs = append(attrs, semconv.GenAIResponseID(id))
		}
		if model != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(model))
		}
	}
	if g.traceContent && !c.embeddings {
		masking := c.masking || g.redaction != nil && g.redaction.Redaction(context.WithoutCancel(ctx), run.TenantID)
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(inputMessages(c.req.Messages, masking)))
		if answer != nil {
			if out, ok := outputMessages(answer, masking); ok {
				attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(out))
			}
		}
	}
	span.SetAttributes(attrs...)
	if errp != nil {
		tracing.Error(span, *errp)
	}
	span.End()
}

// answerID reads the id and the model of an answer: a chat.completion, or
// a stored stream's first chunk (`{"chunks":[...]}`). It reads the answer's
// keys in turn and stops once it has both: an answer names them before its
// choices, so a long answer is not decoded for its span.
func answerID(body []byte) (id, model string) {
	if len(body) == 0 {
		return "", ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", ""
		}
		switch t {
		case "id", "model":
			var v string
			if dec.Decode(&v) != nil {
				return "", ""
			}
			if t == "id" {
				id = v
			} else {
				model = v
			}
			if id != "" && model != "" {
				return id, model
			}
		case "chunks":
			if id != "" || model != "" {
				return id, model
			}
			return firstChunk(dec)
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return "", ""
			}
		}
	}
	return id, model
}

// firstChunk reads the id and the model of the first chunk of the array
// dec is at.
func firstChunk(dec *json.Decoder) (id, model string) {
	if t, err := dec.Token(); err != nil || t != json.Delim('[') || !dec.More() {
		return "", ""
	}
	var h struct {
		ID    string `json:"id"`
		Model string `json:"model"`
	}
	if dec.Decode(&h) != nil {
		return "", ""
	}
	return h.ID, h.Model
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
