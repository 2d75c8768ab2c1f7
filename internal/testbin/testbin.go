// Package testbin builds svc's own programs for tests that run them as real
// processes: bin/svc and every plugin, in a folder laid out like `make
// build`'s bin/.
//
// The folder is shared by every test binary of the checkout (under the
// user's cache folder, one per module root) and built under a file lock:
// the first package to need it links the programs, and the go command finds
// them up to date for the rest, so `go test ./...` links them once instead
// of once per package. Sources that changed are linked again, as by any go
// build.
package testbin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once     sync.Once
	dir      string
	buildErr error
	// private is true when dir is this process's own, removed by Main.
	private bool
)

// Main runs the package's tests, then cleanups (which may stop processes
// started from the built binaries), then removes what was built when it
// is not the shared folder. Call it from TestMain: os.Exit(testbin.Main(m)).
func Main(m *testing.M, cleanups ...func()) int {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if private && dir != "" {
		_ = os.RemoveAll(dir)
	}
	return code
}

// SVC returns the path of the svc binary.
func SVC(tb testing.TB) string {
	return filepath.Join(build(tb), "svc")
}

// PluginDir returns the folder holding every plugin as svc-<name>, ready
// for SVC_PLUGIN_DIR.
func PluginDir(tb testing.TB) string {
	return filepath.Join(build(tb), "plugins")
}

func build(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { dir, buildErr = buildAll() })
	if buildErr != nil {
		tb.Fatalf("build svc and its plugins: %v", buildErr)
	}
	return dir
}

// buildAll compiles cmd/svc and plugins/* into the checkout's shared
// folder or, when the user has no cache folder, into a new temporary one.
func buildAll() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		out, err := os.MkdirTemp("", "svc-testbin-")
		if err != nil {
			return "", err
		}
		private = true
		return out, buildInto(root, out)
	}
	sum := sha256.Sum256([]byte(root))
	out := filepath.Join(cache, "svc-testbin", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(out, 0o700); err != nil {
		return "", err
	}
	unlock, err := lock(filepath.Join(out, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	return out, buildInto(root, out)
}

// buildInto builds svc and the plugins in one go command, which links them
// in parallel and leaves alone those already up to date. The plugins are
// reached as plugins/svc-<name>, links to the binaries beside svc.
func buildInto(root, out string) error {
	plugins, err := filepath.Glob(filepath.Join(root, "plugins", "*", "main.go"))
	if err != nil {
		return err
	}
	pluginDir := filepath.Join(out, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return err
	}
	// The go command's work folder beside the binaries, so that it renames
	// each new binary into place instead of copying over it.
	work := filepath.Join(out, "tmp")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return err
	}
	pkgs := []string{"./cmd/svc"}
	for _, main := range plugins {
		pkgs = append(pkgs, "./plugins/"+filepath.Base(filepath.Dir(main)))
	}
	// -trimpath as `make build`: the compiled packages it left in the build
	// cache serve here too. No version control stamp: a commit or an edited
	// test alone does not make the binaries out of date.
	args := []string{"build", "-trimpath", "-buildvcs=false", "-o", out + string(filepath.Separator)}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOTMPDIR="+work)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, stderr.String())
	}
	for _, p := range pkgs[1:] {
		name := filepath.Base(p)
		if err := hardLink(filepath.Join(out, name), filepath.Join(pluginDir, "svc-"+name)); err != nil {
			return err
		}
	}
	return nil
}

// hardLink makes link name the file target, unless it already does. A hard
// link, not a symbolic one: a plugin's process is then named svc-<name>
// (its /proc/<pid>/exe), as from `make build`.
func hardLink(target, link string) error {
	t, err := os.Stat(target)
	if err != nil {
		return err
	}
	if l, err := os.Lstat(link); err == nil && os.SameFile(t, l) {
		return nil
	}
	_ = os.Remove(link)
	return os.Link(target, link)
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the svc module")
	}
	return filepath.Dir(mod), nil
}
