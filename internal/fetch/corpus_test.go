package fetch

import (
	"bufio"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/netguard"

	"github.com/svc-gateway/svc/internal/shareddata"
)

// ssrfDataDir returns ../shared/data/ssrf beside the module root. The cases
// are read in place, never copied into the repository; without them the
// corpus tests skip and say so.
func ssrfDataDir(t *testing.T) string {
	return shareddata.Dir(t, "ssrf")
}

// readURLs returns the non-comment, non-blank lines of a corpus file.
func readURLs(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(ssrfDataDir(t), name))
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, name)
	return out
}

// wantKind is what a block.txt line must give: 400 when the URL does not
// parse or names no host, 403 for everything else.
func wantKind(line string) errs.Kind {
	u, err := url.Parse(line)
	if err != nil || (u.Scheme == "http" || u.Scheme == "https") && u.User == nil && u.Hostname() == "" {
		return errs.Invalid
	}
	return errs.Forbidden
}

// TestCorpusBlock fetches every block.txt line and requires a 403 (400 for
// what does not parse), with no dial to anything but the public stand-in.
// It runs twice: as shipped, and with the URL check before each request
// turned off, which shows that the dial-time check refuses every case on
// its own (names that resolve inside, numeric encodings net/http hands to
// the dialer as names, IDNA forms, redirect targets).
func TestCorpusBlock(t *testing.T) {
	lines := readURLs(t, "block.txt")
	for _, mode := range []struct {
		name     string
		precheck bool
	}{{"url-and-dial", true}, {"dial-only", false}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			// With the URL check off there is a single lookup per hop, so
			// rebind.test must rebind on the first one to be an attack.
			f, tn, _ := testFetcher(t, Options{Resolver: corpusResolver(!mode.precheck)})
			f.precheck = mode.precheck
			for _, line := range lines {
				res, err := f.Get(withTimeout(t), line, nil)
				require.Nil(t, res, "block.txt line was fetched: %s", line)
				e := requireKind(t, err, wantKind(line), "")
				assert.NotEmpty(t, e.Public, line)
				assert.NotContains(t, e.Public, "10.255.0.1", "resolved address leaked for %s", line)
				for _, d := range tn.recorded() {
					ap, perr := netip.ParseAddrPort(d)
					require.NoError(t, perr, d)
					require.NoError(t, netguard.Classify(ap.Addr().Unmap()),
						"%s: dialed non-public %s", line, d)
					assert.Equal(t, publicIP+":80", d, "%s: only the redirector may be dialed", line)
				}
				if strings.Contains(line, "redirector.test/r?") && !strings.Contains(line, "to=file") && !strings.Contains(line, "to=gopher") {
					assert.Equal(t, "private_address", e.Code, line)
				}
			}
			t.Logf("%d block.txt URLs refused (%s)", len(lines), mode.name)
		})
	}
}

// TestCorpusAllow fetches every allow.txt address. The guard must let each
// through to the dialer with exactly that address; the test network then
// delivers it to a loopback listener, never to the address itself.
func TestCorpusAllow(t *testing.T) {
	t.Parallel()
	lines := readURLs(t, "allow.txt")
	f, tn, _ := testFetcher(t, Options{})
	for _, line := range lines {
		u, err := url.Parse(line)
		require.NoError(t, err)
		res, err := f.Get(withTimeout(t), line, nil)
		require.NoError(t, err, line)
		assert.Equal(t, 200, res.Status, line)
		ip := netip.MustParseAddr(strings.Trim(u.Hostname(), "[]"))
		port := u.Port()
		if port == "" {
			port = "80"
		}
		assert.Equal(t, []string{netip.AddrPortFrom(ip, mustPort(t, port)).String()}, tn.recorded(), line)
	}
	t.Logf("%d allow.txt URLs reached through the guard", len(lines))
}

func mustPort(t *testing.T, p string) uint16 {
	t.Helper()
	ap, err := netip.ParseAddrPort("0.0.0.0:" + p)
	require.NoError(t, err)
	return ap.Port()
}
