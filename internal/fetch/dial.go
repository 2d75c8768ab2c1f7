package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// dialer resolves a host itself, checks every answer with the guard, and
// only then dials the checked addresses, so the address judged is the
// address used: a rebinding DNS server cannot answer differently between
// the check and the connection. The default dial also sets the guard as
// net.Dialer.Control, which checks the socket's own address once more.
type dialer struct {
	guard    *netguard.Guard
	resolver netguard.Resolver
	dial     func(ctx context.Context, network, address string) (net.Conn, error)
}

// DialContext is http.Transport.DialContext. address is host:port from the
// URL as net/http saw it (an IDNA host already mapped to ASCII). Errors are
// classified here, where the host of this hop is known: Forbidden for a
// refused address, Upstream for the rest.
func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil || host == "" {
		// An empty host would dial the local system.
		return nil, blockedError(&netguard.BlockedError{Host: address, Class: "invalid"}, host)
	}
	ips, err := d.lookup(ctx, host)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, netguard.ErrInvalidURL):
		return nil, guardError(ctx, err, host)
	default:
		return nil, networkError(err, host)
	}
	control := d.guard.ControlFor(host)
	addrs := make([]string, len(ips))
	for i, ip := range ips {
		addrs[i] = net.JoinHostPort(ip.String(), port)
		// Every answer must pass, as CheckURL demands: a name that points
		// inside at all is refused even if a public answer comes first.
		if err := control(network, addrs[i], nil); err != nil {
			var b *netguard.BlockedError
			if errors.As(err, &b) {
				return nil, blockedError(b, host)
			}
			return nil, errs.Wrap(err, errs.Forbidden, "private_address", "destination refused: host %q", host)
		}
	}
	var firstErr error
	for _, a := range addrs {
		c, err := d.dialOne(ctx, network, a, control)
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	var b *netguard.BlockedError
	var netErr net.Error
	switch {
	case errors.As(firstErr, &b):
		return nil, blockedError(b, host)
	case errors.As(firstErr, &netErr) && netErr.Timeout():
		return nil, errs.Wrap(firstErr, errs.Upstream, "upstream_timeout", "host %q did not accept a connection in time", host)
	}
	return nil, networkError(firstErr, host)
}

func (d *dialer) dialOne(ctx context.Context, network, address string, control func(string, string, syscall.RawConn) error) (net.Conn, error) {
	if d.dial != nil {
		return d.dial(ctx, network, address)
	}
	nd := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: control}
	return nd.DialContext(ctx, network, address)
}

// lookup returns the addresses to dial for host. A numeric host in any
// encoding glibc or a browser accepts ("2130706433", "0x7f.1") is taken as
// that address, exactly as the cgo resolver would, instead of being sent to
// DNS where the answer could be anything; one that ends in a number but is
// no valid address ("425.510.425.510") is refused, not sent to DNS either.
func (d *dialer) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, ok, err := netguard.HostAddr(host); ok || err != nil {
		return []netip.Addr{ip}, err
	}
	var r netguard.Resolver = net.DefaultResolver
	if d.resolver != nil {
		r = d.resolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	for i := range ips {
		ips[i] = ips[i].Unmap()
	}
	return ips, nil
}
