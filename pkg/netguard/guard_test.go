package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubResolver answers from a function and counts lookups. It never touches
// the network.
type stubResolver struct {
	mu    sync.Mutex
	calls []string
	fn    func(host string) ([]netip.Addr, error)
}

var _ Resolver = (*stubResolver)(nil)

func (r *stubResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.calls = append(r.calls, host)
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, &net.DNSError{Err: err.Error(), Name: host, UnwrapErr: err}
	}
	return r.fn(host)
}

func (r *stubResolver) lookups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// staticResolver answers every name with the same addresses.
func staticResolver(ss ...string) *stubResolver {
	return &stubResolver{fn: func(string) ([]netip.Addr, error) { return addrs(ss...), nil }}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	resolver := &stubResolver{fn: func(host string) ([]netip.Addr, error) {
		switch host {
		case "public.test", "xn--bcher-kva.test":
			return addrs("8.8.8.8", "2001:4860:4860::8888"), nil
		case "mapped.test":
			return addrs("::ffff:8.8.8.8"), nil
		case "private-a.test":
			return addrs("10.0.0.1"), nil
		case "mixed-a.test":
			return addrs("8.8.8.8", "127.0.0.1"), nil
		case "empty.test":
			return nil, nil
		case "nxdomain.test":
			return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.9.9.9:53", IsNotFound: true}
		}
		return nil, errors.New("unexpected lookup of " + host)
	}}
	g := &Guard{Resolver: resolver}
	tests := []struct {
		url     string
		wantErr error  // nil: allowed
		wantMsg string // exact message, when set
	}{
		{"http://8.8.8.8/", nil, ""},
		{"https://8.8.8.8:8443/hook?x=1", nil, ""},
		{"HTTPS://[2606:4700:4700::1111]/", nil, ""},
		{"http://public.test/", nil, ""},
		{"http://PUBLIC.test./", nil, ""},
		{"http://mapped.test/", nil, ""},
		{"http://bücher.test/", nil, ""},

		{"http://10.0.0.1/", ErrBlocked, `host "10.0.0.1" is a private address`},
		{"http://0x7f.1/", ErrBlocked, `host "0x7f.1" (127.0.0.1) is a loopback address`},
		{"http://2852039166/", ErrBlocked, `host "2852039166" (169.254.169.254) is a link-local address`},
		{"http://①②⑦.⓪.⓪.①/", ErrBlocked, `host "①②⑦.⓪.⓪.①" (127.0.0.1) is a loopback address`},
		{"http://[::ffff:129.144.52.38]/", ErrBlocked, `host "::ffff:129.144.52.38" is an ipv4-mapped ipv6 address`},
		{"http://[fe80::1%25eth0]/", ErrBlocked, `host "fe80::1%eth0" is a link-local address`},
		{"http://private-a.test/", ErrBlocked, `host "private-a.test" (10.0.0.1) is a private address`},
		{"http://mixed-a.test/", ErrBlocked, `host "mixed-a.test" (127.0.0.1) is a loopback address`},
		{"http://localhost:8080/", ErrBlocked, `host "localhost" is a local name`},
		{"http://LocalHost./", ErrBlocked, `host "LocalHost." is a local name`},
		{"http://app.localhost/", ErrBlocked, ""},
		{"http://printer.local/", ErrBlocked, ""},
		{"http://db.corp.internal/", ErrBlocked, ""},
		{"http://router.home.arpa/", ErrBlocked, ""},
		{"http://redis/", ErrBlocked, `host "redis" is a local name`},
		{"http://metadata.google.internal/", ErrBlocked, `host "metadata.google.internal" is a cloud metadata name`},
		{"http://instance-data/", ErrBlocked, ""},
		{"http://ｌｏｃａｌｈｏｓｔ/", ErrBlocked, ""},

		{"ftp://8.8.8.8/", ErrInvalidURL, `invalid url: scheme "ftp" is not allowed (use http or https)`},
		{"file:///etc/passwd", ErrInvalidURL, ""},
		{"//8.8.8.8/", ErrInvalidURL, ""},
		{"8.8.8.8", ErrInvalidURL, ""},
		{"", ErrInvalidURL, ""},
		{"http:8.8.8.8", ErrInvalidURL, `invalid url: the url has no host`},
		{"http:///path", ErrInvalidURL, ""},
		{"http://user:secret@8.8.8.8/", ErrInvalidURL, `invalid url: credentials in the url are not allowed`},
		{"http://@8.8.8.8/", ErrInvalidURL, ""},
		{"http://[]/", ErrInvalidURL, ""},
		{"http://:80/", ErrInvalidURL, ""},
		{"http://8.8.8.8:0/", ErrInvalidURL, ""},
		{"http://8.8.8.8:65536/", ErrInvalidURL, `invalid url: port "65536" is out of range`},
		{"http://exa$mple.test/", ErrInvalidURL, `invalid url: host "exa$mple.test" is not a valid host name`},
		{"http://a..b.test/", ErrInvalidURL, ""},
		{"http://%41.test/", ErrInvalidURL, ""},
		{"http://a\x00b.test/", ErrInvalidURL, ""},

		{"http://empty.test/", ErrUnresolvable, `host "empty.test" resolved to no addresses`},
		{"http://nxdomain.test/", ErrUnresolvable, `host "nxdomain.test" could not be resolved: no such host`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			u, err := g.CheckURL(t.Context(), tt.url)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.NotNil(t, u)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			assert.Nil(t, u)
			for _, other := range []error{ErrBlocked, ErrInvalidURL, ErrUnresolvable} {
				if other != tt.wantErr {
					assert.NotErrorIs(t, err, other)
				}
			}
			if tt.wantMsg != "" {
				assert.Equal(t, tt.wantMsg, err.Error())
			}
			assert.NotContains(t, err.Error(), "secret")
			assert.NotContains(t, err.Error(), "10.9.9.9", "resolver details must not reach the user")
		})
	}
	for _, name := range resolver.lookups() {
		assert.NotContains(t, []string{"localhost", "redis", "metadata.google.internal", "instance-data"}, name,
			"names refused by name must not reach DNS")
	}
}

