package spend_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/spend"
)

func TestAmountOf(t *testing.T) {
	cases := []struct {
		name string
		run  ledger.Run
		want spend.Amount
	}{
		{"live", ledger.Run{Route: ledger.RouteLive, CostUSD: 0.5, TotalTokens: 30}, spend.Amount{USD: 0.5, Tokens: 30, Requests: 1}},
		{"failed live call", ledger.Run{Route: ledger.RouteLive, Status: ledger.StatusError}, spend.Amount{Requests: 1}},
		{"cache hit", ledger.Run{Route: ledger.RouteExactCache, CostUSD: 0}, spend.Amount{Hits: 1}},
		{"artifact", ledger.Run{Route: ledger.RouteArtifact}, spend.Amount{Hits: 1}},
		{"blocked before the provider", ledger.Run{Route: ledger.RouteBlocked}, spend.Amount{}},
		{"blocked after the provider answered", ledger.Run{Route: ledger.RouteBlocked, CostUSD: 0.2, TotalTokens: 12},
			spend.Amount{USD: 0.2, Tokens: 12, Requests: 1}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, spend.AmountOf(&c.run), c.name)
	}
}

func TestWindowStarts(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	cases := []struct {
		name       string
		at         time.Time
		loc        *time.Location
		w          spend.Window
		start, end time.Time
	}{
		{"an hour", time.Date(2026, 11, 26, 10, 30, 5, 7, time.UTC), time.UTC, spend.Hour,
			time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC), time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC)},
		// 2026-11-01 06:30 UTC is 01:30 EST, the second 01:30 of the night
		// the clocks go back: its hour started at 06:00 UTC, not 05:00.
		{"the repeated hour", time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), ny, spend.Hour,
			time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC)},
		{"the first of the two", time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), ny, spend.Hour,
			time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)},
		{"a day of 25 hours", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), ny, spend.Day,
			time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 5, 0, 0, 0, time.UTC)},
		{"a half-hour zone's hour", time.Date(2026, 11, 26, 10, 10, 0, 0, time.UTC), kolkata, spend.Hour,
			time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC), time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC)},
		{"a half-hour zone's day", time.Date(2026, 11, 26, 18, 29, 0, 0, time.UTC), kolkata, spend.Day,
			time.Date(2026, 11, 25, 18, 30, 0, 0, time.UTC), time.Date(2026, 11, 26, 18, 30, 0, 0, time.UTC)},
		{"a month", time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), time.UTC, spend.Month,
			time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		start := c.w.Start(c.at, c.loc)
		assert.True(t, start.Equal(c.start), "%s: start %s, want %s", c.name, start.UTC(), c.start)
		end := c.w.End(start, c.loc)
		assert.True(t, end.Equal(c.end), "%s: end %s, want %s", c.name, end.UTC(), c.end)
		assert.True(t, !c.at.Before(start) && c.at.Before(end), "%s: %s is not within its window", c.name, c.at)
	}
}
