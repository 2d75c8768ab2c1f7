package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/version"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// DefaultTimeout bounds one delivery request, from dial to the end of the
// response headers.
const DefaultTimeout = 10 * time.Second

const (
	// maxBodyBytes bounds a delivery's body: the data and the envelope.
	maxBodyBytes = MaxDataBytes + 4<<10
	// maxResponseBytes is how much of a receiver's answer is read.
	maxResponseBytes = 64 << 10
	// maxSnippetBytes is how much of a refusing answer lastError quotes.
	maxSnippetBytes = 200
)

// Options configure a Deliverer.
type Options struct {
	// Settings gives each tenant's webhook_url and webhook_secret, read when
	// a delivery is sent, so that a changed URL or secret applies to
	// deliveries already queued.
	Settings SettingsReader
	// Guard decides, at dial time, whether the address a delivery connects
	// to may be reached; its Allow list (SVC_WEB_ALLOW_PRIVATE) opens
	// internal receivers. Nil is the zero Guard: public addresses only.
	Guard *netguard.Guard
	// Now is the clock of X-Svc-Timestamp; time.Now when nil.
	Now func() time.Time
	// Timeout bounds one request; DefaultTimeout when 0.
	Timeout time.Duration
	// Logger receives a line per refused delivery; nil discards.
	Logger hclog.Logger
}

// Deliverer sends deliveries: its Deliver method is the handler of
// JobType jobs.
type Deliverer struct {
	settings SettingsReader
	client   *http.Client
	now      func() time.Time
	timeout  time.Duration
	log      hclog.Logger
}

// NewDeliverer returns a Deliverer with its own guarded HTTP client.
func NewDeliverer(opts Options) *Deliverer {
	if opts.Guard == nil {
		opts.Guard = &netguard.Guard{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Deliverer{
		settings: opts.Settings, client: guardedClient(opts.Guard, opts.Timeout),
		now: opts.Now, timeout: opts.Timeout, log: opts.Logger,
	}
}

// guardedClient returns an HTTP client that checks every address it dials
// with g, after name resolution (so a DNS answer that changed since the URL
// was saved cannot reach an internal host), uses no proxy (a proxy would
// hide the destination from the guard), and does not follow redirects.
func guardedClient(g *netguard.Guard, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, _, _ := net.SplitHostPort(addr)
				d := &net.Dialer{Timeout: timeout, Control: g.ControlFor(host)}
				return d.DialContext(ctx, network, addr)
			},
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    timeout,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: 64 << 10,
			MaxIdleConns:           32,
			MaxIdleConnsPerHost:    2,
			IdleConnTimeout:        90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Deliver sends the delivery job j to its tenant's webhook_url. A 2xx
// answer is success. It returns a jobs.Permanent error, which ends the job
// without retries, when the payload is not a delivery, the tenant no longer
// has a webhook_url, the address is refused as not public, the receiver
// redirects, or it answers 4xx other than 408 Request Timeout, 425 Too Early
// and 429 Too Many Requests: the receiver understood the request and would
// refuse the same bytes again. Network failures, timeouts, 5xx, 408, 425
// and 429 return an ordinary error, which the queue retries with backoff.
func (d *Deliverer) Deliver(ctx context.Context, j jobs.Job) error {
	var p payload
	if err := json.Unmarshal(j.Payload, &p); err != nil || p.Type == "" {
		return jobs.Permanent(errors.New("the job's payload is not a webhook delivery"))
	}
	st, err := d.settings.Get(ctx, j.TenantID)
	if err != nil {
		return fmt.Errorf("read the webhook settings: %w", err)
	}
	if st.WebhookURL == nil || *st.WebhookURL == "" {
		return jobs.Permanent(errors.New("webhook_url is no longer set; delivery dropped"))
	}
	target, err := checkURL(*st.WebhookURL)
	if err != nil {
		return jobs.Permanent(err)
	}
	body, err := json.Marshal(Event{ID: j.ID, Type: p.Type, TenantID: j.TenantID, CreatedAt: j.CreatedAt, Data: p.Data})
	if err != nil {
		return jobs.Permanent(fmt.Errorf("encode the delivery: %w", err))
	}
	if len(body) > maxBodyBytes {
		return jobs.Permanent(fmt.Errorf("the delivery is %d bytes, over the %d-byte limit", len(body), maxBodyBytes))
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return jobs.Permanent(fmt.Errorf("webhook_url cannot be requested: %w", err))
	}
	ts := d.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "svc-webhook/"+version.Version)
	req.Header.Set(HeaderEvent, p.Type)
	req.Header.Set(HeaderDelivery, j.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	if st.WebhookSecret != nil && *st.WebhookSecret != "" {
		req.Header.Set(HeaderSignature, Sign(*st.WebhookSecret, ts, body))
	}

	res, err := d.client.Do(req)
	if err != nil {
		err = d.sendError(err)
		if errors.Is(err, jobs.ErrPermanent) {
			d.log.Warn("webhook delivery refused", "tenant", j.TenantID, "delivery", j.ID, "host", target.Hostname(), "error", err)
		}
		return err
	}
	defer res.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(res.Body, maxSnippetBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseBytes))

	code := res.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code >= 300 && code < 400:
		return jobs.Permanent(fmt.Errorf("receiver answered %s; redirects are not followed, set webhook_url to the final address", res.Status))
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooEarly && code != http.StatusTooManyRequests:
		return jobs.Permanent(answerError(res.Status, snippet))
	default:
		return answerError(res.Status, snippet)
	}
}

// checkURL repeats the URL rules that need no DNS on the stored webhook_url
// (one saved before a rule existed is held to it too); the address rules
// are applied when the client dials.
func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, errors.New("webhook_url does not parse")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("webhook_url scheme %q is not http or https", u.Scheme)
	case u.User != nil:
		return nil, errors.New("webhook_url must not carry credentials")
	case u.Hostname() == "":
		return nil, errors.New("webhook_url has no host")
	}
	if _, _, err := netguard.HostAddr(u.Hostname()); err != nil {
		return nil, fmt.Errorf("webhook_url: %w", err) // no DNS for a host that ends in a number
	}
	return u, nil
}

// sendError says why a request got no answer, in words fit for the tenant's
// job listing: never the URL (its path may hold a token) nor the resolver's
// own address.
func (d *Deliverer) sendError(err error) error {
	var (
		blocked *netguard.BlockedError
		dnsErr  *net.DNSError
		netErr  net.Error
		urlErr  *url.Error
	)
	switch {
	case errors.As(err, &blocked):
		return jobs.Permanent(fmt.Errorf("refused at send time: %s; webhooks are sent to public addresses only", blocked))
	case errors.As(err, &dnsErr):
		return fmt.Errorf("host %q could not be resolved: %s", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("no answer within %s", d.timeout)
	case errors.As(err, &urlErr):
		return fmt.Errorf("request failed: %w", urlErr.Err)
	}
	return fmt.Errorf("request failed: %w", err)
}

// answerError quotes a refusing answer's status and the start of its body.
func answerError(status string, snippet []byte) error {
	text := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, strings.ToValidUTF8(string(snippet), ""))
	text = strings.TrimSpace(text)
	if text == "" {
		return fmt.Errorf("receiver answered %s", status)
	}
	return fmt.Errorf("receiver answered %s: %q", status, text)
}
