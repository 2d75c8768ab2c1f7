// Package workflowstest makes up traffic of the built-in workflows for
// tests.
package workflowstest

import (
	"encoding/json"
	"math/rand/v2"

	"github.com/svc-gateway/svc/internal/workflows"
)

// TriageRequest is the support-triage workflow's chat request for a ticket
// made up from rng (ticket number n): the workflow's system prompt, and a
// different ticket each time, as a help desk's traffic looks. The learning
// loop's tests send it.
func TriageRequest(rng *rand.Rand, n int) []byte {
	def := workflows.SupportTriage().Definition
	req, err := def.ChatRequest("classify", workflows.Ticket(rng, n))
	if err != nil {
		panic(err) // the template's own step and inputs
	}
	b, _ := json.Marshal(req)
	return b
}
