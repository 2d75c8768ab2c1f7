//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
)

// profileLock is the file in a profile folder that its plugin holds locked
// while the folder is in use. The kernel lets go of the lock when the
// process ends, however it ends.
const profileLock = ".svc-lock"

// newProfile makes a profile folder for the browser in parent (the
// system's temporary folder when empty), locked for this process.
// release removes it.
func newProfile(parent string) (dir string, release func(), err error) {
	dir, err = os.MkdirTemp(parent, profilePrefix)
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, profileLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() {
		_ = os.RemoveAll(dir)
		_ = f.Close()
	}, nil
}

// sweepProfiles removes from parent (the system's temporary folder when
// empty) the profile folders that no process holds any more: those of
// page compilers that were killed (with svc, by its parent-death signal)
// before they could remove their own. A folder without the lock file is
// left alone: it may be one being made.
func sweepProfiles(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, profilePrefix+"*"))
	for _, dir := range dirs {
		f, err := os.OpenFile(filepath.Join(dir, profileLock), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(dir)
		}
		_ = f.Close()
	}
}
