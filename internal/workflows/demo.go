package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/ledger"
)

// Gateway answers a chat-completions body as the gateway answers a call of
// id, in process, and returns the run it recorded and its route. A call a
// policy blocked has a run (route blocked) and its error.
type Gateway interface {
	Chat(ctx context.Context, id *auth.Identity, body []byte) (runID, route string, err error)
}

// DemoTickets is how many made-up tickets the demo sends beside the
// samples: enough runs of one pattern for a learning pass to make a
// candidate artifact of it. The pass keeps a quarter of them out of
// training and replays them, and its creation gate needs the lower bound
// of their agreement at 0.90 or more; with some 100 held out, a few
// disagreements still pass.
const DemoTickets = 400

// WireTransferTicket is the demo's ticket for the policies: it asks for a
// wire transfer, which the example chat rule wire-transfers-need-a-person
// (docs/policies/10-chat.yaml) holds for approval. Without that rule its
// verdict, like every demo call's, is an allow that moves the demo agent's
// standing.
var WireTransferTicket = map[string]string{
	"subject": "Refund by wire transfer",
	"body":    "Please send my refund for the duplicate invoice by wire transfer to my bank account.",
}

// DemoTraffic is what the demo sends, in order, as the support-triage
// workflow's classify step: each sample ticket, the first one again (an
// exact-cache hit), the wire-transfer ticket (a policy verdict), then, when
// bulk, DemoTickets made-up tickets (a pattern, and the runs that teach its
// artifact). The made-up tickets are the same at every load.
func DemoTraffic(bulk bool) ([][]byte, error) {
	def := SupportTriage().Definition
	var out [][]byte
	add := func(input map[string]string) error {
		req, err := def.ChatRequest("classify", input)
		if err != nil {
			return err
		}
		b, err := json.Marshal(req)
		out = append(out, b)
		return err
	}
	for _, sm := range def.Samples {
		if err := add(sm.Input); err != nil {
			return nil, err
		}
	}
	for _, in := range []map[string]string{def.Samples[0].Input, WireTransferTicket} {
		if err := add(in); err != nil {
			return nil, err
		}
	}
	if !bulk {
		return out, nil
	}
	rng := rand.New(rand.NewPCG(24, 7))
	for n := range DemoTickets {
		if err := add(Ticket(rng, n)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReplayDemo sends the demo traffic through gw as the support-triage
// workflow's app and demo agent in id's tenant, in optimize mode whatever
// id's mode (so that the cache and the policies act), and returns the runs
// it recorded. A call a policy blocked is a run like the others; any other
// failure stops the replay and is returned with the runs so far. bulk adds
// the made-up tickets: svc asks it only of the mock provider, so that
// loading the demo never makes hundreds of paid calls to a real one.
func (s *Service) ReplayDemo(ctx context.Context, gw Gateway, id *auth.Identity, bulk bool) ([]string, error) {
	traffic, err := DemoTraffic(bulk)
	if err != nil {
		return nil, err
	}
	def := SupportTriage().Definition
	as := *id
	as.App, as.Agent, as.Subject, as.Mode = def.App, def.Agent, "", auth.Optimize
	runs := make([]string, 0, len(traffic))
	for _, body := range traffic {
		runID, route, err := gw.Chat(ctx, &as, body)
		if runID != "" {
			runs = append(runs, runID)
		}
		if err != nil && route != ledger.RouteBlocked {
			return runs, err
		}
	}
	return runs, s.sync(ctx)
}

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

// Ticket makes up the input of a support ticket from rng (ticket number
// n), as a help desk's traffic looks: a few words of one kind of ticket
// among filler.
func Ticket(rng *rand.Rand, n int) map[string]string {
	kind := ticketWords[rng.IntN(len(ticketWords))]
	var words []string
	for range 2 + rng.IntN(2) {
		words = append(words, kind[rng.IntN(len(kind))])
	}
	for range 3 {
		words = append(words, ticketFiller[rng.IntN(len(ticketFiller))])
	}
	rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	return map[string]string{
		"subject": fmt.Sprintf("ticket %d about %s", n, words[0]),
		"body":    strings.Join(words, ", ") + ".",
	}
}
