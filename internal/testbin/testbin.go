// Package testbin builds svc's own programs for tests that run them as real
// processes: bin/svc and every plugin, once per test binary, into a
// temporary folder laid out like `make build`'s bin/.
package testbin

import (
	"bytes"
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
)

// Main runs the package's tests, then cleanups (which may stop processes
// started from the built binaries), then removes what was built. Call it
// from TestMain: os.Exit(testbin.Main(m)).
func Main(m *testing.M, cleanups ...func()) int {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if dir != "" {
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

// buildAll compiles cmd/svc and plugins/* into a new temporary folder.
func buildAll() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out, err := os.MkdirTemp("", "svc-testbin-")
	if err != nil {
		return "", err
	}
	if err := buildInto(root, out); err != nil {
		_ = os.RemoveAll(out)
		return "", err
	}
	return out, nil
}

func buildInto(root, out string) error {
	plugins, err := filepath.Glob(filepath.Join(root, "plugins", "*", "main.go"))
	if err != nil {
		return err
	}
	pluginDir := filepath.Join(out, "plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		return err
	}
	if err := goBuild(root, filepath.Join(out, "svc"), "./cmd/svc"); err != nil {
		return err
	}
	for _, main := range plugins {
		name := filepath.Base(filepath.Dir(main))
		if err := goBuild(root, filepath.Join(pluginDir, "svc-"+name), "./plugins/"+name); err != nil {
			return err
		}
	}
	return nil
}

func goBuild(root, output, pkg string) error {
	cmd := exec.Command("go", "build", "-o", output, pkg)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, stderr.String())
	}
	return nil
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
