package netguard

import (
	"net/netip"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notIPv4 are hosts that end in a number, so are IPv4 addresses or
// nothing under the WHATWG URL standard, and are not valid addresses.
// Some parsers wrap the overflowing parts: 425.510.425.510 would become
// 169.254.169.254.
var notIPv4 = []string{
	"425.510.425.510", "425.510.425.510.", "1.2.3.4.5", "1.2.3.4.5.", "0x1g.1", "256.0.0.1", "1.2.3.256",
	"1.2.65536", "7147006462", "4294967296", "0x100000000", "0x41414141A9FEA9FE", "99999999999999999999999999999",
	"1.2.3.08", "08.0.0.1", "1..1", ".1", "example.0x", "example.0X1f", "example.123", "1e3.1", "0xx1.0",
	"４２５.５１０.４２５.５１０", // full-width digits: numeric after IDNA mapping
	"①.②.③.④.⑤",
}

func TestHostsEndingInANumberAreAddressesOrNothing(t *testing.T) {
	t.Parallel()
	for _, host := range notIPv4 {
		_, ok, err := HostAddr(host)
		assert.False(t, ok, host)
		assert.ErrorIs(t, err, ErrInvalidURL, host)
		assert.Contains(t, err.Error(), "ends in a number", host)
	}
	for host, want := range map[string]string{
		"1.2.3.4": "1.2.3.4", "1.2.3.4.": "1.2.3.4", "0x7f.1": "127.0.0.1", "2130706433": "127.0.0.1",
		"0xa9.254.0251.0xfe": "169.254.169.254", "0x": "0.0.0.0", "①②⑦.⓪.⓪.①": "127.0.0.1", "[::1]": "::1",
	} {
		ip, ok, err := HostAddr(host)
		require.NoError(t, err, host)
		assert.True(t, ok, host)
		assert.Equal(t, netip.MustParseAddr(want), ip, host)
	}
	// Names whose last label is not a number are names.
	for _, host := range []string{"example.com", "1.2.3.4.com", "0x1g", "a.0x1g", "a.1b", "09a.com", "a.1.b", "xn--bcher-kva.test", "bücher.test"} {
		_, ok, err := HostAddr(host)
		require.NoError(t, err, host)
		assert.False(t, ok, host)
	}
}

// CheckURL refuses them as invalid URLs before any DNS lookup, even with
// a resolver that would answer with a public address.
func TestCheckURLRefusesHostsEndingInANumberWithoutDNS(t *testing.T) {
	t.Parallel()
	resolver := staticResolver("8.8.8.8")
	g := &Guard{Resolver: resolver}
	open := &Guard{Resolver: resolver, AllowAll: true}
	for _, host := range notIPv4 {
		for _, raw := range []string{"http://" + host + "/", "https://" + host + ":8443/x?y=1"} {
			for _, guard := range []*Guard{g, open} {
				u, err := guard.CheckURL(t.Context(), raw)
				assert.Nil(t, u, raw)
				assert.ErrorIs(t, err, ErrInvalidURL, raw)
			}
		}
	}
	assert.Empty(t, resolver.lookups(), "no name was resolved")
	_, err := g.CheckURL(t.Context(), "http://1.2.3.4.com/")
	require.NoError(t, err, "a name that only starts with numbers is resolved")
	assert.Equal(t, []string{"1.2.3.4.com"}, resolver.lookups())
}

func TestAllowlistRefusesHostsEndingInANumber(t *testing.T) {
	t.Parallel()
	_, err := ParseAllowlist("425.510.425.510:80")
	assert.ErrorContains(t, err, "ends in a number")
	_, err = ParseAllowlist("1.2.3.4.5:8080")
	assert.ErrorContains(t, err, "ends in a number")
}

// Every host of the shared SSRF corpus that ends in a number is a valid
// literal, so the rule changes no verdict there: those stay refused or
// allowed by their address, as TestCorpusBlock and TestCorpusAllow check.
func TestCorpusNumericHostsAreAddresses(t *testing.T) {
	t.Parallel()
	dir := ssrfDataDir(t)
	n := 0
	for _, name := range []string{"block.txt", "allow.txt"} {
		for _, line := range readURLs(t, filepath.Join(dir, name)) {
			u, err := url.Parse(line)
			if err != nil || u.Hostname() == "" || !endsInNumber(u.Hostname()) {
				continue
			}
			n++
			_, ok, err := HostAddr(u.Hostname())
			assert.NoError(t, err, line)
			assert.True(t, ok, line)
		}
	}
	assert.Positive(t, n)
	t.Logf("%d corpus hosts end in a number, each a valid address", n)
}
