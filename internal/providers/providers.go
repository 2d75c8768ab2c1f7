// Package providers routes each call to one of several provider instances:
// the set an operator declares in SVC_PROVIDERS_FILE (or the one provider
// today's environment variables describe), the routes from a model name or
// alias to its providers, and, per call, the plan of candidates, the
// attempts made with retries and fallbacks, and the circuit breakers that
// take a failing provider out of rotation. It knows nothing of HTTP.
package providers

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Modes a provider instance runs in.
const (
	ModePlugin    = "plugin"     // a subprocess through go-plugin (the default)
	ModeInProcess = "in_process" // a first-party provider inside svc's process
)

// Route strategies.
const (
	Ordered  = "ordered"  // the first healthy target, then the next on failure
	Weighted = "weighted" // a weighted random pick among the healthy targets
)

// Provider is one provider instance of a Set, opened.
type Provider struct {
	Name    string // unique within the set; recorded on runs
	Plugin  string // "openai", "anthropic", "mock", or a plugin binary's path
	Mode    string // ModePlugin or ModeInProcess
	BaseURL string // as configured, without credentials; "" for the plugin's default (an instance of a providers file without base_url)
	// Models are the names or globs (path.Match syntax) of the models the
	// instance serves; empty serves every model.
	Models  []string
	Weight  int            // its share among the equals of a weighted route; at least 1
	Timeout time.Duration  // one attempt, until its answer (a stream: its first chunk); 0: none
	Prices  *pricing.Table // this instance's own prices, where they differ from the table; nil: none
	Breaker BreakerConfig
	// Impl calls the instance. It is also a pluginapi.Embedder when the
	// instance may serve embeddings.
	Impl pluginapi.Provider
	// Fingerprint is a digest of the instance's configuration: a reload
	// keeps an instance (its process, its breaker) whose fingerprint did
	// not change.
	Fingerprint string
}

// BreakerConfig is a provider's circuit breaker: Failures consecutive
// failed attempts open it for Cooldown, after which one probe at a time
// may pass (half-open) until one succeeds. Failures 0 disables it.
type BreakerConfig struct {
	Failures int
	Cooldown time.Duration
}

// Target is one provider of a route.
type Target struct {
	Provider string // a Provider's Name
	Model    string // the model named upstream; "" means as the caller named it
	Weight   int    // in a weighted route; 0 takes the provider's Weight
}

// Route sends the calls for a model name (or glob, or alias) to its targets.
type Route struct {
	Model    string
	Strategy string // Ordered or Weighted
	Targets  []Target
}

// Retries bound the attempts of one call.
type Retries struct {
	// MaxAttempts counts every attempt of a call, on every provider
	// together; 1 means no retry and no fallback.
	MaxAttempts int
	// Backoff is the first wait before another attempt on a provider
	// already tried in this call, doubled each time up to MaxBackoff, with
	// full jitter; a Retry-After the provider gave is waited instead when
	// longer. A fallback to a provider not yet tried does not wait.
	Backoff, MaxBackoff time.Duration
}

// Set is one validated configuration: what a load of the providers file
// (or the environment) gives, swapped in whole.
type Set struct {
	Providers []*Provider // in the file's order
	Routes    []Route     // in the file's order; the first that matches a model wins
	Retries   Retries
	// Source is the providers file, or "" when the set comes from the
	// environment variables.
	Source string
	// Secrets are the keys of the set's providers: no error text shows
	// them.
	Secrets []string
}

// Opener starts the implementation of one provider instance: a plugin
// process (ModePlugin) or a first-party provider in svc's process
// (ModeInProcess). plugin is Provider.Plugin.
type Opener interface {
	Open(ctx context.Context, name, plugin, mode string, cfg pluginapi.ProviderConfig) (Instance, error)
}

// PluginChecker is an Opener that can tell, without opening anything,
// whether a plugin in a mode could be opened: the Manager lists what it
// finds with the file's other problems.
type PluginChecker interface {
	CheckPlugin(plugin, mode string) error
}

