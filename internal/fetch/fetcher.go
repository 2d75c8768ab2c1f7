package fetch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/metrics"
	"github.com/svc-gateway/svc/internal/version"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// Defaults of Options.
const (
	DefaultMaxBytes      = 5 << 20
	DefaultTimeout       = 15 * time.Second
	DefaultHeaderTimeout = 10 * time.Second
	DefaultMaxRedirects  = 5
	dialTimeout          = 5 * time.Second
)

// acceptHTML is what a browser asks for when it navigates.
const acceptHTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// Options configure a Fetcher. The zero value fetches public addresses only,
// with the default limits.
type Options struct {
	// AllowPrivate turns the address rules off, as open dev mode allows
	// private fetches. Scheme and URL rules still apply.
	AllowPrivate bool
	// Allow opens the operator's exact targets (SVC_WEB_ALLOW_PRIVATE) in
	// every mode.
	Allow netguard.Allowlist
	// Resolver resolves host names, both for the URL check and at dial time.
	// Nil means net.DefaultResolver.
	Resolver netguard.Resolver
	// Dial opens a connection to address, an ip:port the guard has already
	// approved; the name was resolved and every answer checked before it is
	// called. Nil means a net.Dialer whose Control checks the address again
	// on the socket itself. Tests set it to keep traffic on loopback.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// MaxBytes bounds a page's body after decompression; a larger page is
	// refused. DefaultMaxBytes when 0.
	MaxBytes int64
	// Timeout bounds a whole fetch, redirects and body included.
	// DefaultTimeout when 0.
	Timeout time.Duration
	// HeaderTimeout bounds the wait for each response's headers once the
	// request is sent. DefaultHeaderTimeout when 0.
	HeaderTimeout time.Duration
	// MaxRedirects is how many redirects one fetch follows.
	// DefaultMaxRedirects when 0; a negative value follows none.
	MaxRedirects int
	// UserAgent is sent with every request; a default naming svc when empty.
	UserAgent string
	// Metrics counts the destinations refused, by class; nil counts
	// nothing.
	Metrics *metrics.Metrics
}

// Fetcher fetches pages through a client that checks every address it
// dials. It is safe for concurrent use.
type Fetcher struct {
	guard        *netguard.Guard
	client       *http.Client
	transport    *http.Transport
	maxBytes     int64
	timeout      time.Duration
	maxRedirects int
	userAgent    string
	metrics      *metrics.Metrics
	// precheck is the URL check before each request and hop; tests turn it
	// off to show that the dial-time check holds on its own.
	precheck bool
}

// Request is one request a Fetcher sends: a navigation (GET, no body) or a
// form submission.
type Request struct {
	Method      string // GET when empty
	URL         string
	Body        []byte
	ContentType string // of Body
	// Referer, when set, is sent as the Referer header, as a browser does
	// when following a link or submitting a form on a page.
	Referer string
	// Hop, when set, is asked about each redirect after the address guard
	// passed it, with the method the redirect is followed with (GET after a
	// 301-303; the request's own, body and all, after a 307 or 308); an
	// error refuses the redirect and is what Do returns.
	Hop func(ctx context.Context, method string, to *url.URL) error
}

// Result is a fetched page.
type Result struct {
	URL         *url.URL // the final URL, after redirects
	Status      int
	ContentType string // the Content-Type header as sent, or sniffed when absent
	Body        []byte
	Duration    time.Duration
}

// New returns a Fetcher configured by opts.
func New(opts Options) *Fetcher {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	switch {
	case opts.MaxRedirects == 0:
		opts.MaxRedirects = DefaultMaxRedirects
	case opts.MaxRedirects < 0:
		opts.MaxRedirects = 0
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "Mozilla/5.0 (compatible; svc/" + version.Version + "; +https://github.com/svc-gateway/svc)"
	}
	f := &Fetcher{
		guard:        &netguard.Guard{Allow: opts.Allow, AllowAll: opts.AllowPrivate, Resolver: opts.Resolver},
		maxBytes:     opts.MaxBytes,
		timeout:      opts.Timeout,
		maxRedirects: opts.MaxRedirects,
		userAgent:    opts.UserAgent,
		metrics:      opts.Metrics,
		precheck:     true,
	}
	d := &dialer{guard: f.guard, resolver: opts.Resolver, dial: opts.Dial}
	f.transport = &http.Transport{
		// Never a proxy, and never one from the environment: the dial would
		// go to the proxy and the guard would not see the destination.
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  opts.HeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
	}
	f.client = &http.Client{Transport: f.transport, CheckRedirect: f.checkRedirect}
	return f
}

// Get fetches rawURL. jar, when not nil, receives and supplies cookies, so
// that a session's requests share its cookies and nothing else's.
func (f *Fetcher) Get(ctx context.Context, rawURL string, jar http.CookieJar) (*Result, error) {
	return f.Do(ctx, &Request{URL: rawURL}, jar)
}

