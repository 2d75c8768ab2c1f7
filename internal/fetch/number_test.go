package fetch

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// A host that ends in a number but is no valid IPv4 address is an invalid
// URL (400), refused before any DNS lookup: as the first URL, as a
// redirect's target, and at dial time when the URL check is skipped. The
// test's DNS would answer every name with a public address, so a lookup
// would have let the fetch through.
func TestHostsEndingInANumberAreRefusedWithoutDNS(t *testing.T) {
	t.Parallel()
	resolver := &stubResolver{fn: func(int, string) ([]netip.Addr, error) { return addrs(publicIP), nil }}
	f, tn, _ := testFetcher(t, Options{Resolver: resolver})
	unchecked, uncheckedNet, _ := testFetcher(t, Options{Resolver: resolver})
	unchecked.precheck = false
	for _, host := range []string{"425.510.425.510", "1.2.3.4.5", "0x1g.1", "0xa9.0xfe.0xa9.0x1fe", "example.0x1", "１.２.３.４.５"} {
		for _, fetcher := range []*Fetcher{f, unchecked} {
			_, err := fetcher.Get(withTimeout(t), "http://"+host+"/", nil)
			e := requireKind(t, err, errs.Invalid, "invalid_url")
			assert.Contains(t, e.Public, "ends in a number", host)
			assert.ErrorIs(t, err, netguard.ErrInvalidURL)
		}
		_, err := f.Get(withTimeout(t), "http://public.test/r?code=302&to=http://"+host+"/", nil)
		requireKind(t, err, errs.Invalid, "invalid_url")
		_, err = f.Do(withTimeout(t), &Request{Method: "POST", URL: "http://public.test/r?code=307&to=http://" + host + "/", Body: []byte("a=1")}, nil)
		requireKind(t, err, errs.Invalid, "invalid_url")
	}
	resolver.mu.Lock()
	assert.Subset(t, []string{"public.test"}, resolver.calls, "only the redirecting host was resolved")
	resolver.mu.Unlock()
	for _, d := range append(tn.recorded(), uncheckedNet.recorded()...) {
		assert.Equal(t, publicIP+":80", d, "only the redirecting host was dialed")
	}
}
