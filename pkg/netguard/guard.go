package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ErrInvalidURL is matched with errors.Is by CheckURL errors for a URL that is
// malformed, has a scheme other than http or https, carries credentials, or
// has no usable host. It is the user's input that is wrong, not the
// destination, so callers typically answer 400.
var ErrInvalidURL = errors.New("invalid url")

// ErrUnresolvable is matched with errors.Is by CheckURL errors for a host name
// that could not be resolved or resolved to no address. Such a destination
// cannot be judged, so it is refused; the wrapped resolver error (for example
// context.Canceled) can be reached with errors.Is and errors.As as well.
var ErrUnresolvable = errors.New("host could not be resolved")

// Resolver is the subset of *net.Resolver the guard needs, so that tests and
// callers can supply their own DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard checks destinations against the public-address rules. The zero value
// is ready to use: no exceptions, any port, net.DefaultResolver. A Guard must
// not be modified while in use; it is then safe for concurrent use.
type Guard struct {
	// Allow lists destinations an operator has opened on purpose, as parsed
	// from SVC_WEB_ALLOW_PRIVATE by ParseAllowlist. A destination it matches
	// skips every address and port rule.
	Allow Allowlist

	// AllowAll turns off the address, name and port rules, as open dev mode
	// allows private fetches. URL rules (scheme, credentials, host present)
	// still apply, and CheckURL then does not resolve names at all.
	AllowAll bool

	// Resolver resolves names in CheckURL. Nil means net.DefaultResolver.
	Resolver Resolver

	// Ports, when non-empty, is the set of destination ports allowed for
	// public addresses. Nil allows any port.
	Ports []uint16
}

// CheckURL validates a URL a user gave us before it is stored or requested,
// and returns it parsed. It refuses, with an error matching ErrInvalidURL, a
// URL that does not parse, whose scheme is not http or https, that carries
// userinfo, or whose host is empty, has an invalid port, is not a valid
// host name, or ends in a number without being a valid IPv4 address (see
// HostAddr; refused before any DNS lookup). It refuses, with an error
// matching ErrBlocked, a host that is an IP literal in any encoding
// ParseHostIP knows (after IDNA mapping, so that "①②⑦.⓪.⓪.①" is
// 127.0.0.1) and is not public; a local or cloud metadata
// name ("localhost", "*.localhost", "*.local", "*.internal", "*.home.arpa",
// single-label names, "instance-data", "metadata"); and a name of which any
// resolved address is not public. A name that fails to resolve or resolves to
// nothing gives an error matching ErrUnresolvable.
//
// A successful check says nothing about later resolutions of the same name,
// so a fetcher must also use Control at dial time.
func (g *Guard) CheckURL(ctx context.Context, rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// The *url.Error text repeats the whole URL; keep only the reason.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%w: %s", ErrInvalidURL, strings.TrimPrefix(err.Error(), "net/url: "))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: scheme %q is not allowed (use http or https)", ErrInvalidURL, u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: credentials in the url are not allowed", ErrInvalidURL)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("%w: the url has no host", ErrInvalidURL)
	}
	port := uint16(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("%w: port %q is out of range", ErrInvalidURL, p)
		}
		port = uint16(n)
	}
	if err := g.checkHost(ctx, host, port); err != nil {
		return nil, err
	}
	return u, nil
}

func (g *Guard) checkHost(ctx context.Context, host string, port uint16) error {
	ip, name, err := hostForm(host)
	switch {
	case err != nil:
		return err
	case ip.IsValid():
		return g.checkAddr(host, ip, port)
	}
	name = strings.TrimSuffix(name, ".")
	if !validName(name) {
		return fmt.Errorf("%w: host %q is not a valid host name", ErrInvalidURL, host)
	}
	if g.AllowAll || g.Allow.allowsName(name, port) {
		return nil
	}
	if class := nameClass(name); class != "" {
		return &BlockedError{Host: host, Class: class}
	}
	addrs, err := g.resolver().LookupNetIP(ctx, "ip", name)
	if err != nil {
		return &resolveError{host: host, err: err}
	}
	if len(addrs) == 0 {
		return &resolveError{host: host}
	}
	for _, a := range addrs {
		if err := g.checkAddr(host, a.Unmap(), port); err != nil {
			return err
		}
	}
	return nil
}

// Control is for net.Dialer.Control. It checks the address actually being
// dialed, after name resolution, so that a rebinding DNS answer is caught; a
// check of the URL alone cannot do that. An address that does not parse as
// ip:port (including an empty host, which the kernel would take as the local
// system) is refused. Allow exceptions given as ip:port or a CIDR prefix and
// AllowAll are honoured; host:port exceptions need the name, see ControlFor.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	return g.control("", address)
}

// ControlFor returns a net.Dialer.Control function for dialing host, the name
// from the URL. It is Control, except that a host:port entry of Allow
// matching host also lets through every address host resolves to on that
// port. Use it from a DialContext wrapper that builds a Dialer per dial.
func (g *Guard) ControlFor(host string) func(network, address string, c syscall.RawConn) error {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	return func(network, address string, _ syscall.RawConn) error {
		return g.control(name, address)
	}
}

func (g *Guard) control(name, address string) error {
	h, p, err := net.SplitHostPort(address)
	if err != nil || h == "" {
		return &BlockedError{Host: address, Class: "invalid"}
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return &BlockedError{Host: address, Class: "invalid"}
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return &BlockedError{Host: address, Class: "invalid"}
	}
	if name != "" && g.Allow.allowsName(name, uint16(port)) {
		return nil
	}
	return g.checkAddr("", ip, uint16(port))
}

