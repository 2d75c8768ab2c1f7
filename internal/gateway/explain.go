package gateway

// The route explanation a run carries: why its route was taken, and why
// each other route was not.

import (
	"time"

	"github.com/svc-gateway/svc/internal/ledger"
)

// liveExplanation explains a live route when nothing else could serve.
func liveExplanation() ledger.RouteExplanation {
	return ledger.RouteExplanation{
		Route:  ledger.RouteLive,
		Reason: "no cached answer or promoted artifact can serve this request",
		Rejected: []ledger.Alternative{
			{Route: ledger.RouteExactCache, Reason: "no cached answer for this request"},
			{Route: ledger.RouteArtifact, Reason: "no promoted artifact for this request's pattern"},
		},
		Policy: ledger.Verdict{Decision: "allow", Rules: []ledger.RuleResult{}},
	}
}

// reject sets why route was not taken.
func (c *call) reject(route, reason string) {
	ex := &c.run.Explanation
	for i := range ex.Rejected {
		if ex.Rejected[i].Route == route {
			ex.Rejected[i].Reason = reason
			return
		}
	}
	ex.Rejected = append(ex.Rejected, ledger.Alternative{Route: route, Reason: reason})
}

func withoutRoute(alts []ledger.Alternative, route string) []ledger.Alternative {
	out := alts[:0]
	for _, a := range alts {
		if a.Route != route {
			out = append(out, a)
		}
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	u := t.UTC()
	return &u
}
