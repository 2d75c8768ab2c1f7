package netguard

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	// class "" means public. Rows walk each denied prefix: the last address
	// before it, its first and last address, and the first address after it.
	tests := []struct {
		addr  string
		class string
	}{
		// 0.0.0.0/8
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"0.255.255.255", "unspecified"},
		{"1.0.0.0", ""},
		// 10.0.0.0/8
		{"9.255.255.255", ""},
		{"10.0.0.0", "private"},
		{"10.255.255.255", "private"},
		{"11.0.0.0", ""},
		// 100.64.0.0/10
		{"100.63.255.255", ""},
		{"100.64.0.0", "cgnat"},
		{"100.100.100.200", "cgnat"},
		{"100.127.255.255", "cgnat"},
		{"100.128.0.0", ""},
		// 127.0.0.0/8
		{"126.255.255.255", ""},
		{"127.0.0.0", "loopback"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.255", "loopback"},
		{"128.0.0.0", ""},
		// 169.254.0.0/16
		{"169.253.255.255", ""},
		{"169.254.0.0", "link-local"},
		{"169.254.169.254", "link-local"},
		{"169.254.170.2", "link-local"},
		{"169.254.255.255", "link-local"},
		{"169.255.0.0", ""},
		// 172.16.0.0/12
		{"172.15.255.255", ""},
		{"172.16.0.0", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.0", ""},
		// 192.0.0.0/24, 192.0.2.0/24
		{"191.255.255.255", ""},
		{"192.0.0.0", "reserved"},
		{"192.0.0.192", "reserved"},
		{"192.0.0.255", "reserved"},
		{"192.0.1.0", ""},
		{"192.0.2.0", "documentation"},
		{"192.0.2.255", "documentation"},
		{"192.0.3.0", ""},
		// 192.31.196.0/24, 192.52.193.0/24, 192.88.99.0/24, 192.175.48.0/24
		{"192.31.195.255", ""},
		{"192.31.196.0", "reserved"},
		{"192.31.196.255", "reserved"},
		{"192.31.197.0", ""},
		{"192.52.193.1", "reserved"},
		{"192.88.98.255", ""},
		{"192.88.99.0", "reserved"},
		{"192.88.99.255", "reserved"},
		{"192.88.100.0", ""},
		{"192.175.48.1", "reserved"},
		// 192.168.0.0/16
		{"192.167.255.255", ""},
		{"192.168.0.0", "private"},
		{"192.168.255.255", "private"},
		{"192.169.0.0", ""},
		// 198.18.0.0/15
		{"198.17.255.255", ""},
		{"198.18.0.0", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.20.0.0", ""},
		// 198.51.100.0/24, 203.0.113.0/24
		{"198.51.99.255", ""},
		{"198.51.100.0", "documentation"},
		{"198.51.100.255", "documentation"},
		{"198.51.101.0", ""},
		{"203.0.112.255", ""},
		{"203.0.113.0", "documentation"},
		{"203.0.113.255", "documentation"},
		{"203.0.114.0", ""},
		// 224.0.0.0/4, 240.0.0.0/4, 255.255.255.255
		{"223.255.255.255", ""},
		{"224.0.0.0", "multicast"},
		{"239.255.255.255", "multicast"},
		{"240.0.0.0", "reserved"},
		{"255.255.255.254", "reserved"},
		{"255.255.255.255", "broadcast"},
		// public IPv4
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},

		// IPv6
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::2", "unspecified"}, // ::0.0.0.2
		{"::127.0.0.1", "loopback"},
		{"::8.8.8.8", "ipv4-compatible"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:100.64.0.1", "cgnat"},
		{"::ffff:129.144.52.38", "ipv4-mapped"},
		{"::ffff:0:127.0.0.1", "ipv4-translated"},
		{"64:ff9b::7f00:1", "nat64"},
		{"64:ff9b::808:808", "nat64"},
		{"64:ff9b:1::1", "nat64"},
		{"100::1", "reserved"},
		{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "non-global-ipv6"},
		{"fc00::", "private"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"},
		{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
		{"fe00::1", "non-global-ipv6"},
		{"fe80::", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
		{"fec0::1", "non-global-ipv6"},
		{"ff02::2", "multicast"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
		{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "non-global-ipv6"},
		{"2000::", ""},
		{"2001::", "teredo"},
		{"2001::1", "teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"},
		{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "teredo"},
		{"2001:1::1", "reserved"},
		{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
		{"2001:200::", ""},
		{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"2001:db8::", "documentation"},
		{"2001:db8::1", "documentation"},
		{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
		{"2001:db9::", ""},
		{"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"2002::", "6to4"},
		{"2002::1", "6to4"},
		{"2002:a00:1::1", "6to4"},
		{"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "6to4"},
		{"2003::", ""},
		{"2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", ""},
		{"2620:4f:8000::", "reserved"},
		{"2620:4f:8000:ffff:ffff:ffff:ffff:ffff", "reserved"},
		{"2620:4f:8001::", ""},
		{"3fff::1", "documentation"},
		{"5f00::1", "reserved"},
		{"3ffe:ffff::1", ""},
		{"2001:4860:4860::8888", ""},
		{"2606:4700:4700::1111", ""},
		{"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"4000::", "non-global-ipv6"},
	}
	require.GreaterOrEqual(t, len(tests), 60)
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			addr := netip.MustParseAddr(tt.addr)
			err := Classify(addr)
			if tt.class == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrBlocked)
			var be *BlockedError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tt.class, be.Class)
			assert.Equal(t, addr, be.Addr)
		})
	}
}

func TestClassifyInvalid(t *testing.T) {
	t.Parallel()
	err := Classify(netip.Addr{})
	require.ErrorIs(t, err, ErrBlocked)
	var be *BlockedError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "invalid", be.Class)
}

func TestBlockedErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *BlockedError
		want string
	}{
		{&BlockedError{Addr: netip.MustParseAddr("10.0.0.1"), Host: "10.0.0.1", Class: "private"},
			`host "10.0.0.1" is a private address`},
		{&BlockedError{Addr: netip.MustParseAddr("127.0.0.1"), Host: "0x7f.1", Class: "loopback"},
			`host "0x7f.1" (127.0.0.1) is a loopback address`},
		{&BlockedError{Addr: netip.MustParseAddr("169.254.169.254"), Class: "link-local"},
			`address 169.254.169.254 is a link-local address`},
		{&BlockedError{Host: "localhost", Class: "local-name"},
			`host "localhost" is a local name`},
		{&BlockedError{Addr: netip.MustParseAddr("8.8.8.8"), Host: "8.8.8.8", Port: 22, Class: "port"},
			`host "8.8.8.8": port 22 is not allowed`},
		{&BlockedError{Host: ":123", Class: "invalid"},
			`address ":123" is not a valid ip:port`},
		{&BlockedError{Addr: netip.MustParseAddr("100.64.0.1"), Class: "cgnat"},
			`address 100.64.0.1 is a shared (carrier-grade nat) address`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.err.Error())
	}
}
