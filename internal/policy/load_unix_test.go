//go:build unix

package policy_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/policy"
)

// A policy file that is a pipe or a device is refused at once: a reload
// neither waits on a pipe nor reads a device without end.
func TestAPolicyFileThatIsNoRegularFileIsRefused(t *testing.T) {
	for name, make := range map[string]func(path string) error{
		"a pipe":   func(path string) error { return syscall.Mkfifo(path, 0o600) },
		"a device": func(path string) error { return os.Symlink("/dev/zero", path) },
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "rules.yaml")
		require.NoError(t, make(path))
		_, err := policy.Load(dir)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "rules.yaml: not a regular file", name)
	}
}