// checkAddr applies the exceptions, the address rules and the port rule.
func (g *Guard) checkAddr(host string, ip netip.Addr, port uint16) error {
	if g.AllowAll || g.Allow.allowsAddr(netip.AddrPortFrom(ip, port)) {
		return nil
	}
	if err := Classify(ip); err != nil {
		var be *BlockedError
		if errors.As(err, &be) {
			be.Host = host
		}
		return err
	}
	if len(g.Ports) > 0 && !slices.Contains(g.Ports, port) {
		return &BlockedError{Addr: ip, Host: host, Port: port, Class: "port"}
	}
	return nil
}

func (g *Guard) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// resolveError keeps the resolver's text (which may name internal DNS
// servers) out of the message while keeping it in the chain.
type resolveError struct {
	host string
	err  error
}

func (e *resolveError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("host %q resolved to no addresses", e.host)
	}
	var dnsErr *net.DNSError
	if errors.As(e.err, &dnsErr) && dnsErr.Err != "" {
		return fmt.Sprintf("host %q could not be resolved: %s", e.host, dnsErr.Err)
	}
	return fmt.Sprintf("host %q could not be resolved", e.host)
}

func (e *resolveError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrUnresolvable}
	}
	return []error{ErrUnresolvable, e.err}
}

// metadataNames are cloud metadata service names that resolve to
// link-local addresses inside the cloud; refusing them by name gives a
// clearer message than the resolved address would.
var metadataNames = []string{
	"metadata", "metadata.google.internal", "metadata.goog",
	"instance-data", "instance-data.ec2.internal",
}

// localSuffixes are names that by definition (RFC 6761, RFC 6762, RFC 8375,
// ICANN's .internal) never name a public host.
var localSuffixes = []string{".localhost", ".local", ".internal", ".home.arpa", ".localdomain"}

// nameClass returns the class of a name refused before DNS, or "".
// Single-label names are refused because the resolver completes them with
// the local search domains, reaching hosts such as "redis" or "db".
func nameClass(name string) string {
	if slices.Contains(metadataNames, name) {
		return "metadata-name"
	}
	if name == "localhost" || !strings.Contains(name, ".") {
		return "local-name"
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(name, s) {
			return "local-name"
		}
	}
	return ""
}

// validName reports whether name is a plausible DNS host name: non-empty
// labels of letters, digits, '-' and '_'.
func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Allowlist holds destinations an operator has exempted from the guard: exact
// ip:port and host:port pairs and CIDR prefixes. The zero value allows
// nothing.
type Allowlist struct {
	prefixes []netip.Prefix
	addrs    []netip.AddrPort
	hosts    []string // "name:port", name lowercased without a trailing dot
}

// ParseAllowlist parses a comma-separated list such as
// "intranet:8080, 10.0.0.0/8, [::1]:8080" (the SVC_WEB_ALLOW_PRIVATE
// variable). Spaces around entries are trimmed and empty entries skipped, so
// "" is an empty list. An entry is a CIDR prefix, a bare IP (a single-address
// prefix, any port), ip:port or host:port. A host name always needs a port,
// so that opening one internal service does not open all of its ports. The
// error names the first bad entry.
func ParseAllowlist(s string) (Allowlist, error) {
	var a Allowlist
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if err := a.add(entry); err != nil {
			return Allowlist{}, fmt.Errorf("allowlist entry %q: %w", entry, err)
		}
	}
	return a, nil
}

// String writes the list back in the form ParseAllowlist reads, to hand it
// to another process.
func (a Allowlist) String() string {
	var parts []string
	for _, p := range a.prefixes {
		parts = append(parts, p.String())
	}
	for _, ap := range a.addrs {
		parts = append(parts, ap.String())
	}
	parts = append(parts, a.hosts...)
	return strings.Join(parts, ",")
}

func (a *Allowlist) add(entry string) error {
	if strings.Contains(entry, "/") {
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			return errors.New("not a valid CIDR prefix")
		}
		if p != p.Masked() {
			return fmt.Errorf("prefix has host bits set (did you mean %s?)", p.Masked())
		}
		a.prefixes = append(a.prefixes, p)
		return nil
	}
	if ip, err := netip.ParseAddr(entry); err == nil {
		if ip.Zone() != "" {
			return errors.New("zones are not allowed")
		}
		a.prefixes = append(a.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
		return nil
	}
	host, p, err := net.SplitHostPort(entry)
	if err != nil {
		return errors.New("want host:port, ip:port, an IP address or a CIDR prefix")
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	if ip, ok := ParseHostIP(host); ok {
		if ip.Zone() != "" {
			return errors.New("zones are not allowed")
		}
		a.addrs = append(a.addrs, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
		return nil
	}
	if endsInNumber(host) {
		return fmt.Errorf("%q ends in a number but is not a valid IPv4 address", host)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if !validName(name) {
		return fmt.Errorf("%q is not a valid host name", host)
	}
	a.hosts = append(a.hosts, name+":"+strconv.FormatUint(port, 10))
	return nil
}

func (a Allowlist) allowsAddr(ap netip.AddrPort) bool {
	ip := ap.Addr().WithZone("").Unmap()
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return slices.Contains(a.addrs, netip.AddrPortFrom(ip, ap.Port()))
}

func (a Allowlist) allowsName(name string, port uint16) bool {
	return slices.Contains(a.hosts, name+":"+strconv.Itoa(int(port)))
}
