// Package ledger records runs: one per gateway call, with its route, cost,
// latency and explanation, and an append-only trace of events protected by a
// hash chain, so that an edited, dropped or spliced event is detected.
package ledger

import (
	"context"
	"encoding/json"
	"time"
)

// The routes a run can take.
const (
	RouteLive       = "live"
	RouteExactCache = "exact_cache"
	RouteArtifact   = "artifact"
	RouteBlocked    = "blocked"
)

// The statuses of a run.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusBlocked = "blocked" // a policy stopped the call
)

// Run is one gateway call.
type Run struct {
	ID               string    `json:"id"`
	TenantID         string    `json:"-"`
	CreatedAt        time.Time `json:"createdAt"`
	Route            string    `json:"route"`
	Status           string    `json:"status"`
	HTTPStatus       int       `json:"httpStatus"`
	Model            string    `json:"model"`
	App              string    `json:"app"`
	Agent            string    `json:"agent"`
	Subject          string    `json:"subject"`
	Mode             string    `json:"mode"`
	KeyID            string    `json:"keyId,omitempty"`
	Provider         string    `json:"provider"`
	Stream           bool      `json:"stream"`
	PromptTokens     int64     `json:"promptTokens"`
	CompletionTokens int64     `json:"completionTokens"`
	TotalTokens      int64     `json:"totalTokens"`
	UsageUnknown     bool      `json:"usageUnknown"`
	CostUSD          float64   `json:"costUsd"`
	PriceUnknown     bool      `json:"priceUnknown"`
	LatencyMS        float64   `json:"latencyMs"`
	// TraceID is the W3C trace id of the call, hex, when it had one: svc's
	// span when traces are exported, else the caller's traceparent passed
	// on. Empty for calls without one and runs recorded before.
	TraceID string `json:"traceId,omitempty"`
	// What serving from a cache or an artifact saved against the live call
	// it avoided; GhostSavedUSD, what an observe-mode run would have saved.
	SavedUSD      float64          `json:"savedUsd"`
	SavedMS       float64          `json:"savedMs"`
	GhostSavedUSD float64          `json:"ghostSavedUsd"`
	Explanation   RouteExplanation `json:"routeExplanation"`
	Error         string           `json:"error,omitempty"`
	EventCount    int              `json:"eventCount"`

	// Request and Response are the chat-completions bodies; only a run's
	// detail and replay bundle carry them.
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
}

// RouteExplanation says why a run took its route and what it passed over.
type RouteExplanation struct {
	Route               string        `json:"route"`
	Reason              string        `json:"reason"`
	Rejected            []Alternative `json:"rejected"`
	Policy              Verdict       `json:"policy"`
	Cache               any           `json:"cache"`
	Artifact            any           `json:"artifact"`
	EstimatedSavingsUSD float64       `json:"estimatedSavingsUsd"`
	Fallback            any           `json:"fallback"`
	// Provider is the provider instance that answered a live call;
	// Attempts are the calls made to providers ([]providers.Attempt), and
	// Candidates the providers the call could go to, in order
	// ([]providers.Candidate). Runs recorded before there were several
	// providers have none, and their JSON (and digest) is as it was.
	Provider   string `json:"provider,omitempty"`
	Attempts   any    `json:"attempts,omitempty"`
	Candidates any    `json:"candidates,omitempty"`
}

// Alternative is a route not taken, and why.
type Alternative struct {
	Route  string `json:"route"`
	Reason string `json:"reason"`
	// Provider is a provider of the live route that was not tried.
	Provider string `json:"provider,omitempty"`
}

// Verdict is the policy decision on a run.
type Verdict struct {
	Decision string       `json:"decision"`
	Rules    []RuleResult `json:"rules"`
	// Enforced says the decision stopped the call; a deny in observe mode
	// is recorded with Enforced false: what would have happened.
	Enforced bool `json:"enforced"`
	// ApprovalID is the approval a held request opened, or the one that
	// let it pass.
	ApprovalID string `json:"approvalId,omitempty"`
}

// RuleResult is one policy rule that matched.
type RuleResult struct {
	ID     string `json:"id"`
	Effect string `json:"effect"`
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"` // the condition failed; see policy.RuleResult
}

// Event is one entry of a run's trace.
type Event struct {
	Seq      int             `json:"seq"`
	Type     string          `json:"type"`
	At       time.Time       `json:"at"`
	Payload  json.RawMessage `json:"payload"`
	PrevHash Hash            `json:"prevHash"`
	Hash     Hash            `json:"hash"`
}

// Filter narrows a run listing. Empty fields match every run.
type Filter struct {
	Route  string
	Status string
	// App, Agent and Model match exactly.
	App   string
	Agent string
	Model string
	// TraceID matches the run's trace id exactly: 32 hex digits, read in
	// lower case.
	TraceID string
	// Since and Until bound the run's time: Since included, Until not.
	Since time.Time
	Until time.Time
	// Q is a case-insensitive search (ASCII letters fold) for text in the
	// run's id, model, app, agent, request or answer, among the SearchWindow
	// newest runs that match the other fields.
	Q      string
	Limit  int
	Offset int
}

// SearchWindow is how many runs, newest first, a search (Filter.Q) reads
// at most: a search scans the text of every run it reads, so its cost is
// bounded by this rather than by the size of the ledger.
const SearchWindow = 10_000

// maxFilterText bounds a filter's text fields.
const maxFilterText = 200

// Agent is an agent seen through X-Svc-Agent.
type Agent struct {
	Name      string    `json:"name"`
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
	RunCount  int64     `json:"runCount"`
	Trust     string    `json:"trust"`
}

// Feedback is a person's rating of a run's answer.
type Feedback struct {
	ID         string    `json:"id"`
	TenantID   string    `json:"-"`
	RunID      string    `json:"runId"`
	Rating     int       `json:"rating"`
	Correction string    `json:"correction,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
}

// Store persists runs and their events. Every method but InsertRuns is
// scoped to a tenant; a run of another tenant is errs.NotFound.
type Store interface {
	// InsertRuns stores runs with their events in one transaction, and
	// counts their agents.
	InsertRuns(ctx context.Context, recs []*Record) error
	// RestoreRuns stores those of recs that are not stored yet, for a
	// journal replayed after a crash.
	RestoreRuns(ctx context.Context, recs []*Record) error
	// Run returns one run with its request and response.
	Run(ctx context.Context, tenantID, id string) (Run, error)
	// ListRuns returns a page of the tenant's runs, newest first, and the
	// total that match f.
	ListRuns(ctx context.Context, tenantID string, f Filter) ([]Run, int, error)
	// RunEvents returns a run's events in order, and the head the run row
	// records (event count and last hash).
	RunEvents(ctx context.Context, tenantID, runID string) ([]Event, Head, error)
	// RunChain returns one run as stored, with its events and head, for
	// verifying it.
	RunChain(ctx context.Context, tenantID, id string) (StoredRun, error)
	// AppendEvent appends an event to a run's chain, serialized with every
	// other append. Returns errs.NotFound for an unknown or foreign run.
	AppendEvent(ctx context.Context, tenantID, runID, typ string, at time.Time, payload json.RawMessage) (Event, error)
	// AddFeedback stores f. Returns errs.NotFound for an unknown run.
	AddFeedback(ctx context.Context, f *Feedback) error
	// ListAgents returns the tenant's agents, most recently seen first.
	ListAgents(ctx context.Context, tenantID string) ([]Agent, error)
	SideEffectStore
	SavingsStore
}

// Head is what a run row records of its chain: how many events, and the
// hash of the last one.
type Head struct {
	Count int
	Hash  Hash
}
