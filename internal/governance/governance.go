// Package governance applies policies to calls: it evaluates the rules in
// force, lets an approved request pass, opens an approval for a held one,
// moves the calling agent's trust, audits every decision that is not a plain
// allow and tells the tenant's webhook about blocks and approvals. The
// gateway asks it about chat requests and the tool calls models return; the
// trace API about traced tool calls; the web sessions about their actions.
package governance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/approval"
	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/internal/spend"
)

// Notifier sends a tenant's notable events to its webhook.
type Notifier interface {
	Notify(ctx context.Context, tenantID, eventType string, data any)
}

// The webhook events governance sends.
const (
	EventPolicyBlocked     = "policy.blocked"
	EventApprovalRequested = "approval.requested"
	EventApprovalDecided   = "approval.decided"
)

// Governor decides on calls.
type Governor struct {
	policies  *policy.Engine
	approvals *approval.Service
	audit     *audit.Log
	notify    Notifier
	standings *standings
	verdicts  VerdictStore
	budgets   Budgets
	zones     spend.Zones
	now       func() time.Time
	logger    hclog.Logger
	metrics   *metrics.Metrics
	// pendingLimited counts the requests refused for their caller's
	// pending approvals (the approvals rate limit).
	pendingLimited *metrics.Counter
}

// Options configure a Governor.
type Options struct {
	Policies  *policy.Engine
	Approvals *approval.Service
	Audit     *audit.Log
	Notifier  Notifier // may be nil
	Agents    AgentStore
	// Verdicts reads the recorded verdicts back, for the rules' matches
	// (see verdicts.go); nil counts none.
	Verdicts VerdictStore
	// Budgets gives each tenant's budgets, their hard ones compiled into
	// chat rules evaluated with the policy files' (see budgets.go); nil:
	// no budgets.
	Budgets Budgets
	// Zones gives the time zone a tenant's budget windows reset in; nil
	// is UTC.
	Zones spend.Zones
	// Now is the clock the matches of the last hour and day are counted
	// by: the audit trail's; nil is time.Now.
	Now    func() time.Time
	Logger hclog.Logger
	// Metrics counts the verdicts and the policy errors; nil counts
	// nothing.
	Metrics *metrics.Metrics
}

// New returns a governor.
func New(o Options) *Governor {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Verdicts == nil {
		o.Verdicts = noVerdicts{}
	}
	if o.Zones == nil {
		o.Zones = spend.UTC{}
	}
	// A provider's rules allow or deny: the policy loader refuses a
	// require_approval on them.
	decisions := []string{string(policy.Allow), string(policy.RequireApproval), string(policy.Deny)}
	o.Metrics.KnownPolicyTargets([]string{string(policy.Chat), string(policy.Tool), string(policy.Web)}, decisions)
	o.Metrics.KnownPolicyTargets([]string{string(policy.Provider)}, []string{string(policy.Allow), string(policy.Deny)})
	return &Governor{policies: o.Policies, approvals: o.Approvals, audit: o.Audit, notify: o.Notifier,
		standings: newStandings(o.Agents), verdicts: o.Verdicts, budgets: o.Budgets, zones: o.Zones, now: o.Now, logger: o.Logger,
		metrics: o.Metrics, pendingLimited: o.Metrics.RateLimiter("approvals")}
}

// Decision is governance's answer on one call.
type Decision struct {
	Verdict policy.Verdict
	// Enforced says the verdict stops the call: it is not allow and the
	// caller's key is in optimize mode, or a budget denied it. In observe
	// mode nothing else is stopped and the verdict records what would
	// have happened.
	Enforced bool
	// Standing is the calling agent's standing after the decision; nil
	// when the call names no agent.
	Standing *ledger.Standing
	// Evaluated says rules of the target were in force (the policy
	// files', or, on a chat request, the tenant's budgets); without any,
	// the decision is a bare allow worth no record.
	Evaluated bool
}

// Call is what governance needs to know of a call besides its target's
// input.
type Call struct {
	ID     *auth.Identity
	RunID  string
	Target policy.Target
	// Describe returns the request as the person deciding on it should see
	// it, and its fingerprint (see Fingerprint): the identical request has
	// the same one. It is called only when a rule holds the request.
	Describe func() (request json.RawMessage, fingerprint string)
	// Advisory says the call has happened already (a tool call the client
	// received in a stream): the verdict is recorded, never enforced, and
	// no approval is opened.
	Advisory bool
	// Unheld says the call cannot wait for a person: it is one step of
	// another (a redirect) and cannot be retried alone. A require_approval
	// verdict refuses it, and no approval is opened.
	Unheld bool
}

// Rules lists the rules in force.
func (g *Governor) Rules() []policy.Rule { return g.policies.Set().Rules() }

