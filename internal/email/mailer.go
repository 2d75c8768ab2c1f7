package email

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Mailer sends messages through the email transport in the background, so
// that a send never fails or slows the request that asked for it. Messages
// carry one-time links, whose tokens svc never writes to its database, so
// they wait in memory, not in the job queue: a message still unsent when
// svc stops is lost (and logged), and the person can ask again.
type Mailer struct {
	transport pluginapi.EmailTransport
	from      string
	logger    hclog.Logger
	backoff   []time.Duration // waits between attempts

	queue chan pluginapi.EmailMessage
	stop  chan struct{}
	wg    sync.WaitGroup
}

// QueueSize bounds the messages waiting to be sent; past it a message is
// dropped and logged.
const QueueSize = 1024

// DefaultBackoff is the wait before each retry of a failed send.
var DefaultBackoff = []time.Duration{time.Second, 10 * time.Second, time.Minute}

// NewMailer starts a mailer that sends as from.
func NewMailer(transport pluginapi.EmailTransport, from string, logger hclog.Logger) *Mailer {
	m := &Mailer{transport: transport, from: from, logger: logger, backoff: DefaultBackoff,
		queue: make(chan pluginapi.EmailMessage, QueueSize), stop: make(chan struct{})}
	m.wg.Add(1)
	go m.loop()
	return m
}

// Send queues msg for to. It never blocks and never fails.
func (m *Mailer) Send(to string, msg Message) {
	em := pluginapi.EmailMessage{From: m.from, To: []string{to}, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML}
	select {
	case m.queue <- em:
	default:
		m.logger.Error("email dropped: the send queue is full", "subject", msg.Subject)
	}
}

// Close sends what is queued, giving up on what is still failing, and
// stops.
func (m *Mailer) Close() {
	close(m.stop)
	m.wg.Wait()
}

func (m *Mailer) loop() {
	defer m.wg.Done()
	for {
		select {
		case msg := <-m.queue:
			m.deliver(msg, false)
		case <-m.stop:
			for {
				select {
				case msg := <-m.queue:
					m.deliver(msg, true)
				default:
					return
				}
			}
		}
	}
}

// deliver sends msg, retrying on failure unless svc is stopping.
func (m *Mailer) deliver(msg pluginapi.EmailMessage, stopping bool) {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		id, err := m.transport.Send(ctx, msg)
		cancel()
		if err == nil {
			m.logger.Debug("email sent", "id", id, "subject", msg.Subject)
			return
		}
		if stopping || attempt >= len(m.backoff) {
			m.logger.Error("email not sent", "subject", msg.Subject, "attempts", attempt+1, "error", err)
			return
		}
		m.logger.Warn("email send failed; retrying", "subject", msg.Subject, "error", err)
		select {
		case <-time.After(m.backoff[attempt]):
		case <-m.stop:
			stopping = true
		}
	}
}