// Do sends req and returns the page it leads to. The URL and every redirect
// target must be http or https and pass the guard, and every address dialed
// is checked again at dial time. Errors are *errs.Error values: a refused
// destination is Forbidden (code private_address, scheme_not_allowed,
// credentials_not_allowed or too_many_redirects), a URL that does not parse
// or whose host ends in a number without being a valid IPv4 address (never
// sent to DNS) is Invalid, and everything the remote side or the network
// did wrong is Upstream: unresolvable host, refused connection, timeout,
// 5xx answer, a body over the size limit, or a page that is not HTML. A 4xx
// answer is a page like any other and is returned.
func (f *Fetcher) Do(ctx context.Context, req *Request, jar http.CookieJar) (*Result, error) {
	res, err := f.do(ctx, req, jar)
	var blocked *netguard.BlockedError
	if err != nil && f.metrics != nil && errors.As(err, &blocked) {
		f.metrics.WebRefused(blocked.Class)
	}
	return res, err
}

func (f *Fetcher) do(ctx context.Context, req *Request, jar http.CookieJar) (*Result, error) {
	start := time.Now()
	u, err := parseTarget(req.URL)
	if err != nil {
		return nil, err
	}
	if err := f.check(ctx, u); err != nil {
		return nil, err
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if method != http.MethodGet && method != http.MethodPost {
		return nil, errs.E(errs.Internal, "internal", "web requests are GET or POST, not %s", method)
	}
	fetchCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(fetchCtx, method, u.String(), body)
	if err != nil {
		return nil, errs.Wrap(err, errs.Invalid, "invalid_url", "the url cannot be requested")
	}
	hr.Header.Set("User-Agent", f.userAgent)
	hr.Header.Set("Accept", acceptHTML)
	hr.Header.Set("Accept-Language", "en-US,en;q=0.8")
	if req.ContentType != "" {
		hr.Header.Set("Content-Type", req.ContentType)
	}
	if req.Referer != "" {
		hr.Header.Set("Referer", req.Referer)
	}

	client := *f.client
	client.Jar = jar
	if req.Hop != nil {
		client.CheckRedirect = func(hr *http.Request, via []*http.Request) error {
			if err := f.checkRedirect(hr, via); err != nil {
				return err
			}
			return req.Hop(hr.Context(), hr.Method, hr.URL)
		}
	}
	res, err := client.Do(hr)
	if err != nil {
		return nil, f.requestError(ctx, err, u.Hostname())
	}
	defer res.Body.Close()
	host := res.Request.URL.Hostname()
	if res.StatusCode >= 500 {
		return nil, errs.E(errs.Upstream, "upstream_status", "host %q answered %s", host, res.Status)
	}
	if res.ContentLength > f.maxBytes {
		return nil, tooLarge(host, f.maxBytes)
	}
	page, err := io.ReadAll(io.LimitReader(res.Body, f.maxBytes+1))
	if err != nil {
		return nil, f.requestError(ctx, err, host)
	}
	if int64(len(page)) > f.maxBytes {
		return nil, tooLarge(host, f.maxBytes)
	}
	ctype := res.Header.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(page)
	}
	if !isHTML(ctype) {
		return nil, errs.E(errs.Upstream, "unsupported_content_type",
			"the page at host %q is %s, not HTML", host, mediaType(ctype))
	}
	return &Result{
		URL: res.Request.URL, Status: res.StatusCode, ContentType: ctype,
		Body: page, Duration: time.Since(start),
	}, nil
}

// checkRedirect re-checks every hop as if the agent had asked for it, and
// bounds the number of hops. A redirect loop is refused like any other
// destination we will not follow (403), not blamed on the network.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.maxRedirects {
		return errs.E(errs.Forbidden, "too_many_redirects", "more than %d redirects; the last went to host %q", f.maxRedirects, req.URL.Hostname())
	}
	u, err := parseTarget(req.URL.String())
	if err != nil {
		return err
	}
	return f.check(req.Context(), u)
}

// check applies the guard's URL rules, which catch numeric host encodings
// and local names before any DNS, and resolves the name so that every
// answer is judged. The dial-time check repeats the address rules.
func (f *Fetcher) check(ctx context.Context, u *url.URL) error {
	if !f.precheck {
		return nil
	}
	_, err := f.guard.CheckURL(ctx, u.String())
	if err == nil {
		return nil
	}
	return guardError(ctx, err, u.Hostname())
}

func tooLarge(host string, limit int64) error {
	return errs.E(errs.Upstream, "page_too_large", "the page at host %q is larger than %d bytes", host, limit)
}

// requestError classifies an error from the client: errors built by the
// dialer and checkRedirect are already classified; the rest is the network's.
func (f *Fetcher) requestError(ctx context.Context, err error, host string) error {
	if ctx.Err() != nil {
		return ctx.Err() // the caller gave up; nobody reads the answer
	}
	if e := errs.As(err); e != nil {
		return e
	}
	var blocked *netguard.BlockedError
	if errors.As(err, &blocked) {
		return blockedError(blocked, host)
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout() {
		return errs.Wrap(err, errs.Upstream, "upstream_timeout", "host %q did not answer in time (limit %s)", host, f.timeout)
	}
	return networkError(err, host)
}

// networkError says, without the resolver's or the socket's details, why a
// host could not be reached.
func networkError(err error, host string) error {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr), errors.Is(err, netguard.ErrUnresolvable):
		return errs.Wrap(err, errs.Upstream, "dns_failure", "host %q could not be resolved", host)
	case errors.Is(err, syscall.ECONNREFUSED):
		return errs.Wrap(err, errs.Upstream, "connection_refused", "host %q refused the connection", host)
	}
	return errs.Wrap(err, errs.Upstream, "upstream_unreachable", "the page at host %q could not be fetched", host)
}