// Has reports whether any rule in force has target t.
func (g *Governor) Has(t policy.Target) bool { return g.policies.Set().Has(t) }

// Decide evaluates in for c and acts on the verdict: an approved identical
// request passes, a held one opens (or finds) its approval, the agent's
// standing moves, and anything but a plain allow is audited. A verdict a
// rule could not reach (policy.Verdict.Failed) is never passed by an
// approval, nor opens one: no person can approve what the rule could not
// judge. A failure of the approval store fails the call rather than letting
// it through, and a caller at its limit of pending approvals gets
// errs.RateLimited.
//
// A chat request is also put before the tenant's budgets, in the same
// verdict (see budgets.go): a budget's deny stops the call in every mode.
//
// Decide is Prepare, Judge and Settle in one call; a call decided under a
// lock (on its spend) makes them apart, and settles outside the lock.
func (g *Governor) Decide(ctx context.Context, c Call, in *policy.Input) (Decision, error) {
	g.Prepare(ctx, c, in)
	j, err := g.Judge(ctx, c, in)
	if err != nil {
		return Decision{}, err
	}
	return g.Settle(ctx, j)
}

// Prepare puts in what the rules read of the caller: its tenant, its
// mode and its agent with the agent's trust (a read of the store, done
// before any lock).
func (g *Governor) Prepare(ctx context.Context, c Call, in *policy.Input) {
	id := c.ID
	in.Tenant, in.Mode = id.TenantID, string(id.Mode)
	if id.Agent != "" {
		in.Agent = g.agent(ctx, id)
	}
}

// Judgment is a decision judged and not yet acted on: Settle acts on it.
type Judgment struct {
	// Decision is the outcome as it will stand: Enforced says whether the
	// call is stopped. Settle adds the agent's standing and the approval
	// it opens.
	Decision
	call Call
	// judged is the verdict as the rules gave it, before an approval's
	// exception passed it: the one counted.
	judged policy.Verdict
	// hold says Settle opens (or finds) an approval for the request,
	// described by request and fingerprint.
	hold        bool
	request     json.RawMessage
	fingerprint string
}

// Judge evaluates the prepared in (Prepare) for c: the policy files'
// rules and, on a chat request, the tenant's budgets. It writes nothing,
// so that it may run under a lock: the only read is, for a
// require_approval verdict, the approval in force that turns it into an
// allow (it changes whether the call is stopped). Its failure fails the
// call.
func (g *Governor) Judge(ctx context.Context, c Call, in *policy.Input) (Judgment, error) {
	id := c.ID
	set := g.policies.Set()
	j := Judgment{call: c, Decision: Decision{Verdict: set.Evaluate(ctx, c.Target, in), Evaluated: set.Has(c.Target)}}
	if c.Target == policy.Chat && g.budgets != nil && g.judgeBudgets(ctx, id.TenantID, in, &j.Verdict) {
		j.Evaluated = true
	}
	j.judged = j.Verdict
	if j.Verdict.Decision == policy.RequireApproval && !j.Verdict.Failed() {
		if err := g.pass(ctx, &j); err != nil {
			return Judgment{}, err
		}
	}
	j.Enforced = j.Verdict.Blocks() && !c.Advisory && (id.Mode == auth.Optimize || budgetDenied(j.Verdict))
	return j, nil
}

// Settle acts on a judgment, outside any lock: it counts the verdict,
// opens the approval of a held request, moves the agent's standing,
// audits anything but a plain allow and tells the webhook about a block.
// A failure of the approval store fails the call, and a caller at its
// limit of pending approvals gets errs.RateLimited.
func (g *Governor) Settle(ctx context.Context, j Judgment) (Decision, error) {
	c, d := j.call, j.Decision
	id := c.ID
	if d.Evaluated {
		g.count(c.Target, j.judged)
	}
	if j.hold {
		if err := g.hold(ctx, c, &d.Verdict, j.request, j.fingerprint); err != nil {
			return Decision{}, err
		}
	}
	if id.Agent != "" {
		// A budget reached says nothing of how the agent behaves: its
		// refusals leave the standing where it was (else an agent would
		// stay restricted long after its budget reset).
		var (
			st  ledger.Standing
			err error
		)
		if deniedByBudgetsAlone(d.Verdict) {
			st, err = g.standings.get(ctx, id.TenantID, id.Agent)
		} else {
			st, err = g.standings.observe(ctx, id.TenantID, id.Agent, string(d.Verdict.Decision))
		}
		switch {
		case err == nil:
			d.Standing = &st
		case deniedByBudgetsAlone(d.Verdict):
			g.logger.Warn("reading the agent's standing failed; the run records none", "agent", id.Agent, "error", err)
		default:
			g.logger.Warn("moving the agent's standing failed; this decision does not count", "agent", id.Agent, "error", err)
		}
	}
	if d.Verdict.Decision != policy.Allow || d.Verdict.ApprovalID != "" {
		g.record(ctx, c, d)
	}
	return d, nil
}

