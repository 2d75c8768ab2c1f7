package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/spend"
)

// Governor decides on chat requests, the providers they may go to, and
// the tool calls models return.
type Governor interface {
	Has(t policy.Target) bool
	Decide(ctx context.Context, c governance.Call, in *policy.Input) (governance.Decision, error)
	// Prepare, Judge and Settle are Decide in three steps, for a call
	// decided on its spend: Prepare before the tracker's admission, Judge
	// within it (it writes nothing), Settle (the approval, the agent's
	// standing, the audit trail, the webhook) after it, outside its lock.
	Prepare(ctx context.Context, c governance.Call, in *policy.Input)
	Judge(ctx context.Context, c governance.Call, in *policy.Input) (governance.Judgment, error)
	Settle(ctx context.Context, j governance.Judgment) (governance.Decision, error)
	// JudgeProviders puts each candidate provider of a call before the
	// provider rules: a verdict a candidate, or nil when there is no rule.
	JudgeProviders(ctx context.Context, id *auth.Identity, runID string, req policy.Request, candidates []policy.Candidate) ([]governance.ProviderVerdict, error)
	// NeedsSpend reports whether the tenant's chat requests are decided
	// with their spend: a chat rule reads it, or the tenant has hard
	// budgets (which judge the request even without other chat rules).
	NeedsSpend(ctx context.Context, tenantID string) bool
	// BudgetError is the error a request refused by budgets alone answers
	// (429 budget_exceeded, saying what was spent: spent, the spend it was
	// judged with, or nil), nil when the verdict's BlockError answers.
	BudgetError(ctx context.Context, id *auth.Identity, v policy.Verdict, spent *policy.Spend) *errs.Error
}

var _ Governor = (*governance.Governor)(nil)

// governChat puts the request before the chat policies, then its
// candidate providers before the provider policies. It returns the error
// to answer with when they block it, after recording the blocked run.
//
// Its span tells the call's decision even when no rule can judge the call
// (no chat or provider rule in force, no agent, no budgets): the allow
// every call gets then, and nothing evaluated. The call's cost is
// estimated only for rules to read.
func (g *Gateway) governChat(ctx context.Context, c *call) error {
	if g.governor == nil {
		return nil
	}
	ctx, span := startPolicy(ctx)
	needsSpend := g.governor.NeedsSpend(ctx, c.id.TenantID)
	chat := c.id.Agent != "" || needsSpend || g.governor.Has(policy.Chat)
	if !chat && !g.governor.Has(policy.Provider) {
		endPolicy(ctx, c, span, policy.Chat, nil) // no rule can judge it
		return nil
	}
	estimate := g.estimate(c)
	err := g.governChatRules(ctx, c, estimate, chat, needsSpend)
	endPolicy(ctx, c, span, policy.Chat, err)
	return err
}

func (g *Gateway) governChatRules(ctx context.Context, c *call, estimate spend.Amount, chat, needsSpend bool) error {
	if chat {
		d, err := g.decideChat(ctx, c, estimate, needsSpend)
		if err != nil {
			return g.abort(ctx, c, err)
		}
		c.decided(d, policy.Chat, "")
		if d.Enforced {
			return g.block(ctx, c, d.Verdict)
		}
	}
	return g.governProviders(ctx, c)
}

// policyRequest is the request as the chat and provider rules see it.
func (c *call) policyRequest() policy.Request {
	req := c.req
	names := make([]string, len(c.plan.Candidates))
	for i, cand := range c.plan.Candidates {
		names[i] = cand.Provider
	}
	return policy.Request{Model: req.Model, App: c.id.App, Agent: c.id.Agent,
		Subject: c.id.Subject, Messages: req.Messages, Tools: req.Tools, Providers: names,
		Key: c.id.KeyID, EstimatedCostUSD: c.estimatedUSD}
}

// governToolCalls puts each tool call of a non-streamed answer before the
// tool policies. An enforced verdict blocks the answer; the provider's cost
// stays recorded.
func (g *Gateway) governToolCalls(ctx context.Context, c *call, body []byte) error {
	if g.governor == nil || !g.governor.Has(policy.Tool) {
		return nil
	}
	calls, err := toolCalls(body)
	if err != nil {
		return g.abort(ctx, c, err)
	}
	return g.governTools(ctx, c, calls, false)
}

