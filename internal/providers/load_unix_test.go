//go:build unix

package providers

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A providers file that is a pipe, a device or too large is refused at
// once, on a reload as at start: the last good set keeps serving, and
// the next reload of a good file works.
func TestReloadRefusesAFileItCannotReadWhole(t *testing.T) {
	m, _, write := managed(t, twoMocks)
	path := m.o.Path
	replace := func(make func() error) {
		t.Helper()
		require.NoError(t, os.Remove(path))
		require.NoError(t, make())
	}
	for _, c := range []struct {
		name, want string
		make       func() error
	}{
		{"a pipe nobody writes to", "not a regular file", func() error { return syscall.Mkfifo(path, 0o600) }},
		{"a device without end", "not a regular file", func() error { return os.Symlink("/dev/zero", path) }},
		{"a file over the bound", "larger than 1048576 bytes", func() error {
			return os.WriteFile(path, []byte("providers: []\n"+strings.Repeat("#", maxFileSize)), 0o600)
		}},
	} {
		replace(c.make)
		err := m.Reload(context.Background())
		require.Error(t, err, c.name)
		assert.Equal(t, "providers.yaml: cannot be read: "+c.want, err.Error(), c.name)
		assert.False(t, m.Router().Status().OK, c.name)
		assert.Len(t, m.Router().Current().Providers, 2, "%s: the last good set serves", c.name)
	}
	replace(func() error { return nil })
	write("providers:\n  - name: a\n    plugin: mock\n")
	require.NoError(t, m.Reload(context.Background()))
	assert.Len(t, m.Router().Current().Providers, 1)

	replace(func() error { return syscall.Mkfifo(path, 0o600) })
	_, err := Load(context.Background(), ManagerOptions{Path: path, Opener: &fakeOpener{}, Env: testEnv})
	assert.EqualError(t, err, "providers.yaml: cannot be read: not a regular file", "at start too")
}
