package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/svc-gateway/svc/internal/ratelimit"
)

// clientKey is the per-address limiters' key of r's client. Behind a
// trusted reverse proxy (SVC_TRUSTED_PROXIES) every request comes from the
// proxy, so the client is the nearest X-Forwarded-For entry that is not a
// trusted proxy itself; anyone else's X-Forwarded-For is ignored, since a
// client could write anything there.
func (s *Server) clientKey(r *http.Request) string {
	if len(s.Config.TrustedProxies) == 0 {
		return ratelimit.ClientKey(r.RemoteAddr)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || !s.trusted(host) {
		return ratelimit.ClientKey(r.RemoteAddr)
	}
	// The hops are read nearest first, from the last header line's last
	// entry back, in place: this runs on every rate-limited request.
	lines := r.Header.Values("X-Forwarded-For")
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for {
			comma := strings.LastIndexByte(rest, ',')
			hop := strings.TrimSpace(rest[comma+1:])
			if hop != "" && !s.trusted(hop) {
				if _, err := netip.ParseAddr(hop); err != nil {
					return ratelimit.ClientKey(r.RemoteAddr) // garbage: count the proxy rather than trust it
				}
				return ratelimit.ClientKey(hop)
			}
			if comma < 0 {
				break
			}
			rest = rest[:comma]
		}
	}
	return ratelimit.ClientKey(r.RemoteAddr)
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
