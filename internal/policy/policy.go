// Package policy is svc's CEL policy engine. Operators write rules in
// files: each rule has a target (chat, tool, web or provider), a CEL
// condition and an effect. Every condition is parsed, type-checked and planned once, when the
// files are loaded; a request only evaluates the programs. Deny wins over
// require_approval, which wins over allow.
package policy

import (
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
)

// Target is what a rule is evaluated on.
type Target string

// The targets.
const (
	Chat Target = "chat" // each chat request, before the provider
	Tool Target = "tool" // each tool call: returned by the model, or traced
	Web  Target = "web"  // each action of a web session
	// Provider is each candidate provider of a chat request, before the
	// call: a deny takes that provider out of the call's route.
	Provider Target = "provider"
)

// Effect is what a matching rule asks for.
type Effect string

// The effects, weakest first.
const (
	Allow           Effect = "allow"
	RequireApproval Effect = "require_approval"
	Deny            Effect = "deny"
)

// Strength orders effects: deny 2, require_approval 1, allow 0.
func (e Effect) Strength() int {
	switch e {
	case Deny:
		return 2
	case RequireApproval:
		return 1
	}
	return 0
}

// Verdict is the decision on one request: the strongest effect among the
// rules that matched, and those rules.
type Verdict struct {
	Decision Effect       `json:"decision"`
	Rules    []RuleResult `json:"rules"`
	// ApprovalID names the approval that let a request held for approval
	// pass, or the one opened for it.
	ApprovalID string `json:"approvalId,omitempty"`
	// AllowErrors counts the allow rules whose condition failed to
	// evaluate. They allow nothing and are not listed in Rules (the
	// verdict is no policy error for them, and what runs record is
	// unchanged); they count as policy errors in the metrics.
	AllowErrors int `json:"-"`
}

// RuleResult is a rule that matched.
type RuleResult struct {
	ID     string `json:"id"`
	Effect Effect `json:"effect"`
	Reason string `json:"reason"`
	// Error is set when the condition failed to evaluate: a deny or
	// require_approval rule is then listed, so that a broken rule never
	// lets a request through, and the verdict is a policy error (Failed).
	Error string `json:"error,omitempty"`
}

// Blocks reports whether the verdict stops the request where policies are
// enforced.
func (v Verdict) Blocks() bool { return v.Decision != Allow }

// Failed reports whether a deny or require_approval rule of the verdict
// could not be evaluated (its cost limit or the deadline stopped it, or it
// failed otherwise). Such a verdict is a policy error: it blocks like the
// rule's effect, but no approval can let it pass, since no person can
// approve what the rule could not judge.
func (v Verdict) Failed() bool {
	for _, r := range v.Rules {
		if r.Error != "" {
			return true
		}
	}
	return false
}

// Denied reports whether a deny rule matched, not merely failed.
func (v Verdict) Denied() bool {
	for _, r := range v.Rules {
		if r.Effect == Deny && r.Error == "" {
			return true
		}
	}
	return false
}

// Input is everything a condition can see. Only the part of the target is
// filled: request for chat, tool for tool, web for web, request and
// candidate for provider; tenant, mode and agent always; spend for chat,
// when a rule in force reads it (Set.ReadsSpend) or the tenant has budgets.
type Input struct {
	Tenant    string
	Mode      string
	Request   Request
	Tool      ToolCall
	Web       WebAction
	Agent     Agent
	Candidate Candidate // the provider judged, as `provider`
	Spend     Spend
}

// Request is a chat request, as `request` in CEL.
type Request struct {
	Model    string    `cel:"model"`
	App      string    `cel:"app"`
	Agent    string    `cel:"agent"`
	Subject  string    `cel:"subject"`
	Messages []Message `cel:"messages"`
	Tools    []string  `cel:"tools"` // names of the offered tools
	// Providers are the names of the providers the call may go to, in
	// the order they would be tried.
	Providers []string `cel:"providers"`
	// Key is the calling API key's id; empty without one.
	Key string `cel:"key"`
	// EstimatedCostUSD is what the call is expected to cost before it is
	// made: its prompt's estimated tokens, and max_tokens (or the model's
	// recent answers' length when the request sets none), at the first
	// candidate provider's prices; 0 when the price is unknown.
	EstimatedCostUSD float64 `cel:"estimatedCostUsd"`
}