func TestCheckURLResolverError(t *testing.T) {
	t.Parallel()
	cause := &net.DNSError{Err: "server misbehaving", Name: "x.test", Server: "10.9.9.9:53"}
	g := &Guard{Resolver: &stubResolver{fn: func(string) ([]netip.Addr, error) { return nil, cause }}}
	_, err := g.CheckURL(t.Context(), "http://x.test/")
	require.ErrorIs(t, err, ErrUnresolvable)
	require.ErrorIs(t, err, cause)
	assert.Equal(t, `host "x.test" could not be resolved: server misbehaving`, err.Error())

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	g = &Guard{Resolver: staticResolver("8.8.8.8")}
	_, err = g.CheckURL(ctx, "http://x.test/")
	require.ErrorIs(t, err, ErrUnresolvable)
	require.ErrorIs(t, err, context.Canceled)
}

func TestCheckURLZeroGuardNeedsNoDNS(t *testing.T) {
	t.Parallel()
	// The zero Guard would use net.DefaultResolver; these hosts never reach it.
	var g Guard
	_, err := g.CheckURL(t.Context(), "http://8.8.8.8/")
	require.NoError(t, err)
	_, err = g.CheckURL(t.Context(), "http://127.0.0.1/")
	require.ErrorIs(t, err, ErrBlocked)
	_, err = g.CheckURL(t.Context(), "http://localhost/")
	require.ErrorIs(t, err, ErrBlocked)
}

func TestCheckURLExceptions(t *testing.T) {
	t.Parallel()
	allow, err := ParseAllowlist("10.0.0.0/8, 127.0.0.1:8080, intranet:9000, [::1]:8081")
	require.NoError(t, err)
	resolver := staticResolver("192.168.1.10")
	g := &Guard{Allow: allow, Resolver: resolver, Ports: []uint16{80, 443}}
	tests := []struct {
		url     string
		allowed bool
	}{
		{"http://10.1.2.3/", true},
		{"http://10.1.2.3:9999/", true}, // a CIDR entry covers every port
		{"http://[::ffff:10.1.2.3]/", true},
		{"http://127.0.0.1:8080/", true},
		{"http://2130706433:8080/", true},
		{"http://127.0.0.1:8081/", false},
		{"http://127.0.0.2:8080/", false},
		{"http://[::1]:8081/", true},
		{"http://[::1]:8080/", false},
		{"http://intranet:9000/", true},
		{"http://INTRANET.:9000/", true},
		{"http://intranet:9001/", false},
		{"http://localhost:8080/", false}, // exceptions name addresses, not localhost
		{"http://192.168.1.10/", false},
		{"http://8.8.8.8/", true},
		{"https://8.8.8.8/", true},
		{"http://8.8.8.8:22/", false}, // Ports
	}
	for _, tt := range tests {
		_, err := g.CheckURL(t.Context(), tt.url)
		if tt.allowed {
			assert.NoError(t, err, tt.url)
		} else {
			assert.ErrorIs(t, err, ErrBlocked, tt.url)
		}
	}
	assert.Empty(t, resolver.lookups(), "exceptions and literals must not resolve")

	_, err = g.CheckURL(t.Context(), "http://8.8.8.8:22/")
	assert.EqualError(t, err, `host "8.8.8.8": port 22 is not allowed`)
}

