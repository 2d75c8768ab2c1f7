package fetch

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// parseTarget applies the rules that need no DNS to a URL about to be
// requested, the first one or a redirect's: it parses, the scheme is http or
// https, there are no credentials, and there is a host with a usable port.
// A URL that does not parse or has no host is the caller's mistake (400); a
// scheme or credentials we refuse to use is a refused destination (403).
func parseTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, errs.Wrap(err, errs.Invalid, "invalid_url", "the url does not parse: %s",
			strings.TrimPrefix(err.Error(), "net/url: "))
	}
	if u.Scheme == "" {
		return nil, errs.E(errs.Invalid, "invalid_url", "the url must be absolute, such as https://example.com/")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errs.E(errs.Forbidden, "scheme_not_allowed",
			"scheme %q is not allowed; only http and https pages are fetched", u.Scheme)
	}
	if u.User != nil {
		return nil, errs.E(errs.Forbidden, "credentials_not_allowed", "urls with credentials are not fetched")
	}
	if u.Hostname() == "" {
		return nil, errs.E(errs.Invalid, "invalid_url", "the url has no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return nil, errs.E(errs.Invalid, "invalid_url", "port %q is out of range", p)
		}
	}
	return u, nil
}

// guardError turns a netguard refusal into the error the caller sees.
func guardError(ctx context.Context, err error, host string) error {
	var blocked *netguard.BlockedError
	switch {
	case errors.As(err, &blocked):
		return blockedError(blocked, host)
	case errors.Is(err, netguard.ErrUnresolvable):
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return networkError(err, host)
	case errors.Is(err, netguard.ErrInvalidURL):
		return errs.Wrap(err, errs.Invalid, "invalid_url", "%s", err.Error())
	}
	return errs.Wrap(err, errs.Internal, "internal", "the url could not be checked")
}

// blockedError is 403 private_address. The message names the host as the
// user (or the redirecting page) wrote it and the rule that matched; the
// address a name resolved to stays out of it, since it describes the
// internal network rather than the request.
func blockedError(b *netguard.BlockedError, host string) error {
	shown := &netguard.BlockedError{Host: host, Port: b.Port, Class: b.Class}
	if ip, ok := netguard.ParseHostIP(host); ok {
		shown.Addr = ip // the user wrote the address; decoding it tells nothing new
	}
	if host == "" {
		shown.Host = "(empty)"
	}
	return errs.Wrap(b, errs.Forbidden, "private_address", "destination refused: %s", shown.Error())
}
