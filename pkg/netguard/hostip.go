package netguard

import (
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
)

// HostAddr applies the rules for a URL host that need no DNS. A host that
// is an IP literal in any encoding ParseHostIP knows (after IDNA mapping,
// for one that is not ASCII) gives its address and true; a name to resolve
// gives false. A host that ends in a number but is not a valid IPv4
// address ("425.510.425.510", "1.2.3.4.5", "0x1g.1") gives an error
// matching ErrInvalidURL, as does one IDNA cannot map.
//
// The WHATWG URL standard makes a host whose last label (one trailing dot
// dropped) is decimal digits or 0x-prefixed hex an IPv4 address or no host
// at all, never a name: a browser refuses such a URL, and a lax parser may
// wrap the parts that overflow (425 is 169 modulo 256, so 425.510.425.510
// can become 169.254.169.254). Sent to DNS instead, its answer could be
// anything. So it is refused before any lookup, wherever svc takes a URL.
func HostAddr(host string) (netip.Addr, bool, error) {
	ip, _, err := hostForm(host)
	return ip, ip.IsValid(), err
}

// hostForm is HostAddr, also returning, for a name, its ASCII form in
// lower case, as it is dialed.
func hostForm(host string) (netip.Addr, string, error) {
	if ip, ok := ParseHostIP(host); ok {
		return ip, "", nil
	}
	name := strings.ToLower(host)
	if !isASCII(name) {
		// Map the way net/http does before dialing, so that full-width or
		// enclosed characters cannot hide a numeric host or a local name.
		mapped, err := idna.Lookup.ToASCII(host)
		if err != nil {
			return netip.Addr{}, "", fmt.Errorf("%w: host %q is not a valid domain name", ErrInvalidURL, host)
		}
		if ip, ok := ParseHostIP(mapped); ok {
			return ip, "", nil
		}
		name = mapped
	}
	if endsInNumber(name) {
		return netip.Addr{}, "", fmt.Errorf("%w: host %q ends in a number but is not a valid IPv4 address", ErrInvalidURL, host)
	}
	return netip.Addr{}, name, nil
}

// endsInNumber is the WHATWG URL standard's "ends in a number checker":
// whether the last label of host, after dropping one trailing dot, is
// decimal digits, or "0x" or "0X" followed by hex digits (none at all
// included).
func endsInNumber(host string) bool {
	s := strings.TrimSuffix(host, ".")
	last := s[strings.LastIndexByte(s, '.')+1:]
	if last == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(last, "0x"); ok || strings.HasPrefix(last, "0X") {
		if !ok {
			hex = last[2:]
		}
		return strings.Trim(hex, "0123456789abcdefABCDEF") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// ParseHostIP interprets a URL host as an IP address the way the most
// permissive parser on the path to a socket would: glibc's inet_aton (used by
// getaddrinfo, so by Go's cgo resolver) or a browser's URL parser. Go's own
// parsers reject these forms, which is exactly why they must be caught here:
// a host that Go treats as a name may still be dialed as a private address.
//
// It accepts dotted-quad, a single 32-bit number ("2130706433"), octal parts
// with a leading zero ("0177.0.0.1", "017700000001"), hex parts with a 0x
// prefix ("0x7f000001", "0x7f.1"), short forms in which the last part fills
// the remaining bytes ("127.1", "10.1.1"), any mix of those, one trailing dot
// (as browsers allow), and IPv6 with or without brackets, with an optional
// zone (written "%25zone" or "%zone" inside brackets). ok is false when host
// is not numeric. Forms whose parts overflow ("425.510.425.510",
// "7147006462", "0x41414141A9FEA9FE") are not addresses to either parser and
// also report false; HostAddr refuses them.
func ParseHostIP(host string) (addr netip.Addr, ok bool) {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		inner := strings.Replace(host[1:len(host)-1], "%25", "%", 1)
		a, err := netip.ParseAddr(inner)
		return a, err == nil && a.Is6()
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		return a, err == nil && a.Is6()
	}
	return parseIPv4(host)
}

// parseIPv4 implements the union of inet_aton and the WHATWG IPv4 parser.
func parseIPv4(s string) (netip.Addr, bool) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, false
		}
		last := i == len(parts)-1
		if !last {
			if n > 0xff {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		// The last part fills the bytes the earlier parts left.
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseIPv4Part parses one part: decimal, octal after a leading 0, or hex
// after 0x. "0x" alone is 0, as in browsers. Values above 32 bits fail.
func parseIPv4Part(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	var n uint64
	for i := 0; i < len(p); i++ {
		d := digitValue(p[i])
		if d >= base {
			return 0, false
		}
		n = n*base + d
		if n > 0xffffffff {
			return 0, false
		}
	}
	return n, true
}

func digitValue(c byte) uint64 {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0')
	case 'a' <= c && c <= 'f':
		return uint64(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return uint64(c-'A') + 10
	}
	return 99
}
