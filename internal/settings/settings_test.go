package settings_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/settings"
	"github.com/svc-gateway/svc/internal/store/storetest"
	"github.com/svc-gateway/svc/internal/tenant"
	"github.com/svc-gateway/svc/pkg/netguard"
)

// stubDNS answers from a table; every other name fails, so no test ever
// depends on (or sends) real DNS traffic.
type stubDNS map[string][]string

func (s stubDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := s[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

var dns = stubDNS{
	"hooks.example.com":    {"93.184.216.34"},
	"internal.example.com": {"10.1.2.3"},
	"mixed.example.com":    {"93.184.216.34", "127.0.0.1"},
	"meta.example.com":     {"169.254.169.254"},
	"v6-ula.example.com":   {"fd00::1"},
}

func newService(t *testing.T) *settings.Service {
	t.Helper()
	return settings.NewService(storetest.Open(t), &netguard.Guard{Resolver: dns}, nil)
}

func TestDefaults(t *testing.T) {
	st, err := newService(t).Get(context.Background(), tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"retention_days": float64(30), "redaction": false, "webhook_url": (*string)(nil),
		"webhook_secret": nil, "approval_exception_ttl_hours": float64(24), "canary_enabled": false,
		"approval_pending_limit": 20, "timezone": "UTC",
	}, st.Public())
}

func TestSetValid(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		check      func(t *testing.T, s settings.Settings)
	}{
		{"retention_days", `7`, func(t *testing.T, s settings.Settings) { assert.InDelta(t, 7.0, s.RetentionDays, 0) }},
		{"retention_days", `0.5`, func(t *testing.T, s settings.Settings) { assert.InDelta(t, 0.5, s.RetentionDays, 0) }},
		{"approval_exception_ttl_hours", `48`, func(t *testing.T, s settings.Settings) { assert.InDelta(t, 48.0, s.ApprovalExceptionTTLHours, 0) }},
		{"redaction", `true`, func(t *testing.T, s settings.Settings) { assert.True(t, s.Redaction) }},
		{"canary_enabled", `true`, func(t *testing.T, s settings.Settings) { assert.True(t, s.CanaryEnabled) }},
		{"approval_pending_limit", `5`, func(t *testing.T, s settings.Settings) { assert.Equal(t, 5, s.ApprovalPendingLimit) }},
		{"approval_pending_limit", `10000.0`, func(t *testing.T, s settings.Settings) { assert.Equal(t, 10000, s.ApprovalPendingLimit) }},
		{"webhook_url", `"https://hooks.example.com/svc"`, func(t *testing.T, s settings.Settings) {
			require.NotNil(t, s.WebhookURL)
			assert.Equal(t, "https://hooks.example.com/svc", *s.WebhookURL)
		}},
		{"webhook_url", `"http://93.184.216.34:8080/x"`, func(t *testing.T, s settings.Settings) { require.NotNil(t, s.WebhookURL) }},
		{"webhook_url", `null`, func(t *testing.T, s settings.Settings) { assert.Nil(t, s.WebhookURL) }},
		{"webhook_url", `""`, func(t *testing.T, s settings.Settings) { assert.Nil(t, s.WebhookURL) }},
		{"webhook_secret", `"s3cret"`, func(t *testing.T, s settings.Settings) {
			require.NotNil(t, s.WebhookSecret)
			assert.Equal(t, "s3cret", *s.WebhookSecret)
			assert.Equal(t, "[set]", s.Public()["webhook_secret"])
		}},
		{"timezone", `"Asia/Kolkata"`, func(t *testing.T, s settings.Settings) { assert.Equal(t, "Asia/Kolkata", s.Timezone) }},
		{"timezone", `" America/New_York "`, func(t *testing.T, s settings.Settings) { assert.Equal(t, "America/New_York", s.Timezone) }},
		{"timezone", `null`, func(t *testing.T, s settings.Settings) { assert.Equal(t, "UTC", s.Timezone) }},
		{"timezone", `""`, func(t *testing.T, s settings.Settings) { assert.Equal(t, "UTC", s.Timezone) }},
		{"webhook_secret", `null`, func(t *testing.T, s settings.Settings) {
			assert.Nil(t, s.WebhookSecret)
			assert.Nil(t, s.Public()["webhook_secret"])
		}},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			svc := newService(t)
			got, err := svc.Set(context.Background(), tenant.DefaultID, tc.key, json.RawMessage(tc.value))
			require.NoError(t, err)
			tc.check(t, got)
			reread, err := svc.Get(context.Background(), tenant.DefaultID)
			require.NoError(t, err)
			assert.Equal(t, got, reread, "stored value reads back")
		})
	}
}