// Instance is an opened provider: Close stops its process (a plugin) or
// releases what it holds.
type Instance interface {
	pluginapi.Provider
	Close()
}

// Candidate is one provider a call may go to.
type Candidate struct {
	Provider string `json:"provider"`
	Plugin   string `json:"plugin"`
	Model    string `json:"model"` // the model named upstream
}

// Attempt outcomes.
const (
	OutcomeOK          = "ok"
	OutcomeError       = "error"        // a 5xx, or a failure of another kind
	OutcomeTimeout     = "timeout"      // the attempt's Timeout passed
	OutcomeRateLimited = "rate_limited" // 429
	OutcomeUnavailable = "unavailable"  // the connection or the plugin process failed
	OutcomeRefused     = "refused"      // a 4xx: the caller's fault (never retried), the provider's configuration, or a request it cannot serve
	OutcomeCancelled   = "cancelled"    // the client went away
)

// Attempt is one call to one provider.
type Attempt struct {
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	Outcome      string  `json:"outcome"`
	Status       int     `json:"status,omitempty"` // the provider's HTTP status, when it answered with one
	LatencyMS    float64 `json:"latencyMs"`
	Error        string  `json:"error,omitempty"`
	RetryAfterMS int64   `json:"retryAfterMs,omitempty"`
	// WaitedMS is the backoff waited before this attempt.
	WaitedMS float64 `json:"waitedMs,omitempty"`
	// Unsupported marks a refusal of a request the provider cannot serve
	// (pluginapi.CodeUnsupported): it says nothing of the provider's
	// health or of how long the caller should wait.
	Unsupported bool `json:"-"`
}

// Skipped is a candidate not tried, and why: its breaker is open, it is
// rate limited, a policy forbids it, or the attempts ran out.
type Skipped struct {
	Provider string `json:"provider"`
	Reason   string `json:"reason"`
	// RetryAfterMS is, for a provider skipped as rate limited, how long
	// its limit has left.
	RetryAfterMS int64 `json:"retryAfterMs,omitempty"`
}

// NotCandidate says whether the provider was never a candidate of the
// call (it does not serve the model, or the model's route sends the call
// elsewhere), rather than a candidate left out.
func (s Skipped) NotCandidate() bool {
	return s.Reason == ReasonNotServed || s.Reason == ReasonNotRouted
}

// Plan is one call's route: the candidates in the order they will be
// tried, and, once the call is made, every attempt and every candidate not
// tried. One call owns its plan; it is not safe for concurrent use.
type Plan struct {
	Model      string // as the caller named it
	Route      string // the matched Route's Model; "" when the providers serving the model were taken in file order
	Strategy   string
	Candidates []Candidate
	Attempts   []Attempt
	Skipped    []Skipped
	// Answered is the provider that answered; "" until one did.
	Answered string
	// lastTried is 1 + the index in Candidates of the candidate last tried
	// (the one that answered, when one did); 0 before any attempt. A route
	// may list one provider twice, with two models: the name alone does
	// not tell which answered.
	lastTried int
	// lastProvider is the instance last tried: after a reload, not the
	// plan's own (its prices price the call).
	lastProvider *Provider
	// forbidden are the candidates a policy forbids, with the reason.
	forbidden map[string]string
	// st is the router's state the plan was made from: its calls use the
	// instances of the set it saw, even when a reload swapped in another.
	// order holds, for each candidate, its provider's index in
	// st.set.Providers.
	st    *state
	order []int
	// Room for the common plan of one candidate and one attempt, so that
	// planning and calling one provider costs a single allocation.
	one      [1]Candidate
	oneIdx   [1]int
	attempt1 [1]Attempt
}

// Forbid takes a candidate out of the plan before the call: it is listed
// among Skipped with reason.
func (p *Plan) Forbid(provider, reason string) {
	if p.forbidden == nil {
		p.forbidden = map[string]string{}
	}
	p.forbidden[provider] = reason
}
