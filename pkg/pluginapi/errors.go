package pluginapi

import (
	"fmt"
	"time"
)

// ProviderError is a failure reported in the provider's own terms, which svc
// returns to the client as a chat-completions error object with Status.
type ProviderError struct {
	Status  int    // HTTP status to answer with (svc answers 5xx as 502)
	Type    string // e.g. "invalid_request_error"
	Code    string // e.g. "model_not_found"
	Param   string // the offending request field, if any
	Message string
	// RetryAfter is how long the provider asked the client to wait before
	// trying again (the Retry-After of an answer svc retries: RetryAfter);
	// 0 when it did not say. svc waits that long before it asks the same
	// provider again, and passes a 429's on in its own Retry-After header,
	// up to MaxRetryAfter.
	RetryAfter time.Duration
}

// CodeTimeout is the Code of a ProviderError that says the provider's own
// timeout (ProviderConfig.Timeout) ended the call: svc counts the attempt
// as timed out, as when its own timer for the instance ends it.
const CodeTimeout = "upstream_timeout"

// Codes of a ProviderError (answered 502) that mean the provider's own
// configuration failed, not the call: svc's key was refused, or the
// operator's account cannot pay. A router falls to another provider and
// never asks the same one again in the call.
const (
	CodeUpstreamAuthFailed = "upstream_auth_failed"
	CodeUpstreamBilling    = "upstream_billing"
)

// CodeUnsupported is the code of a ProviderError (400) refusing a valid
// chat-completions request that this provider cannot serve: a parameter it
// has no equivalent for (n above 1, logprobs, a temperature beyond its
// range). svc asks the call's next provider, which may serve it; when none
// does, the caller gets the refusal.
const CodeUnsupported = "unsupported_by_provider"

// CodeUpstreamUnreachable is the code of a ProviderError (answered 502)
// for an upstream that gave no answer: the connection could not be made,
// or broke. svc counts the attempt unavailable, with no upstream status.
const CodeUpstreamUnreachable = "upstream_unreachable"

// Codes of a ProviderError (answered 502) for an answer svc will not pass
// on: one that is not what the API answers (CodeBadResponse), or larger
// than svc holds (CodeResponseTooLarge), its body or its headers.
const (
	CodeBadResponse      = "upstream_bad_response"
	CodeResponseTooLarge = "upstream_response_too_large"
)

// MaxRetryAfter is the longest wait svc passes on from a provider; a
// longer one is cut to it.
const MaxRetryAfter = 24 * time.Hour

// Error implements error.
func (e *ProviderError) Error() string {
	return fmt.Sprintf("provider error %d %s: %s", e.Status, e.Type, e.Message)
}
