package main_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browsertest"
)

// The budgets view, in open dev mode: a budget refused in the API's words
// under its field, then one saved that shows what its app spent of it,
// enforced at the gateway, the spend of each app over the day, and the
// budget deleted.
func TestBrowserConsoleBudgets(t *testing.T) {
	t.Parallel()
	p := start(t)
	b := browsertest.Start(t)
	chat := func(content string) (int, map[string]any) {
		status, out, _ := gatewayChat(t, p, "", "support", "", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`+content+`"}]}`)
		return status, out
	}
	status, out := chat("first question")
	require.Equal(t, http.StatusOK, status, "%v", out)

	visit(b, p, "budgets", "Budgets")
	b.WaitText("#budget-list", "No budgets yet")

	// A limit that is not a number: the API's refusal under its field.
	b.Fill("#budget-match", "support")
	b.Fill("#budget-limitUsd", "lots")
	b.Click("#budget-save")
	b.WaitText("#budget-limitUsd-problem", "limitUsd")
	assert.Empty(t, b.Fetch("GET", "/api/v1/budgets").Body["budgets"], "nothing was saved")

	// Two requests a day for the support app: one spent already.
	b.Fill("#budget-id", "support-day")
	b.Fill("#budget-limitUsd", "")
	b.Fill("#budget-limitRequests", "2")
	b.Click("#budget-save")
	b.WaitText("#status", "Budget saved.")
	row := `#budget-list tr[data-budget="support-day"]`
	b.WaitText(row, "Requests: 1 of 2 (50%)")
	b.WaitText(row, "support")
	assert.Equal(t, 1, count(b, row+" meter"))

	// The second call reaches the budget; the third is refused.
	status, out = chat("second question")
	require.Equal(t, http.StatusOK, status, "%v", out)
	status, out = chat("third question")
	require.Equal(t, http.StatusTooManyRequests, status, "%v", out)
	assert.Equal(t, "budget_exceeded", out["error"].(map[string]any)["code"])
	visit(b, p, "overview", "Overview") // the same address again would not draw the view again
	visit(b, p, "budgets", "Budgets")
	b.WaitText(row, "Requests: 2 of 2 (100%)")

	// The spend of each app over the day: the refused call counts nothing.
	b.Choose("#spend-scope", "app")
	b.Click("#spend-show")
	b.WaitText("#spend-report", "support")
	b.WaitText("#spend-report tbody tr:first-child td:nth-child(4)", "2")
	shoot(t, b, "budgets")

	// Deleting asks first.
	b.Click(row + " .confirm button")
	b.WaitText(row+" .confirm-question", "Delete the budget “support-day”?")
	b.Click(row + " .confirm button.confirm-yes")
	b.WaitText("#status", "Budget “support-day” deleted.")
	b.WaitText("#budget-list", "No budgets yet")
	status, out = chat("fourth question")
	assert.Equal(t, http.StatusOK, status, "no budget refuses the app any more: %v", out)
	assertNoPageErrors(t, b)
}