func TestCheckURLAllowAll(t *testing.T) {
	t.Parallel()
	resolver := staticResolver("127.0.0.1")
	g := &Guard{AllowAll: true, Resolver: resolver, Ports: []uint16{443}}
	for _, u := range []string{"http://127.0.0.1/", "http://localhost:3000/", "http://10.0.0.1/", "http://redis/", "http://anything.test/"} {
		_, err := g.CheckURL(t.Context(), u)
		assert.NoError(t, err, u)
	}
	assert.Empty(t, resolver.lookups(), "AllowAll does not resolve")
	for _, u := range []string{"file:///etc/passwd", "http://user@127.0.0.1/", "http://:123", "http://[]"} {
		_, err := g.CheckURL(t.Context(), u)
		assert.ErrorIs(t, err, ErrInvalidURL, u)
	}
}

func TestControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		address string
		allowed bool
	}{
		{"8.8.8.8:443", true},
		{"8.8.8.8:80", true},
		{"[2001:4860:4860::8888]:443", true},
		{"127.0.0.1:80", false},
		{"[::1]:80", false},
		{"[::ffff:127.0.0.1]:80", false},
		{"[::ffff:129.144.52.38]:80", false},
		{"[::127.0.0.1]:80", false},
		{"[::]:80", false},
		{"0.0.0.0:80", false},
		{"169.254.169.254:80", false},
		{"100.100.100.200:80", false},
		{"[64:ff9b::7f00:1]:80", false},
		{"[fe80::1%eth0]:80", false},
		{":123", false},
		{"", false},
		{"garbage", false},
		{"8.8.8.8", false},
		{"8.8.8.8:", false},
		{"8.8.8.8:99999", false},
		{"8.8.8.8:http", false},
		{"localhost:80", false},
		{"2130706433:80", false},
		{"/var/run/docker.sock", false},
	}
	var g Guard
	for _, tt := range tests {
		err := g.Control("tcp", tt.address, nil)
		if tt.allowed {
			assert.NoError(t, err, tt.address)
		} else {
			assert.ErrorIs(t, err, ErrBlocked, tt.address)
		}
	}
	assert.EqualError(t, g.Control("tcp4", ":123", nil), `address ":123" is not a valid ip:port`)
	assert.EqualError(t, g.Control("tcp4", "127.0.0.1:80", nil), `address 127.0.0.1 is a loopback address`)
}

func TestControlExceptions(t *testing.T) {
	t.Parallel()
	allow, err := ParseAllowlist("127.0.0.1:8080, 10.0.0.0/8, fd00::/8, intranet:9000")
	require.NoError(t, err)
	g := &Guard{Allow: allow, Ports: []uint16{443}}
	tests := []struct {
		address string
		allowed bool
	}{
		{"127.0.0.1:8080", true},
		{"[::ffff:127.0.0.1]:8080", true},
		{"127.0.0.1:8081", false},
		{"127.0.0.2:8080", false},
		{"10.0.0.1:22", true},
		{"10.255.255.255:80", true},
		{"11.0.0.1:80", false}, // public, but Ports
		{"11.0.0.1:443", true},
		{"172.16.0.1:80", false},
		{"[fd00:ec2::254]:80", true},
		{"[fe80::1]:80", false},
		{"192.168.1.10:9000", false}, // host:port exceptions need ControlFor
	}
	for _, tt := range tests {
		err := g.Control("tcp", tt.address, nil)
		if tt.allowed {
			assert.NoError(t, err, tt.address)
		} else {
			assert.ErrorIs(t, err, ErrBlocked, tt.address)
		}
	}

	ctl := g.ControlFor("Intranet.")
	require.NoError(t, ctl("tcp4", "192.168.1.10:9000", nil))
	require.ErrorIs(t, ctl("tcp4", "192.168.1.10:9001", nil), ErrBlocked)
	require.ErrorIs(t, g.ControlFor("other")("tcp4", "192.168.1.10:9000", nil), ErrBlocked)
	require.ErrorIs(t, ctl("tcp4", "garbage", nil), ErrBlocked)

	all := &Guard{AllowAll: true}
	require.NoError(t, all.Control("tcp4", "127.0.0.1:80", nil))
	require.NoError(t, all.Control("tcp6", "[::1]:5432", nil))
	require.ErrorIs(t, all.Control("tcp4", ":80", nil), ErrBlocked, "unparsable stays denied")
	require.ErrorIs(t, all.Control("tcp4", "", nil), ErrBlocked)
}

