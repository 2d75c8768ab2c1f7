package netguard

import (
	"bufio"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/shareddata"
)

// ssrfDataDir returns the shared SSRF corpus folder, ../shared/data/ssrf
// beside the module root. The data is not copied into the repository, so the
// tests that need it skip loudly when it is absent.
func ssrfDataDir(t *testing.T) string {
	return shareddata.Dir(t, "ssrf")
}

// readURLs returns the non-comment, non-blank lines of a corpus file.
func readURLs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, path)
	return out
}

// corpusResolver is the stub DNS of SECURITY.md 2.4. Unknown names answer
// with a private address so that an unexpected name can never pass.
func corpusResolver() *stubResolver {
	var mu sync.Mutex
	rebinds := 0
	return &stubResolver{fn: func(host string) ([]netip.Addr, error) {
		switch {
		case host == "localtest.me", host == "spoofed.burpcollaborator.net",
			host == "127.0.0.1.nip.io", strings.HasSuffix(host, ".127.0.0.1.nip.io"),
			host == "cname-to-localhost.test", host == "localhost":
			return addrs("127.0.0.1"), nil
		case host == "10.0.0.1.nip.io", host == "private-a.test":
			return addrs("10.0.0.1"), nil
		case host == "private-aaaa.test":
			return addrs("::1"), nil
		case host == "169.254.169.254.nip.io", host == "instance-data", host == "metadata",
			host == "metadata.google.internal":
			return addrs("169.254.169.254"), nil
		case host == "mixed-a.test":
			return addrs("8.8.8.8", "127.0.0.1"), nil
		case host == "rebind.test":
			// A rebinding server answers safely first, then with loopback.
			mu.Lock()
			defer mu.Unlock()
			rebinds++
			if rebinds%2 == 1 {
				return addrs("8.8.8.8"), nil
			}
			return addrs("127.0.0.1"), nil
		}
		return addrs("10.255.0.1"), nil
	}}
}

// expectedKind says, from the text of a block.txt line alone, which sentinel
// CheckURL must return: ErrInvalidURL for a scheme other than http(s),
// userinfo, or an empty host (classes S, U, P in the file), else ErrBlocked
// (classes L and N).
func expectedKind(line string) error {
	rest, ok := strings.CutPrefix(line, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(line, "https://")
	}
	if !ok {
		return ErrInvalidURL
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if strings.Contains(authority, "@") {
		return ErrInvalidURL
	}
	host := authority
	if i := strings.LastIndex(authority, ":"); i >= 0 && !strings.HasSuffix(authority, "]") {
		host = authority[:i]
	}
	if host == "" || host == "[]" {
		return ErrInvalidURL
	}
	return ErrBlocked
}

func TestCorpusBlock(t *testing.T) {
	t.Parallel()
	lines := readURLs(t, filepath.Join(ssrfDataDir(t), "block.txt"))
	resolver := corpusResolver()
	g := &Guard{Resolver: resolver}
	for _, line := range lines {
		want := expectedKind(line)
		u, err := g.CheckURL(t.Context(), line)
		if line == "http://rebind.test/" {
			// The save-time check sees the first, safe answer; the rebound
			// answer is refused, and at dial time Control refuses the address
			// the dialer would use.
			require.NoError(t, err, "first answer of rebind.test is public")
			u, err = g.CheckURL(t.Context(), line)
			require.ErrorIs(t, g.Control("tcp4", "127.0.0.1:80", nil), ErrBlocked)
		}
		require.Error(t, err, "block.txt line passed CheckURL: %s", line)
		assert.Nil(t, u, line)
		assert.ErrorIs(t, err, want, "%s: %v", line, err)
		assert.NotEmpty(t, err.Error())

		parsed, perr := url.Parse(line)
		if perr != nil {
			continue
		}
		// An IP literal line must be refused as a destination, and the same
		// address must be refused at dial time.
		if ip, ok := ParseHostIP(parsed.Hostname()); ok && want == ErrBlocked {
			var be *BlockedError
			require.ErrorAs(t, err, &be, line)
			assert.NotEmpty(t, be.Class, line)
			addr := net.JoinHostPort(ip.String(), "80")
			assert.ErrorIs(t, g.Control("tcp", addr, nil), ErrBlocked, "Control(%s) for %s", addr, line)
		}
		// Redirect targets are re-checked on every hop; each one must be
		// refused on its own.
		if to := parsed.Query().Get("to"); to != "" {
			_, err := g.CheckURL(t.Context(), to)
			assert.Error(t, err, "redirect target %s of %s", to, line)
		}
	}
	t.Logf("%d block.txt URLs refused; names resolved through the stub: %v", len(lines), resolver.lookups())
}

func TestCorpusAllow(t *testing.T) {
	t.Parallel()
	lines := readURLs(t, filepath.Join(ssrfDataDir(t), "allow.txt"))
	resolver := staticResolver("127.0.0.1")
	g := &Guard{Resolver: resolver}
	for _, line := range lines {
		u, err := g.CheckURL(t.Context(), line)
		require.NoError(t, err, line)
		ip, ok := ParseHostIP(u.Hostname())
		require.True(t, ok, line)
		port := u.Port()
		if port == "" {
			port = "80"
		}
		_, perr := strconv.ParseUint(port, 10, 16)
		require.NoError(t, perr)
		assert.NoError(t, g.Control("tcp", net.JoinHostPort(ip.String(), port), nil), line)
	}
	assert.Empty(t, resolver.lookups(), "allow.txt holds only literals")
}
