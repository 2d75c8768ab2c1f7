package gateway

import (
	"context"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/metrics"
)

// Outcome is what a call's recorded run tells the layer that answered it
// (the HTTP layer's metrics and request log): the layer puts one in the
// call's context with WithOutcome, and the call fills it once its run is
// recorded. A call without one fills nothing.
type Outcome struct {
	RunID string
	metrics.Run
}

type outcomeKey struct{}

// WithOutcome returns ctx carrying o, for the call made with it to fill.
func WithOutcome(ctx context.Context, o *Outcome) context.Context {
	return context.WithValue(ctx, outcomeKey{}, o)
}

// report fills the context's Outcome, if there is one, from the run.
func report(ctx context.Context, run *ledger.Run, artifactType string) {
	o, _ := ctx.Value(outcomeKey{}).(*Outcome)
	if o == nil {
		return
	}
	*o = Outcome{RunID: run.ID, Run: metrics.Run{Route: run.Route, Provider: run.Provider, Model: run.Model,
		InputTokens: run.PromptTokens, OutputTokens: run.CompletionTokens,
		CostUSD: run.CostUSD, SavedUSD: run.SavedUSD, GhostSavedUSD: run.GhostSavedUSD, ArtifactType: artifactType}}
}