// agent is the calling agent as rules see it, with its trust; the zero
// Agent when the call names none.
func (g *Governor) agent(ctx context.Context, id *auth.Identity) policy.Agent {
	if id.Agent == "" {
		return policy.Agent{}
	}
	st, err := g.standings.get(ctx, id.TenantID, id.Agent)
	if err != nil {
		g.logger.Warn("agent standing unavailable; treating the agent as new", "agent", id.Agent, "error", err)
	}
	return policy.Agent{Name: id.Agent, Trust: st.Trust}
}

// pass turns the judgment's require_approval verdict into an allow when
// an approval of the identical request is in force and otherwise, where
// policies are enforced, marks the request to be held for a person.
func (g *Governor) pass(ctx context.Context, j *Judgment) error {
	c := j.call
	request, fingerprint := c.Describe()
	exc, err := g.approvals.Exception(ctx, c.ID.TenantID, fingerprint)
	if err != nil {
		return err
	}
	if exc != nil {
		j.Verdict.Decision, j.Verdict.ApprovalID = policy.Allow, exc.ID
		return nil
	}
	if c.ID.Mode != auth.Optimize || c.Advisory || c.Unheld {
		return nil // nothing is held; the verdict says it would have been
	}
	j.hold, j.request, j.fingerprint = true, request, fingerprint
	return nil
}

// hold opens (or finds) the approval of a held request, and notes it on
// the verdict.
func (g *Governor) hold(ctx context.Context, c Call, v *policy.Verdict, request json.RawMessage, fingerprint string) error {
	rules := make([]approval.Rule, 0, len(v.Rules))
	for _, r := range v.Rules {
		if r.Effect == policy.RequireApproval {
			rules = append(rules, approval.Rule{ID: r.ID, Effect: string(r.Effect), Reason: r.Reason})
		}
	}
	a, created, err := g.approvals.Open(ctx, approval.Request{
		TenantID: c.ID.TenantID, Target: string(c.Target), Fingerprint: fingerprint, RunID: c.RunID,
		Request: request, Rules: rules,
		RequestedBy: approval.Requester{Actor: c.ID.Actor(), App: c.ID.App, Agent: c.ID.Agent, Subject: c.ID.Subject},
	})
	if err != nil {
		if errs.Is(err, errs.RateLimited) {
			g.pendingLimited.Inc()
		}
		return err
	}
	v.ApprovalID = a.ID
	if created {
		g.send(ctx, c.ID.TenantID, EventApprovalRequested, map[string]any{"approval": webhookApproval(a)})
	}
	return nil
}

// count counts an evaluation on a request of target t, by its decision,
// and each rule that matched it (with its effect, a failed one as a policy
// error too), and each allow rule that failed as a policy error.
func (g *Governor) count(t policy.Target, v policy.Verdict) {
	if g.metrics == nil {
		return
	}
	g.metrics.PolicyEvaluation(string(t), string(v.Decision))
	for range v.AllowErrors {
		g.metrics.PolicyError(string(t))
	}
	for _, r := range v.Rules {
		g.metrics.PolicyVerdict(string(t), string(r.Effect), r.ID)
		if r.Error != "" {
			g.metrics.PolicyError(string(t))
		}
	}
}

// record audits a decision and tells the webhook about a block. A call
// refused by budgets alone is audited, not told: under load every call
// past a cap is refused, and hard budgets have their own alert.
func (g *Governor) record(ctx context.Context, c Call, d Decision) {
	v := d.Verdict
	details := verdictDetails(c.ID, c.Target, v.Rules, d.Enforced)
	if v.ApprovalID != "" {
		details["approvalId"] = v.ApprovalID
	}
	g.audit.Record(ctx, audit.Event{TenantID: c.ID.TenantID, Actor: c.ID.Actor(), Action: "policy." + string(c.Target),
		Decision: string(v.Decision), Target: c.RunID, Details: details})
	if d.Enforced && v.Decision == policy.Deny && !refusedByBudgets(c.ID, v) {
		g.send(ctx, c.ID.TenantID, EventPolicyBlocked, map[string]any{"runId": c.RunID, "target": string(c.Target), "verdict": v})
	}
}

// verdictDetails are the details of a recorded verdict's audit event;
// the recorded verdicts' matches read its rules.
func verdictDetails(id *auth.Identity, t policy.Target, rules []policy.RuleResult, enforced bool) map[string]any {
	return map[string]any{"target": string(t), "rules": rules, "enforced": enforced, "mode": string(id.Mode),
		"app": id.App, "agent": id.Agent, "subject": id.Subject}
}

