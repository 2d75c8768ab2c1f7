package learning

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/learning/synth"
)

// Report is what one learning pass did.
type Report struct {
	ID                   string         `json:"id"`
	Trigger              string         `json:"trigger"` // "tick", "timer"
	ArtifactsSynthesized int            `json:"artifactsSynthesized"`
	PromotionsEligible   []string       `json:"promotionsEligible"`
	AutoPromoted         []string       `json:"autoPromoted"`
	SynthesisReports     []synth.Report `json:"synthesisReports"`
	Quarantined          []string       `json:"quarantined"`
	Retired              []string       `json:"retired"`
	RunsScanned          int            `json:"runsScanned"`
	Patterns             int            `json:"patterns"`
	Transitions          []Transition   `json:"transitions"`
	DurationMS           float64        `json:"durationMs"`
	CreatedAt            time.Time      `json:"createdAt"`
}

// Transition is a pattern's change of state, recorded in the report that
// made it.
type Transition struct {
	PatternID string `json:"patternId"`
	From      string `json:"from"`
	To        string `json:"to"`
	Reason    string `json:"reason"`
}

// Reports is the last report and the history.
type Reports struct {
	Last    *Report  `json:"last"`
	History []Report `json:"history"`
	Report
}

// Reports returns the tenant's last learning report (its fields also at
// the top level, so the answer is itself a report) and up to 50 before it.
func (s *Service) Reports(ctx context.Context, tenantID string) (Reports, error) {
	rs, err := s.o.Store.Reports(ctx, tenantID, 50)
	if err != nil {
		return Reports{}, err
	}
	out := Reports{History: rs, Report: Report{PromotionsEligible: []string{}, AutoPromoted: []string{},
		SynthesisReports: []synth.Report{}, Quarantined: []string{}, Retired: []string{}, Transitions: []Transition{}}}
	if len(rs) > 0 {
		out.Last = &rs[0]
		out.Report = rs[0]
	}
	return out, nil
}
