//go:build !unix

package main

import "os"

// newProfile makes a profile folder for the browser in parent (the
// system's temporary folder when empty); release removes it.
func newProfile(parent string) (dir string, release func(), err error) {
	dir, err = os.MkdirTemp(parent, profilePrefix)
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// sweepProfiles does nothing where no lock tells a folder in use from one
// left behind.
func sweepProfiles(string) {}
