// Package netguard decides whether a network destination is public, so that
// requests a server makes on a user's behalf (fetching a page, delivering a
// webhook, rendering in a browser) cannot reach internal addresses: loopback,
// private and link-local ranges, cloud metadata, and the encodings and
// translations that hide them. It needs nothing beyond the standard library
// and golang.org/x/net/idna, does no I/O but the DNS lookups of CheckURL,
// and a Guard's zero value is ready to use.
//
// # Two checks, and a fetcher needs both
//
// Guard.CheckURL validates a URL before it is stored or requested: it
// rejects bad schemes and credentials, decodes every numeric host encoding
// (ParseHostIP, HostAddr), refuses local and metadata names, and resolves
// the remaining names so that every answer can be judged.
//
// Guard.Control, or Guard.ControlFor for a dial that knows its URL host,
// runs inside net.Dialer on the address actually being dialed: the only
// place a DNS rebinding answer, a redirect to an internal address, or a
// host that net/http maps differently can be caught. A transport using it
// must not use a proxy (Proxy: nil), or the dial goes to the proxy and the
// guard never sees the target; see the ControlFor example for a client
// that is safe to point at any URL.
//
// # Errors
//
// Every refusal matches one of three values with errors.Is:
//
//	ErrInvalidURL    the URL itself is wrong (the caller's input: typically 400)
//	ErrBlocked       the destination is not public; errors.As gives the
//	                 *BlockedError with the host, address, port and rule (Class)
//	ErrUnresolvable  the name did not resolve, so it cannot be judged
//
// Error messages name the host and the reason and are safe to show to the
// person who supplied the URL.
//
// # Exceptions
//
// An operator who means to reach an internal service lists it in an
// Allowlist (ParseAllowlist: CIDR prefixes, ip:port, host:port), or turns
// the address rules off for development with Guard.AllowAll. Guard.Ports
// narrows the ports allowed on public addresses.
//
// Classify judges a single address, for callers that resolve by
// themselves.
package netguard