// governStreamedToolCalls puts the tool calls of a streamed answer before
// the tool policies once the stream is over. The client has them already,
// so the verdicts are recorded and audited, never enforced: a deployment
// that must stop tool calls asks without streaming.
func (g *Gateway) governStreamedToolCalls(ctx context.Context, c *call, chunks []json.RawMessage) {
	if g.governor == nil || !g.governor.Has(policy.Tool) {
		return
	}
	_ = g.governTools(ctx, c, streamedToolCalls(chunks), true)
}

func (g *Gateway) governTools(ctx context.Context, c *call, calls []toolCall, advisory bool) error {
	if len(calls) == 0 {
		return nil
	}
	ctx, span := startPolicy(ctx)
	err := g.governToolRules(ctx, c, calls, advisory)
	endPolicy(ctx, c, span, policy.Tool, err)
	return err
}

func (g *Gateway) governToolRules(ctx context.Context, c *call, calls []toolCall, advisory bool) error {
	worst := governance.Decision{Verdict: policy.Verdict{Decision: policy.Allow, Rules: []policy.RuleResult{}}}
	for _, tc := range calls {
		in := &policy.Input{Tool: policy.ToolCall{Name: tc.name, Args: policy.NewArgs(tc.args), Level: governance.DefaultToolLevel}}
		call := governance.Call{ID: c.id, RunID: c.run.ID, Target: policy.Tool, Advisory: advisory,
			Describe: func() (json.RawMessage, string) {
				return governance.DescribeTool(c.id, tc.name, tc.args, governance.DefaultToolLevel)
			}}
		d, err := g.governor.Decide(ctx, call, in)
		if advisory && err != nil {
			continue // the answer is out; a verdict that cannot be made is not recorded
		}
		if err != nil {
			return g.abort(ctx, c, err)
		}
		c.decided(d, policy.Tool, tc.name)
		// The strongest verdict answers; of two as strong, a failed one,
		// whose code (policy_error) says that no approval can pass it.
		if s, w := d.Verdict.Decision.Strength(), worst.Verdict.Decision.Strength(); s > w || s == w && d.Verdict.Failed() && !worst.Verdict.Failed() {
			worst = d
		}
	}
	if worst.Enforced {
		return g.block(ctx, c, worst.Verdict)
	}
	return nil
}

// decided notes a decision on the run: its verdict joins the explanation
// (the request's, then any stronger one on a tool call), its event the
// ledger, and the agent's standing the record.
func (c *call) decided(d governance.Decision, target policy.Target, tool string) {
	if d.Standing != nil {
		c.standing = d.Standing
	}
	if !d.Evaluated {
		return // no rule to evaluate: an allow with nothing to record
	}
	v := governance.LedgerVerdict(d)
	if target == policy.Chat || d.Verdict.Decision.Strength() > policy.Effect(c.run.Explanation.Policy.Decision).Strength() {
		c.run.Explanation.Policy = v
	}
	e := ledger.Event{Type: "policy.evaluated", Payload: payload(verdictEvent{Target: string(target), Tool: tool,
		Decision: v.Decision, Rules: v.Rules, Enforced: v.Enforced, ApprovalID: v.ApprovalID})}
	if target == policy.Chat {
		c.chatVerdicts = append(c.chatVerdicts, e)
	} else {
		c.toolVerdicts = append(c.toolVerdicts, e)
	}
}

type verdictEvent struct {
	Target     string              `json:"target"`
	Tool       string              `json:"tool,omitempty"`
	Provider   string              `json:"provider,omitempty"`
	Decision   string              `json:"decision"`
	Rules      []ledger.RuleResult `json:"rules"`
	Enforced   bool                `json:"enforced"`
	ApprovalID string              `json:"approvalId,omitempty"`
}

// block records the run as blocked and returns the error to answer with:
// the 403 of the verdict, or the 429 of the budgets that alone refused it.
// The run's rejected alternatives are the live route and then also (the
// providers the verdict forbade, say).
func (g *Gateway) block(ctx context.Context, c *call, v policy.Verdict, also ...ledger.Alternative) error {
	run := c.run
	run.Route = ledger.RouteBlocked
	// A blocked cached answer was not served: it saved nothing.
	c.hit, run.SavedUSD, run.Explanation.EstimatedSavingsUSD = nil, 0, 0
	if d, ok := run.Explanation.Cache.(*cacheDetail); ok {
		d.Served = false
	}
	e, why := governance.BlockError(v), "a policy does not allow this request"
	if b := g.governor.BudgetError(ctx, c.id, v, c.spent); b != nil {
		e, why = b, "a budget's limit is reached"
	}
	run.Explanation.Route, run.Explanation.Reason = ledger.RouteBlocked, e.Public
	run.Explanation.Rejected = append([]ledger.Alternative{{Route: ledger.RouteLive, Reason: why}}, also...)
	if err := g.finish(ctx, c, httpstatus.Of(e), e.Public); err != nil {
		return err
	}
	return e
}