func TestSetInvalid(t *testing.T) {
	svc := newService(t)
	cases := []struct{ key, value string }{
		{"retention_days", `0`}, {"retention_days", `-3`}, {"retention_days", `"7"`}, {"retention_days", `null`},
		{"retention_days", `true`}, {"retention_days", `1e400`}, {"retention_days", `[]`},
		{"approval_exception_ttl_hours", `0`}, {"approval_exception_ttl_hours", `-1`}, {"approval_exception_ttl_hours", `"x"`},
		{"redaction", `"true"`}, {"redaction", `1`}, {"redaction", `null`},
		{"canary_enabled", `"yes"`}, {"canary_enabled", `0`},
		{"approval_pending_limit", `0`}, {"approval_pending_limit", `-1`}, {"approval_pending_limit", `2.5`},
		{"approval_pending_limit", `10001`}, {"approval_pending_limit", `"20"`}, {"approval_pending_limit", `null`},
		{"approval_pending_limit", `1e400`},
		{"webhook_secret", `42`}, {"webhook_secret", `{}`},
		{"timezone", `"Mars/Olympus_Mons"`}, {"timezone", `"Local"`}, {"timezone", `"../../etc/passwd"`},
		{"timezone", `"/usr/share/zoneinfo/UTC"`}, {"timezone", `5`}, {"timezone", `"+05:30"`},
		{"webhook_url", `42`}, {"webhook_url", `"ftp://hooks.example.com/"`}, {"webhook_url", `"file:///etc/passwd"`},
		{"webhook_url", `"not a url"`}, {"webhook_url", `"https://user:pw@hooks.example.com/"`},
		{"webhook_url", `"https://nowhere.invalid/"`}, // does not resolve
		// Private, loopback, link-local and otherwise internal hosts, in
		// every encoding of an IP literal, and names that resolve there.
		{"webhook_url", `"http://127.0.0.1/"`},
		{"webhook_url", `"http://2130706433/"`},            // decimal 127.0.0.1
		{"webhook_url", `"http://017700000001/"`},          // octal 127.0.0.1
		{"webhook_url", `"http://0177.0.0.1/"`},            // octal dotted
		{"webhook_url", `"http://0x7f000001/"`},            // hex
		{"webhook_url", `"http://0x7f.0x0.0x0.0x1/"`},      // hex dotted
		{"webhook_url", `"http://127.1/"`},                 // short form
		{"webhook_url", `"http://[::ffff:127.0.0.1]/"`},    // IPv6-mapped loopback
		{"webhook_url", `"http://[::1]/"`},                 // IPv6 loopback
		{"webhook_url", `"http://localhost:8080/"`},        // loopback name
		{"webhook_url", `"http://169.254.169.254/latest"`}, // cloud metadata
		{"webhook_url", `"http://2852039166/"`},            // decimal 169.254.169.254
		{"webhook_url", `"http://[::ffff:169.254.169.254]/"`},
		{"webhook_url", `"http://10.0.0.1/"`}, {"webhook_url", `"http://012.0.0.1/"`}, {"webhook_url", `"http://0xa000001/"`},
		{"webhook_url", `"http://172.16.0.1/"`}, {"webhook_url", `"http://172.31.255.255/"`}, {"webhook_url", `"http://[::ffff:172.16.0.1]/"`},
		{"webhook_url", `"http://192.168.1.1/"`}, {"webhook_url", `"http://3232235777/"`}, {"webhook_url", `"http://0xc0a80101/"`},
		{"webhook_url", `"http://100.64.0.1/"`}, {"webhook_url", `"http://100.100.100.200/"`}, {"webhook_url", `"http://[::ffff:100.64.0.1]/"`},
		{"webhook_url", `"http://[fc00::1]/"`}, {"webhook_url", `"http://[fd00:ec2::254]/"`},
		{"webhook_url", `"http://[fe80::1]/"`}, {"webhook_url", `"http://0.0.0.0/"`}, {"webhook_url", `"http://[::]/"`},
		{"webhook_url", `"http://internal.example.com/"`}, {"webhook_url", `"http://mixed.example.com/"`},
		{"webhook_url", `"http://meta.example.com/"`}, {"webhook_url", `"http://v6-ula.example.com/"`},
		{"webhook_url", `"http://metadata.google.internal/"`},
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			_, err := svc.Set(context.Background(), tenant.DefaultID, tc.key, json.RawMessage(tc.value))
			e := errs.As(err)
			require.NotNil(t, e, "want a classified error")
			assert.Equal(t, errs.Invalid, e.Kind)
			assert.Equal(t, "invalid_setting", e.Code)
			assert.Equal(t, tc.key, e.Param)
			assert.Contains(t, e.Public, tc.key, "the message names the setting")
		})
	}
	st, err := svc.Get(context.Background(), tenant.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, settings.Defaults(), st, "no rejected value was stored")
}

