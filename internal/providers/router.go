package providers

import (
	"sync/atomic"
	"time"
)

// Router sends each call to the providers of the current Set. It is safe
// for concurrent use; Swap replaces the set without stopping calls in
// flight, which finish on the set their plan was made from.
type Router struct {
	set atomic.Pointer[Set]
	now func() time.Time
}

// NewRouter returns a router over set.
func NewRouter(set *Set, now func() time.Time) *Router {
	if now == nil {
		now = time.Now
	}
	r := &Router{now: now}
	r.set.Store(set)
	return r
}

// Swap makes set the current one.
func (r *Router) Swap(set *Set) { r.set.Store(set) }

// Current is the set calls are planned on now.
func (r *Router) Current() *Set { return r.set.Load() }

// Status is the providers' configuration and health, for the API: never a
// key.
type Status struct {
	Source    string           `json:"source"` // the providers file, or "" for the environment
	LoadedAt  time.Time        `json:"loadedAt"`
	OK        bool             `json:"ok"`              // the last load or reload succeeded
	Error     string           `json:"error,omitempty"` // why it failed; the last good set serves
	Retries   RetriesStatus    `json:"retries"`
	Providers []ProviderStatus `json:"providers"`
	Routes    []RouteStatus    `json:"routes"`
}

// RetriesStatus is Retries in the API's units.
type RetriesStatus struct {
	MaxAttempts  int   `json:"maxAttempts"`
	BackoffMS    int64 `json:"backoffMs"`
	MaxBackoffMS int64 `json:"maxBackoffMs"`
}

// ProviderStatus is one provider instance and its health.
type ProviderStatus struct {
	Name             string        `json:"name"`
	Plugin           string        `json:"plugin"`
	Mode             string        `json:"mode"`
	BaseURL          string        `json:"baseUrl"`
	Models           []string      `json:"models"`
	Weight           int           `json:"weight"`
	TimeoutMS        int64         `json:"timeoutMs"`
	Breaker          BreakerStatus `json:"breaker"`
	RateLimitedUntil *time.Time    `json:"rateLimitedUntil,omitempty"`
	Stats            ProviderStats `json:"stats"`
	LastError        string        `json:"lastError,omitempty"`
	LastErrorAt      *time.Time    `json:"lastErrorAt,omitempty"`
}

// Breaker states.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// BreakerStatus is a provider's circuit breaker now.
type BreakerStatus struct {
	State               string     `json:"state"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	OpenUntil           *time.Time `json:"openUntil,omitempty"`
	Failures            int        `json:"failures"` // the configured threshold; 0: disabled
	CooldownMS          int64      `json:"cooldownMs"`
}

// ProviderStats count a provider's attempts since it was loaded.
type ProviderStats struct {
	Attempts int64 `json:"attempts"`
	Failures int64 `json:"failures"`
}

// RouteStatus is one route of the set.
type RouteStatus struct {
	Model    string         `json:"model"`
	Strategy string         `json:"strategy"`
	Targets  []TargetStatus `json:"targets"`
}

// TargetStatus is one target of a route.
type TargetStatus struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	Weight   int    `json:"weight"`
}