func TestParseAllowlist(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		wantErr string // substring; "" means valid
	}{
		{"", ""},
		{" , ,", ""},
		{"10.0.0.0/8", ""},
		{"host:8080, 10.0.0.0/8, [::1]:8080", ""},
		{" intranet.example:443 ,fd00::/8 ", ""},
		{"127.0.0.1:8080", ""},
		{"127.0.0.1", ""},
		{"::1", ""},
		{"0x7f.1:8080", ""},
		{"HOST.:80", ""},
		{"10.0.0.1/8", `allowlist entry "10.0.0.1/8": prefix has host bits set (did you mean 10.0.0.0/8?)`},
		{"10.0.0.0/33", `allowlist entry "10.0.0.0/33": not a valid CIDR prefix`},
		{"ok:80, host", `allowlist entry "host": want host:port, ip:port, an IP address or a CIDR prefix`},
		{"host:", `allowlist entry "host:": port "" is not a number from 1 to 65535`},
		{"host:0", `port "0"`},
		{"host:65536", `port "65536"`},
		{"host:http", `port "http"`},
		{":8080", `allowlist entry ":8080": "" is not a valid host name`},
		{"bad$host:80", `"bad$host" is not a valid host name`},
		{"[fe80::1%eth0]:80", "zones are not allowed"},
		{"fe80::1%eth0", "zones are not allowed"},
		{"*:80", `"*" is not a valid host name`},
		{"http://host:80", "allowlist entry"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			_, err := ParseAllowlist(tt.in)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}

	a, err := ParseAllowlist("Host.:8080, 10.0.0.0/8, [::1]:8080, 127.0.0.1, 0x7f.2:80")
	require.NoError(t, err)
	assert.True(t, a.allowsName("host", 8080))
	assert.False(t, a.allowsName("host", 8081))
	assert.True(t, a.allowsAddr(netip.MustParseAddrPort("10.9.9.9:1")))
	assert.True(t, a.allowsAddr(netip.MustParseAddrPort("[::1]:8080")))
	assert.False(t, a.allowsAddr(netip.MustParseAddrPort("[::1]:8081")))
	assert.True(t, a.allowsAddr(netip.MustParseAddrPort("127.0.0.1:1")))
	assert.True(t, a.allowsAddr(netip.MustParseAddrPort("127.0.0.2:80")))
	assert.False(t, a.allowsAddr(netip.MustParseAddrPort("127.0.0.3:80")))
	var zero Allowlist
	assert.False(t, zero.allowsAddr(netip.MustParseAddrPort("127.0.0.1:80")))

	_, err = ParseAllowlist("a:1,b")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "a:1", "the error names only the bad entry")
}

func TestAllowlistStringRoundTrips(t *testing.T) {
	in := "intranet:8080, 10.0.0.0/8, [::1]:8080, 192.0.2.7"
	a, err := ParseAllowlist(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseAllowlist(a.String())
	if err != nil {
		t.Fatalf("String wrote %q, which does not parse: %v", a.String(), err)
	}
	if a.String() != b.String() || a.String() == "" {
		t.Fatalf("round trip changed the list: %q then %q", a.String(), b.String())
	}
	for _, ap := range []string{"10.1.2.3:1", "[::1]:8080", "192.0.2.7:443"} {
		if !b.allowsAddr(netip.MustParseAddrPort(ap)) {
			t.Errorf("%s is no longer allowed after the round trip", ap)
		}
	}
	if !b.allowsName("intranet", 8080) || b.allowsName("intranet", 8081) {
		t.Error("the host:port entry changed")
	}
}
