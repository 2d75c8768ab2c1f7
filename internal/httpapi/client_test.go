package httpapi

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/config"
)

func TestClientKeyWalksEveryForwardedForLine(t *testing.T) {
	s := &Server{Deps: Deps{Config: &config.Config{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}}}}
	for _, c := range []struct {
		remote string
		lines  []string
		want   string
	}{
		{"127.0.0.1:1", nil, "127.0.0.1"},
		{"127.0.0.1:1", []string{"203.0.113.1"}, "203.0.113.1"},
		{"127.0.0.1:1", []string{"198.51.100.9, 203.0.113.1, 10.1.2.3"}, "203.0.113.1"},
		// The nearest hop is in the last line: an earlier line is further away.
		{"127.0.0.1:1", []string{"198.51.100.9", "203.0.113.1, 10.1.2.3"}, "203.0.113.1"},
		{"127.0.0.1:1", []string{"198.51.100.9, 203.0.113.1", "10.1.2.3", "127.0.0.1"}, "203.0.113.1"},
		{"127.0.0.1:1", []string{"198.51.100.9", "", " , ,10.1.2.3 "}, "198.51.100.9"},
		{"127.0.0.1:1", []string{"10.0.0.1", "127.0.0.1"}, "127.0.0.1"},
		{"127.0.0.1:1", []string{"198.51.100.9", "not-an-address, 10.1.2.3"}, "127.0.0.1"},
		{"127.0.0.1:1", []string{"2001:db8:1:2::7", " ::ffff:10.0.0.1"}, "2001:db8:1:2::/64"},
		{"192.0.2.5:1", []string{"203.0.113.1"}, "192.0.2.5"}, // not a trusted proxy
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		for _, l := range c.lines {
			r.Header.Add("X-Forwarded-For", l)
		}
		assert.Equal(t, c.want, s.clientKey(r), "%q", c.lines)
	}
}
