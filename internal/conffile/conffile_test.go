//go:build unix

package conffile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/conffile"
)

func TestReadsARegularFileWithinItsBound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(path, []byte("providers: []\n"), 0o600))
	b, err := conffile.Read(path, 14)
	require.NoError(t, err)
	assert.Equal(t, "providers: []\n", string(b))

	_, err = conffile.Read(path, 13)
	var tooLarge *conffile.TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, "read "+path+": larger than 13 bytes", err.Error())

	link := filepath.Join(dir, "link.yaml")
	require.NoError(t, os.Symlink(path, link))
	_, err = conffile.Read(link, 1<<20)
	assert.NoError(t, err, "a link to a regular file is read")

	_, err = conffile.Read(filepath.Join(dir, "missing.yaml"), 1<<20)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// A device, a directory or a pipe is refused at once: none is read
// without end, and a pipe nobody writes to is not waited on.
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	require.NoError(t, os.Symlink("/dev/zero", zero))
	for _, path := range []string{fifo, zero, dir} {
		_, err := conffile.Read(path, 1<<20)
		assert.True(t, errors.Is(err, conffile.ErrNotRegular), "%s: %v", strings.TrimPrefix(path, dir), err)
	}
}