func (g *Governor) send(ctx context.Context, tenantID, event string, data any) {
	if g.notify != nil {
		g.notify.Notify(ctx, tenantID, event, data)
	}
}

// DecideApproval approves or rejects an approval for an admin, audits it
// and tells the webhook.
func (g *Governor) DecideApproval(ctx context.Context, id *auth.Identity, approvalID string, approve bool, reason string) (approval.Approval, error) {
	a, err := g.approvals.Decide(ctx, id.TenantID, approvalID, approve, reason, id.Actor())
	if err != nil {
		return a, err
	}
	decision := audit.Deny
	if approve {
		decision = audit.Allow
	}
	g.audit.Record(ctx, audit.Event{TenantID: id.TenantID, Actor: id.Actor(), Action: "approval." + a.Status,
		Decision: decision, Target: a.ID, Details: map[string]any{"reason": a.Reason, "target": a.Target, "runId": a.RunID}})
	g.send(ctx, id.TenantID, EventApprovalDecided, map[string]any{"approval": webhookApproval(a)})
	return a, nil
}

// Replicate makes the agents' standing shared by the replicas of the
// database: each decision moves the standing in the store, and the trust
// policies read follows the other replicas' moves (told on feed, and read
// again past refresh). Call it before use.
func (g *Governor) Replicate(feed changes.Feed, refresh time.Duration) {
	g.standings.replicate(feed, refresh, g.now)
}

// SaveStanding stores an agent's standing that moved outside a run. With
// replicas (Replicate) the decision stored it already.
func (g *Governor) SaveStanding(ctx context.Context, tenantID, agent string, st ledger.Standing, at time.Time) {
	if g.standings.feed != nil {
		return
	}
	if err := g.standings.store.SaveAgentStanding(ctx, tenantID, agent, st, at); err != nil {
		g.logger.Error("storing an agent's standing failed", "agent", agent, "error", err)
	}
}

// Fingerprint identifies a request for approval exceptions: a hash of its
// target, who asks (app, agent, subject) and its canonical content.
func Fingerprint(target policy.Target, id *auth.Identity, canonical []byte) string {
	h := sha256.New()
	for _, part := range []string{string(target), id.App, id.Agent, id.Subject} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil))
}

// DescribeTool is what a person deciding on a held tool call sees, and its
// fingerprint.
func DescribeTool(id *auth.Identity, name string, args map[string]any, level int64) (json.RawMessage, string) {
	req, err := json.Marshal(map[string]any{"tool": name, "args": args, "level": level}) // map keys are sorted
	if err != nil {
		req = []byte(`{}`)
	}
	return req, Fingerprint(policy.Tool, id, req)
}

// webhookApproval is an approval as webhooks carry it: without the request
// itself, which can be far larger than a delivery may be (GET
// /api/v1/approvals has it).
func webhookApproval(a approval.Approval) map[string]any {
	return map[string]any{"id": a.ID, "status": a.Status, "target": a.Target, "runId": a.RunID, "rules": a.Rules,
		"requestedBy": a.RequestedBy, "createdAt": a.CreatedAt, "decidedAt": a.DecidedAt, "decidedBy": a.DecidedBy,
		"reason": a.Reason, "expiresAt": a.ExpiresAt}
}

// BlockError is the 403 a verdict that stops a call answers with, the
// verdict beside the error: policy_denied when a deny rule matched;
// policy_error when a rule could not be evaluated (its limit or the
// deadline stopped it, or it failed), naming it; approval_required when
// the call waits for approval ApprovalID.
func BlockError(v policy.Verdict) *errs.Error {
	e := &errs.Error{Kind: errs.Forbidden, Type: "policy_error", Beside: map[string]any{"verdict": v}}
	var ids []string
	for _, r := range v.Rules {
		switch {
		case v.Denied() && r.Effect == policy.Deny && r.Error == "",
			!v.Denied() && v.Failed() && r.Error != "",
			!v.Failed() && r.Effect == v.Decision:
			ids = append(ids, r.ID)
		}
	}
	switch {
	case v.Denied():
		e.Code, e.Public = "policy_denied", "blocked by policy: "+strings.Join(ids, ", ")
	case v.Failed():
		e.Code, e.Public = "policy_error", "blocked: a policy could not be evaluated on this request: "+strings.Join(ids, ", ")+
			" (the verdict says why)"
	default:
		e.Code, e.Public = "approval_required", "held for approval "+v.ApprovalID+" by policy: "+strings.Join(ids, ", ")
	}
	return e
}
