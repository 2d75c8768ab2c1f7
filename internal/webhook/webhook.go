// Package webhook delivers a tenant's notable events to its webhook_url:
// Notify queues a delivery as a job, and the job's handler (Deliverer)
// POSTs the event as JSON, signed with the tenant's webhook_secret, through
// an HTTP client that refuses private addresses at dial time.
//
// A delivery is a POST of an Event with the headers
//
//	Content-Type:    application/json
//	X-Svc-Event:     the event type
//	X-Svc-Delivery:  the delivery id (the same on every retry)
//	X-Svc-Timestamp: Unix seconds when this attempt was sent
//	X-Svc-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">
//
// The signature header is left out when the tenant has no webhook_secret.
// Receivers check it with Verify.
package webhook

import (
	"context"
	"encoding/json"
	"regexp"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/settings"
)

// JobType is the job type of a delivery; register Deliverer.Deliver for it.
const JobType = "webhook.deliver"

// The headers of a delivery.
const (
	HeaderEvent     = "X-Svc-Event"
	HeaderDelivery  = "X-Svc-Delivery"
	HeaderTimestamp = "X-Svc-Timestamp"
	HeaderSignature = "X-Svc-Signature"
)

// MaxDataBytes bounds an event's data, encoded as JSON. Notify drops (and
// logs) an event with more.
const MaxDataBytes = 64 << 10

// Event is the JSON body of a delivery.
type Event struct {
	ID        string          `json:"id"` // the delivery id, also X-Svc-Delivery
	Type      string          `json:"type"`
	TenantID  string          `json:"tenantId"`
	CreatedAt time.Time       `json:"createdAt"` // when the event happened
	Data      json.RawMessage `json:"data"`
}

// payload is a delivery job's payload: what the event was. Where it goes
// and the secret it is signed with are read when it is sent.
type payload struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Enqueuer queues jobs; *jobs.Queue is one.
type Enqueuer interface {
	Enqueue(ctx context.Context, tenantID, typ string, payload any) (jobs.Job, error)
}

// SettingsReader reads a tenant's settings; *settings.Service is one.
type SettingsReader interface {
	Get(ctx context.Context, tenantID string) (settings.Settings, error)
}

// eventType is what an event type looks like: dotted lowercase words, such
// as "policy.denied".
var eventType = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// maxEventTypeBytes bounds an event type.
const maxEventTypeBytes = 100

// notifyTimeout bounds the settings read and the enqueue of Notify, so that
// a busy database cannot hold the caller's request for long.
const notifyTimeout = 5 * time.Second

// Notifier queues deliveries of events. A nil *Notifier drops every event,
// so code that reports events works unchanged where webhooks are not wired.
type Notifier struct {
	queue    Enqueuer
	settings SettingsReader
	log      hclog.Logger
}

// NewNotifier returns a notifier that queues deliveries on queue for the
// tenants whose settings have a webhook_url. Problems are logged to logger
// (nil discards).
func NewNotifier(queue Enqueuer, settings SettingsReader, logger hclog.Logger) *Notifier {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Notifier{queue: queue, settings: settings, log: logger}
}

// Notify queues a delivery of an event of eventType with data (encoded as
// JSON, at most MaxDataBytes) to the tenant's webhook_url, and does nothing
// when the tenant has none. It never fails the caller: an invalid event
// type, data that does not encode or is too large, and a failed settings
// read or enqueue are logged and the event is dropped. It returns once the
// delivery is stored; the request itself is made by a worker. It is not
// tied to ctx's cancellation: an event whose request went away is still
// delivered.
func (n *Notifier) Notify(ctx context.Context, tenantID, eventType string, data any) {
	if n == nil {
		return
	}
	log := n.log.With("tenant", tenantID, "event", eventType)
	if len(eventType) > maxEventTypeBytes || !validEventType(eventType) {
		log.Error("webhook event dropped: the event type must be dotted lowercase words")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
	defer cancel()
	st, err := n.settings.Get(ctx, tenantID)
	if err != nil {
		log.Error("webhook event dropped: reading the settings failed", "error", err)
		return
	}
	if st.WebhookURL == nil || *st.WebhookURL == "" {
		return
	}
	raw, err := json.Marshal(data)
	if err != nil {
		log.Error("webhook event dropped: its data does not encode as JSON", "error", err)
		return
	}
	if len(raw) > MaxDataBytes {
		log.Error("webhook event dropped: its data is too large", "bytes", len(raw), "limit", MaxDataBytes)
		return
	}
	j, err := n.queue.Enqueue(ctx, tenantID, JobType, payload{Type: eventType, Data: raw})
	if err != nil {
		log.Error("webhook event dropped: queueing the delivery failed", "error", err)
		return
	}
	log.Debug("webhook delivery queued", "delivery", j.ID)
}

func validEventType(s string) bool { return eventType.MatchString(s) }
