// Command svc-email-console is svc's default email transport: it writes
// each message, links included, to svc's log instead of sending it, so that
// invitations and verifications work on a machine with no mail set up.
//
// Environment: SVC_LOG_LEVEL. stdout belongs to go-plugin's handshake: the
// messages go to stderr as hclog JSON, which svc re-emits in its own log.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func main() {
	log := pluginapi.Logger(pluginapi.EmailName)
	pluginapi.ServeEmail(&Console{Log: log})
}

// Console logs messages.
type Console struct {
	Log hclog.Logger
	n   atomic.Int64
}

// Send logs msg at info level: who to, the subject and the plain text.
func (c *Console) Send(_ context.Context, msg pluginapi.EmailMessage) (string, error) {
	id := fmt.Sprintf("console-%d", c.n.Add(1))
	c.Log.Info("email", "id", id, "from", msg.From, "to", strings.Join(msg.To, ", "), "subject", msg.Subject, "text", msg.Text)
	return id, nil
}