// abort records the run of a call that governance could not decide on,
// and returns the error: a call is never let through undecided. A caller
// with too many requests waiting for approval is told so (429), its run
// recorded as blocked.
func (g *Gateway) abort(ctx context.Context, c *call, err error) error {
	if e := errs.As(err); e != nil && e.Kind == errs.RateLimited {
		c.run.Route = ledger.RouteBlocked
		c.run.Explanation.Route, c.run.Explanation.Reason = ledger.RouteBlocked, e.Public
		if rerr := g.finish(ctx, c, httpstatus.Of(e), e.Public); rerr != nil {
			return rerr
		}
		return e
	}
	e := errs.Wrap(err, errs.Internal, "internal", "the policy decision could not be made")
	if rerr := g.finish(ctx, c, httpstatus.Of(e), e.Public); rerr != nil {
		return rerr
	}
	return e
}

// describeChat is what a person deciding on a held chat request sees, and
// its fingerprint: the request's canonical JSON without the fields that
// only change how the answer is delivered.
func (c *call) describeChat() (json.RawMessage, string) {
	canonical, err := c.req.Canonical, error(nil)
	if canonical == nil {
		canonical, err = cache.CanonicalRequest(c.req.Body)
	}
	if err != nil {
		canonical = c.req.Body
	}
	return canonical, governance.Fingerprint(policy.Chat, c.id, canonical)
}

type toolCall struct {
	name string
	args map[string]any
}

// toolCalls reads the function calls of a chat.completion body: tool_calls
// and the older function_call, arguments as a JSON string or an object. A
// body that speaks of tool calls but cannot be read is an error: its calls
// would otherwise pass unjudged.
func toolCalls(body []byte) ([]toolCall, error) {
	if !bytes.Contains(body, []byte(`"tool_calls"`)) && !bytes.Contains(body, []byte(`"function_call"`)) {
		return nil, nil
	}
	type function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var res struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function function `json:"function"`
				} `json:"tool_calls"`
				FunctionCall *function `json:"function_call"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("the answer's tool calls cannot be read: %w", err)
	}
	var out []toolCall
	for _, ch := range res.Choices {
		fns := make([]function, 0, len(ch.Message.ToolCalls)+1)
		for _, tc := range ch.Message.ToolCalls {
			fns = append(fns, tc.Function)
		}
		if ch.Message.FunctionCall != nil {
			fns = append(fns, *ch.Message.FunctionCall)
		}
		for _, fn := range fns {
			out = append(out, toolCall{name: fn.Name, args: rawArgs(fn.Arguments)})
		}
	}
	return out, nil
}

// rawArgs reads arguments given as a JSON string holding an object, or as
// the object itself.
func rawArgs(raw json.RawMessage) map[string]any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return governance.ParseArgs(s)
	}
	return governance.ParseArgs(string(raw))
}

// streamedToolCalls puts together the function calls of a streamed answer
// from their deltas: a call's name comes in one chunk, its arguments in
// pieces, both keyed by the choice and the call's index.
func streamedToolCalls(chunks []json.RawMessage) []toolCall {
	type key struct{ choice, call int }
	type partial struct {
		name string
		args strings.Builder
	}
	var (
		order []key
		calls = map[key]*partial{}
	)
	for _, ch := range chunks {
		if !bytes.Contains(ch, []byte(`"tool_calls"`)) {
			continue
		}
		var chunk struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					ToolCalls []struct {
						Index    int `json:"index"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(ch, &chunk) != nil {
			continue
		}
		for _, choice := range chunk.Choices {
			for _, tc := range choice.Delta.ToolCalls {
				k := key{choice.Index, tc.Index}
				p := calls[k]
				if p == nil {
					p = &partial{}
					calls[k] = p
					order = append(order, k)
				}
				if tc.Function.Name != "" {
					p.name = tc.Function.Name
				}
				p.args.WriteString(tc.Function.Arguments)
			}
		}
	}
	out := make([]toolCall, 0, len(order))
	for _, k := range order {
		p := calls[k]
		out = append(out, toolCall{name: p.name, args: governance.ParseArgs(p.args.String())})
	}
	return out
}