func TestZone(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	assert.Equal(t, time.UTC, svc.Zone(ctx, tenant.DefaultID), "UTC by default")
	_, err := svc.Set(ctx, tenant.DefaultID, settings.Timezone, json.RawMessage(`"Asia/Kolkata"`))
	require.NoError(t, err)
	loc := svc.Zone(ctx, tenant.DefaultID)
	assert.Equal(t, "Asia/Kolkata", loc.String())
	_, offset := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Zone()
	assert.Equal(t, 5*3600+1800, offset)
	assert.Same(t, loc, svc.Zone(ctx, tenant.DefaultID), "the zone is loaded once")

	failing := settings.NewService(failingStore{}, &netguard.Guard{}, nil)
	assert.Equal(t, time.UTC, failing.Zone(ctx, tenant.DefaultID), "unreadable settings count in UTC")
}

// failingStore cannot read.
type failingStore struct{ settings.Store }

func (failingStore) TenantSettings(context.Context, string) (map[string]json.RawMessage, error) {
	return nil, errors.New("database gone")
}

func TestUnknownSetting(t *testing.T) {
	_, err := newService(t).Set(context.Background(), tenant.DefaultID, "rate_limit", json.RawMessage(`5`))
	e := errs.As(err)
	require.NotNil(t, e)
	assert.Equal(t, errs.Invalid, e.Kind)
	assert.Equal(t, "unsupported_setting", e.Code)
	assert.Contains(t, e.Public, `"rate_limit"`)
}

// slowStore holds a read until released, as a read racing a write.
type slowStore struct {
	settings.Store
	reading chan struct{}
	release chan struct{}
}

func (s *slowStore) TenantSettings(ctx context.Context, tenantID string) (map[string]json.RawMessage, error) {
	out, err := s.Store.TenantSettings(ctx, tenantID)
	if s.reading != nil {
		close(s.reading)
		<-s.release
	}
	return out, err
}

func TestAReadOlderThanAChangeIsNotCached(t *testing.T) {
	ctx := context.Background()
	slow := &slowStore{Store: storetest.Open(t), reading: make(chan struct{}), release: make(chan struct{})}
	svc := settings.NewService(slow, &netguard.Guard{}, nil)
	done := make(chan settings.Settings)
	go func() {
		st, _ := svc.Get(ctx, tenant.DefaultID) // reads redaction off, then waits
		done <- st
	}()
	<-slow.reading
	slow.reading = nil
	_, err := svc.Set(ctx, tenant.DefaultID, settings.Redaction, json.RawMessage(`true`))
	require.NoError(t, err)
	close(slow.release)
	assert.False(t, (<-done).Redaction, "the racing read saw the old value")
	assert.True(t, svc.Redaction(ctx, tenant.DefaultID), "but it was not cached over the change")
}
