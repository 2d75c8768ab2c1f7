package netguard

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

// FuzzCheckURL checks that CheckURL never panics, that every error is one of
// the three kinds, and that with a resolver answering every name with
// 127.0.0.1 only a public IP literal can pass. More seeds live in
// testdata/fuzz/FuzzCheckURL.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"http://8.8.8.8/",
		"https://[2001:4860:4860::8888]:443/",
		"http://127.0.0.1/",
		"http://2130706433/",
		"http://0x7f.1/",
		"http://0177.0.0.1/",
		"http://127.1/",
		"http://[::ffff:127.0.0.1]/",
		"http://[::127.0.0.1]/",
		"http://[fe80::1%25eth0]/",
		"http://①②⑦.⓪.⓪.①/",
		"http://ｌｏｃａｌｈｏｓｔ/",
		"http://localhost./",
		"http://example.com/",
		"http://user:pass@8.8.8.8/",
		"http://[]:123",
		"http://:123",
		"http://127.1.1.1:80\\@127.2.2.2:80/",
		"http://127.1.1.1:80#\\@127.2.2.2:80/",
		"gopher://127.0.0.1:6379/_INFO",
		"http://425.510.425.510/",
		"http://8.8.8.8.:99999/",
		"HTTP://%E2%91%A0%E2%91%A1%E2%91%A6.%E2%93%AA.%E2%93%AA.%E2%91%A0/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		resolver := staticResolver("127.0.0.1")
		g := &Guard{Resolver: resolver}
		u, err := g.CheckURL(t.Context(), raw)
		if err != nil {
			if u != nil {
				t.Fatalf("CheckURL(%q) returned a URL with error %v", raw, err)
			}
			if !errors.Is(err, ErrBlocked) && !errors.Is(err, ErrInvalidURL) && !errors.Is(err, ErrUnresolvable) {
				t.Fatalf("CheckURL(%q): error of no known kind: %v", raw, err)
			}
			if err.Error() == "" {
				t.Fatalf("CheckURL(%q): empty error message", raw)
			}
			return
		}
		if n := len(resolver.lookups()); n != 0 {
			t.Fatalf("CheckURL(%q) passed after %d lookups answered 127.0.0.1", raw, n)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
			t.Fatalf("CheckURL(%q) passed scheme %q user %v", raw, u.Scheme, u.User)
		}
		host := u.Hostname()
		ip, ok := ParseHostIP(host)
		if !ok {
			mapped, err := idna.Lookup.ToASCII(host)
			if err != nil {
				t.Fatalf("CheckURL(%q) passed host %q that IDNA rejects: %v", raw, host, err)
			}
			ip, ok = ParseHostIP(mapped)
		}
		if !ok {
			t.Fatalf("CheckURL(%q) passed host %q, which is not an IP literal, without DNS", raw, host)
		}
		if err := Classify(ip); err != nil {
			t.Fatalf("CheckURL(%q) passed %v: %v", raw, ip, err)
		}
		// What net/http would see must parse to the same host.
		again, err := url.Parse(u.String())
		if err != nil || again.Hostname() != host {
			t.Fatalf("CheckURL(%q): URL does not round-trip: %q, %v", raw, u.String(), err)
		}
	})
}

// FuzzParseHostIP checks ParseHostIP against netip.ParseAddr: whatever the
// standard parser accepts, ParseHostIP must read as the same address, and
// whatever ParseHostIP accepts as IPv4 must be at most four parts.
func FuzzParseHostIP(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "8.8.8.8", "0.0.0.0", "255.255.255.255", "1.2.3.4.",
		"2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "017700000001",
		"127.1", "10.1.1", "0177.0x0.0x0.0x1", "0x",
		"425.510.425.510", "7147006462", "0x41414141A9FEA9FE",
		"::1", "[::1]", "[fe80::1%25eth0]", "::ffff:127.0.0.1", "1.2.3.4%eth0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseHostIP(s)
		if want, err := netip.ParseAddr(s); err == nil {
			if !ok || got != want {
				t.Fatalf("ParseHostIP(%q) = %v, %v; netip.ParseAddr = %v", s, got, ok, want)
			}
		}
		if !ok {
			return
		}
		if !got.IsValid() {
			t.Fatalf("ParseHostIP(%q) = invalid address, true", s)
		}
		if got.Is4() && strings.Count(strings.TrimSuffix(s, "."), ".") > 3 {
			t.Fatalf("ParseHostIP(%q) = %v from more than four parts", s, got)
		}
	})
}
