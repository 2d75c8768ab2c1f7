// Package shareddata finds the real-world test data that lives beside the
// repository, in ../shared/data (web pages, SSRF address cases, labelled
// email): tests read it in place, and skip, saying so, where it is absent.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns ../shared/data/<parts...> beside the module root (the folder
// holding go.mod above the test's working directory). Without it the test
// is skipped with a message naming what did not run.
func Dir(tb testing.TB, parts ...string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skipf("SKIPPED: no go.mod above %s: the tests that need ../shared/data did not run", dir)
		}
		dir = parent
	}
	data := filepath.Join(append([]string{dir, "..", "shared", "data"}, parts...)...)
	if _, err := os.Stat(data); err != nil {
		tb.Skipf("SKIPPED: %s not found: the tests that read it did not run", data)
	}
	return data
}
