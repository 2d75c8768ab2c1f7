// Package workflowstest makes up traffic of the built-in workflows for
// tests.
package workflowstest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/svc-gateway/svc/internal/workflows"
)

// ticketWords are what customers write about, per kind of ticket: billing,
// bug, account, feature request.
var ticketWords = [][]string{
	{"invoice", "charged twice", "refund", "payment method", "billing address", "credit card", "subscription price", "receipt"},
	{"crashes", "error message", "broken button", "fails to load", "blank page", "export fails", "stack trace", "bug"},
	{"password reset", "locked out", "cannot log in", "two-factor code", "sign in", "account access", "username"},
	{"would be nice", "please add", "feature idea", "dark mode", "wish the product had", "support for", "integration with"},
}

var ticketFiller = []string{"hello", "team", "today", "again", "since monday", "on my laptop", "for our company", "thanks",
	"quickly", "as soon as possible", "my colleague said", "yesterday"}

// TriageRequest is the support-triage workflow's chat request for a ticket
// made up from rng (ticket number n): the workflow's system prompt, and a
// different ticket each time, as a help desk's traffic looks. The learning
// loop's tests send it.
func TriageRequest(rng *rand.Rand, n int) []byte {
	step := workflows.SupportTriage().Definition.Steps[0]
	kind := ticketWords[rng.IntN(len(ticketWords))]
	var words []string
	for range 2 + rng.IntN(2) {
		words = append(words, kind[rng.IntN(len(kind))])
	}
	for range 3 {
		words = append(words, ticketFiller[rng.IntN(len(ticketFiller))])
	}
	rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	user := fmt.Sprintf("Subject: ticket %d about %s\n\n%s.", n, words[0], strings.Join(words, ", "))
	b, _ := json.Marshal(map[string]any{"model": step.Model, "temperature": 0, "messages": []map[string]string{
		{"role": "system", "content": step.Messages[0].Content}, {"role": "user", "content": user}}})
	return b
}
