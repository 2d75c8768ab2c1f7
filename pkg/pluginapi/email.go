package pluginapi

import "context"

// EmailTransport delivers email: the slot a mail transport's plugin fills
// (SMTP, an HTTP delivery service, the console).
type EmailTransport interface {
	// Send delivers msg and returns the transport's message id, if it has
	// one. svc never fails a user's request because a send failed; it logs
	// and retries.
	Send(ctx context.Context, msg EmailMessage) (string, error)
}

// EmailMessage is one message with a plain-text and an HTML body.
type EmailMessage struct {
	From    string
	To      []string
	Subject string
	Text    string
	HTML    string
}
