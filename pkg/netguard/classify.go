package netguard

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrBlocked is matched with errors.Is by every error that means
// "destination is not public", so that callers can tell a refused
// destination (HTTP 403 for a fetch, 400 for a setting) from a network
// failure without inspecting the error text.
var ErrBlocked = errors.New("destination is not a public address")

// BlockedError reports a destination that the guard refused, and why.
// Its message names the host and the reason and is safe to show to the user
// who supplied the URL. errors.Is(err, ErrBlocked) is true for every
// *BlockedError.
type BlockedError struct {
	// Addr is the address that was judged. It is the zero Addr when the
	// destination was refused by name or could not be parsed.
	Addr netip.Addr
	// Host is the host as the user wrote it (a name or an IP literal in any
	// encoding), or the raw address given to Control when it could not be
	// parsed. It is empty when only an address was checked.
	Host string
	// Port is the destination port, or 0 when it is not known or does not
	// matter to the decision.
	Port uint16
	// Class names the rule that matched: "unspecified", "loopback",
	// "private", "link-local", "cgnat", "documentation", "benchmarking",
	// "reserved", "broadcast", "multicast", "ipv4-mapped", "ipv4-compatible",
	// "ipv4-translated", "nat64", "6to4", "teredo", "non-global-ipv6",
	// "local-name", "metadata-name", "port" or "invalid".
	Class string
}

// Error returns a lowercase message such as
// `host "10.0.0.1" is a private address` or
// `host "private-a.test" (10.0.0.1) is a private address`.
func (e *BlockedError) Error() string {
	var subject string
	switch {
	case e.Host == "":
		subject = "address " + e.Addr.String()
	case !e.Addr.IsValid() || e.Host == e.Addr.String():
		subject = fmt.Sprintf("host %q", e.Host)
	default:
		subject = fmt.Sprintf("host %q (%s)", e.Host, e.Addr)
	}
	if e.Class == "invalid" && !e.Addr.IsValid() && e.Host != "" {
		return fmt.Sprintf("address %q is not a valid ip:port", e.Host)
	}
	if e.Class == "port" {
		return fmt.Sprintf("%s: port %d is not allowed", subject, e.Port)
	}
	return subject + " is " + classPhrase(e.Class)
}

// Is reports whether target is ErrBlocked.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

func classPhrase(class string) string {
	switch class {
	case "unspecified":
		return "an unspecified (this-network) address"
	case "loopback", "private", "link-local", "reserved", "multicast",
		"documentation", "benchmarking", "nat64", "6to4":
		return "a " + class + " address"
	case "cgnat":
		return "a shared (carrier-grade nat) address"
	case "broadcast":
		return "the broadcast address"
	case "ipv4-mapped", "ipv4-compatible", "ipv4-translated":
		return "an " + class + " ipv6 address"
	case "teredo":
		return "a teredo address"
	case "non-global-ipv6":
		return "not a global unicast ipv6 address"
	case "local-name":
		return "a local name"
	case "metadata-name":
		return "a cloud metadata name"
	case "invalid":
		return "not a valid address"
	}
	return "not a public address (" + class + ")"
}

type prefixClass struct {
	prefix netip.Prefix
	class  string
}

func table(rows ...string) []prefixClass {
	t := make([]prefixClass, 0, len(rows)/2)
	for i := 0; i < len(rows); i += 2 {
		t = append(t, prefixClass{netip.MustParsePrefix(rows[i]), rows[i+1]})
	}
	return t
}

// blocked4 is the IANA IPv4 Special-Purpose Address Registry: every entry
// there is either not globally reachable or not a unicast destination that a
// user's request has any business with. First match wins.
var blocked4 = table(
	"0.0.0.0/8", "unspecified", // "this network"; Linux dials 0.0.0.0 as local
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "cgnat", // includes Alibaba metadata 100.100.100.200
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local", // cloud metadata 169.254.169.254, ECS 169.254.170.2
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "reserved", // IETF protocol assignments; Oracle metadata 192.0.0.192
	"192.0.2.0/24", "documentation",
	"192.31.196.0/24", "reserved", // AS112-v4
	"192.52.193.0/24", "reserved", // AMT
	"192.88.99.0/24", "reserved", // deprecated 6to4 relay anycast
	"192.168.0.0/16", "private",
	"192.175.48.0/24", "reserved", // direct delegation AS112
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation",
	"203.0.113.0/24", "documentation",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved",
)

// blocked6 lists the IPv6 prefixes with a more useful name than
// "non-global-ipv6". Anything outside 2000::/3 is refused even when it is not
// listed here. The IPv4-mapped and IPv4-compatible ranges are handled in
// Classify because their verdict depends on the embedded IPv4 address.
var blocked6 = table(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::ffff:0:0:0/96", "ipv4-translated", // SIIT
	"64:ff9b::/96", "nat64", // a NAT64 gateway would dial the embedded IPv4
	"64:ff9b:1::/48", "nat64",
	"100::/64", "reserved", // discard-only
	"fc00::/7", "private", // ULA; includes AWS IMDS fd00:ec2::254
	"fe80::/10", "link-local",
	"ff00::/8", "multicast",
	// Inside 2000::/3.
	"2001::/32", "teredo", // before 2001::/23, which contains it
	"2001:db8::/32", "documentation",
	"2001::/23", "reserved", // IETF protocol assignments
	"2002::/16", "6to4",
	"2620:4f:8000::/48", "reserved", // direct delegation AS112
	"3fff::/20", "documentation",
	"5f00::/16", "reserved", // SRv6 SIDs
)

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	compatible6    = netip.MustParsePrefix("::/96")
)

// Classify returns nil when addr is a public unicast address and a
// *BlockedError otherwise. The zone is ignored.
//
// An IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d) address is
// judged by its embedded IPv4 address and reported under that address's class
// when it is blocked. It is refused as "ipv4-mapped" or "ipv4-compatible"
// even when the embedded address is public, because a literal written that
// way serves only to slip past checks. Resolver answers may come back
// IPv4-mapped; Unmap them before calling Classify (CheckURL does).
func Classify(addr netip.Addr) error {
	a := addr.WithZone("")
	if !a.IsValid() {
		return &BlockedError{Addr: addr, Class: "invalid"}
	}
	if a.Is4() {
		return classify4(addr, a)
	}
	for _, row := range blocked6 {
		if row.prefix.Contains(a) {
			return &BlockedError{Addr: addr, Class: row.class}
		}
	}
	if a.Is4In6() || compatible6.Contains(a) {
		b := a.As16()
		class := "ipv4-compatible"
		if a.Is4In6() {
			class = "ipv4-mapped"
		}
		var be *BlockedError
		if errors.As(classify4(addr, netip.AddrFrom4([4]byte(b[12:]))), &be) {
			class = be.Class
		}
		return &BlockedError{Addr: addr, Class: class}
	}
	if !globalUnicast6.Contains(a) {
		return &BlockedError{Addr: addr, Class: "non-global-ipv6"}
	}
	return nil
}

// classify4 judges the IPv4 address a and reports orig in the error.
func classify4(orig, a netip.Addr) error {
	for _, row := range blocked4 {
		if row.prefix.Contains(a) {
			return &BlockedError{Addr: orig, Class: row.class}
		}
	}
	// The table already covers these; the predicate is a second opinion in
	// case the table is ever edited wrongly.
	if !a.IsGlobalUnicast() {
		return &BlockedError{Addr: orig, Class: "reserved"}
	}
	return nil
}
