package settings_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// publicDNS answers every name with a public address and records it.
type publicDNS struct {
	mu    sync.Mutex
	names []string
}

func (d *publicDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.names = append(d.names, host)
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// A webhook_url whose host ends in a number but is no valid IPv4 address
// is refused as invalid before any DNS lookup, though this DNS would have
// answered with a public address.
func TestWebhookURLHostsEndingInANumber(t *testing.T) {
	dns := &publicDNS{}
	svc := settings.NewService(storetest.Open(t), &netguard.Guard{Resolver: dns}, nil)
	for _, raw := range []string{`"http://425.510.425.510/hook"`, `"https://1.2.3.4.5/"`, `"http://0x1g.1:8080/"`, `"http://hooks.0x10/"`} {
		_, err := svc.Set(context.Background(), tenant.DefaultID, settings.WebhookURL, []byte(raw))
		e := errs.As(err)
		require.NotNil(t, e, raw)
		assert.Equal(t, errs.Invalid, e.Kind, raw)
		assert.Equal(t, settings.WebhookURL, e.Param)
		assert.Contains(t, e.Public, "ends in a number", raw)
	}
	assert.Empty(t, dns.names, "nothing was resolved")
	st, err := svc.Get(context.Background(), tenant.DefaultID)
	require.NoError(t, err)
	assert.Nil(t, st.WebhookURL)
}
