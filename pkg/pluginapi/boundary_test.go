package pluginapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath string
	Deps       []string
}

// outsidePkg lists each package of module under pkg/ or plugins/ that
// depends on a package of the module outside pkg/ (internal/, cmd/,
// another plugin), as "importer → dependency"; a plugin's own packages
// (plugins/<name>/...) are its to use. Plugins are built against pkg/
// alone so that a third party could write any of them; pkg/ keeps off
// internal/ so that it can be imported at all. The standard library and
// other modules are not svc's to fence.
func outsidePkg(module string, pkgs []listed) []string {
	var bad []string
	public := module + "/pkg/"
	for _, p := range pkgs {
		own := pluginRoot(module, p.ImportPath)
		for _, d := range p.Deps {
			if !strings.HasPrefix(d, module+"/") || strings.HasPrefix(d, public) {
				continue
			}
			if own != "" && (d == own || strings.HasPrefix(d, own+"/")) {
				continue
			}
			bad = append(bad, p.ImportPath+" → "+d)
		}
	}
	return bad
}

// pluginRoot is the plugin an import path of module belongs to
// (module/plugins/<name>), or "" when it is no plugin's.
func pluginRoot(module, path string) string {
	rest, ok := strings.CutPrefix(path, module+"/plugins/")
	if !ok || rest == "" {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return module + "/plugins/" + name
}

// Only go list knows what a build of these packages pulls in (build tags,
// transitive imports), one platform at a time: each platform svc's files
// are written for is listed. Test files may use the module's test helpers
// and are not part of what a third party builds.
func TestPluginsAndPkgImportOnlyPkg(t *testing.T) {
	module := goList(t, "", "list", "-m")
	for _, goos := range []string{"linux", "darwin", "windows"} {
		out := goList(t, goos, "list", "-json=ImportPath,Deps", module+"/pkg/...", module+"/plugins/...")
		var pkgs []listed
		dec := json.NewDecoder(strings.NewReader(out))
		for {
			var p listed
			err := dec.Decode(&p)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			pkgs = append(pkgs, p)
		}
		var plugins int
		for _, p := range pkgs {
			if strings.HasPrefix(p.ImportPath, module+"/plugins/") {
				plugins++
			}
		}
		require.GreaterOrEqual(t, plugins, 6, "go list found the plugins for %s", goos)
		assert.Empty(t, outsidePkg(module, pkgs), "on %s, packages under plugins/ and pkg/ import only pkg/ of this module", goos)
	}
}

func TestOutsidePkgNamesEachCrossing(t *testing.T) {
	const m = "example.com/svc"
	got := outsidePkg(m, []listed{
		{ImportPath: m + "/plugins/a", Deps: []string{"context", m + "/pkg/som", "golang.org/x/net/html", m + "/internal/errs"}},
		{ImportPath: m + "/pkg/som", Deps: []string{m + "/internal/errs", m + "/pkg/netguard", m + "/pkgx"}},
		{ImportPath: m + "/plugins/b", Deps: []string{m + "/plugins/a", m + "/cmd/svc", "example.com/svcother/internal/x"}},
		// A plugin's own packages are its own; another plugin's are not,
		// nor is a plugin whose name starts alike.
		{ImportPath: m + "/plugins/c", Deps: []string{m + "/plugins/c/impl", m + "/plugins/c/impl/sub", m + "/plugins/a/impl", m + "/plugins/cc/impl"}},
		{ImportPath: m + "/plugins/c/impl", Deps: []string{m + "/plugins/c/impl/sub", m + "/plugins/c", m + "/internal/errs"}},
	})
	assert.Equal(t, []string{
		m + "/plugins/a → " + m + "/internal/errs",
		m + "/pkg/som → " + m + "/internal/errs",
		m + "/pkg/som → " + m + "/pkgx",
		m + "/plugins/b → " + m + "/plugins/a",
		m + "/plugins/b → " + m + "/cmd/svc",
		m + "/plugins/c → " + m + "/plugins/a/impl",
		m + "/plugins/c → " + m + "/plugins/cc/impl",
		m + "/plugins/c/impl → " + m + "/internal/errs",
	}, got)
}

// goList runs the go command with args, for the platform goos ("" for
// this one), and returns what it printed.
func goList(t *testing.T, goos string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("go", args...)
	if goos != "" {
		cmd.Env = append(os.Environ(), "GOOS="+goos)
	}
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go %s: %s", strings.Join(args, " "), stderr.String())
	return strings.TrimSpace(string(out))
}

// TestPkgBuildsOnEachPlatform: a third party builds its plugin on pkg/,
// on any platform svc's files are written for.
func TestPkgBuildsOnEachPlatform(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pkg/ for each platform")
	}
	module := goList(t, "", "list", "-m")
	for _, goos := range []string{"linux", "darwin", "windows"} {
		goList(t, goos, "build", module+"/pkg/...")
	}
}
