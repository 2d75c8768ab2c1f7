package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/svc-gateway/svc/internal/ratelimit"
)

// clientKey is the per-address limiters' key of r's client (its
// clientAddress).
func (s *Server) clientKey(r *http.Request) string {
	return ratelimit.ClientKey(s.clientAddress(r))
}

// clientAddress is the address of r's client: its peer's, or behind a
// trusted reverse proxy (SVC_TRUSTED_PROXIES), where every request comes
// from the proxy, the nearest X-Forwarded-For entry that is not a trusted
// proxy itself; anyone else's X-Forwarded-For is ignored, since a client
// could write anything there. It is an IP address, or RemoteAddr as it is
// (host:port).
func (s *Server) clientAddress(r *http.Request) string {
	if !s.fromTrustedProxy(r) {
		return r.RemoteAddr
	}
	// The nearest hop is the last entry of the last header line.
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" || s.trusted(hop) {
			continue
		}
		if _, err := netip.ParseAddr(hop); err != nil {
			break // garbage: count the proxy rather than trust it
		}
		return hop
	}
	return r.RemoteAddr
}

// fromTrustedProxy says whether r's peer is a trusted reverse proxy.
func (s *Server) fromTrustedProxy(r *http.Request) bool {
	if len(s.Config.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	return err == nil && s.trusted(host)
}

func (s *Server) trusted(host string) bool {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, p := range s.Config.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
