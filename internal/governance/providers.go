package governance

import (
	"context"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/policy"
)

// ProviderVerdict is the provider rules' verdict on one candidate provider
// of a chat call.
type ProviderVerdict struct {
	Provider string
	Verdict  policy.Verdict
	// Enforced says the candidate is taken out of the call's route: a deny
	// where policies are enforced. In observe mode a deny is recorded with
	// Enforced false.
	Enforced bool
}

// JudgeProviders puts each candidate provider of a chat call before the
// provider rules (target provider). It returns a verdict for each
// candidate, in order, or nil when no provider rule is in force.
func (g *Governor) JudgeProviders(ctx context.Context, id *auth.Identity, runID string, req policy.Request, candidates []policy.Candidate) ([]ProviderVerdict, error) {
	if !g.Has(policy.Provider) {
		return nil, nil
	}
	return nil, nil // evaluated once the provider target loads
}
