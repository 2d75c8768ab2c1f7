//go:build !unix

package ledger

import (
	"os"
	"path/filepath"
)

// lockDir opens the lock file; without flock, two processes on one
// database are not detected on this system.
func lockDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o640)
}