// Spend is what the caller has spent, as `spend` in CEL: spend.app.day.usd,
// spend.key.month.tokens. Each scope counts the calls of the request's
// tenant, app, key, agent or subject (zero where the request names none),
// recorded and in flight (at their estimated cost).
type Spend struct {
	Tenant  SpendScope `cel:"tenant"`
	App     SpendScope `cel:"app"`
	Key     SpendScope `cel:"key"`
	Agent   SpendScope `cel:"agent"`
	Subject SpendScope `cel:"subject"`
}

// SpendScope is one scope's counters over the current hour, day and
// calendar month.
type SpendScope struct {
	Hour  SpendWindow `cel:"hour"`
	Day   SpendWindow `cel:"day"`
	Month SpendWindow `cel:"month"`
}

// SpendWindow is one counter: the cost in USD, the tokens and the requests
// of the calls a provider answered, and the hits (answers from the cache
// or an artifact, which cost nothing).
type SpendWindow struct {
	USD      float64 `cel:"usd"`
	Tokens   int64   `cel:"tokens"`
	Requests int64   `cel:"requests"`
	Hits     int64   `cel:"hits"`
}

// Candidate is one candidate provider of a chat request, as `provider` in
// CEL.
type Candidate struct {
	Name   string `cel:"name"`   // the instance's name in the providers file
	Plugin string `cel:"plugin"` // openai, anthropic, mock, or a plugin binary's path
	Model  string `cel:"model"`  // the model it would be asked for
}

// Message is one chat message with its text.
type Message struct {
	Role    string `json:"role" cel:"role"`
	Content string `json:"content" cel:"content"`
}

// ToolCall is a tool call, as `tool` in CEL.
type ToolCall struct {
	Name  string `cel:"name"`
	Args  Args   `cel:"args"`
	Level int64  `cel:"level"` // side-effect level, 0 to 4
}

// Args are a tool call's arguments: map(string, dyn) in CEL, since a
// tool's arguments have no schema svc knows. (CEL's native types cannot
// declare a field of Go type any; a value that is already a CEL map can.)
type Args struct {
	traits.Mapper
	size int // in bytes, as Input.size counts them
}

var argsType = cel.MapType(cel.StringType, cel.DynType)

// NewArgs wraps decoded JSON arguments; nil is an empty map.
func NewArgs(m map[string]any) Args {
	if m == nil {
		m = map[string]any{}
	}
	return Args{Mapper: types.NewStringInterfaceMap(types.DefaultTypeAdapter, m), size: jsonSize(m)}
}

// Type is CEL's map(string, dyn), also for the zero Args the type
// registry inspects.
func (Args) Type() ref.Type { return argsType }

// WebAction is an action of a web session, as `web` in CEL.
type WebAction struct {
	Action string            `cel:"action"`
	URL    string            `cel:"url"`
	Host   string            `cel:"host"`
	Level  int64             `cel:"level"` // governance level: 0 type/select, 1 click, 3 submit
	Fields map[string]string `cel:"fields"`
}

// Agent is the calling agent, as `agent` in CEL.
type Agent struct {
	Name  string `cel:"name"`
	Trust string `cel:"trust"`
}

// newEnv declares the variables every condition may use, with their types,
// so that a misspelt field or a comparison of a string with a number is
// refused when the file is loaded.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[Request](), reflect.TypeFor[Message](), reflect.TypeFor[ToolCall](),
			reflect.TypeFor[WebAction](), reflect.TypeFor[Agent](), reflect.TypeFor[Candidate](),
			reflect.TypeFor[Spend](), reflect.TypeFor[SpendScope](), reflect.TypeFor[SpendWindow](), ext.ParseStructTags(true)),
		ext.Strings(),
		cel.CrossTypeNumericComparisons(true),
		cel.Variable("tenant", cel.StringType),
		cel.Variable("mode", cel.StringType),
		cel.Variable("request", cel.ObjectType("policy.Request")),
		cel.Variable("tool", cel.ObjectType("policy.ToolCall")),
		cel.Variable("web", cel.ObjectType("policy.WebAction")),
		cel.Variable("agent", cel.ObjectType("policy.Agent")),
		cel.Variable("provider", cel.ObjectType("policy.Candidate")),
		cel.Variable("spend", cel.ObjectType("policy.Spend")),
	)
}
