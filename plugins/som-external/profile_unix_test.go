//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A profile left by a plugin that was killed (its lock file there, but
// locked by nobody: the kernel let go of it) is swept; one in use, and one
// still being made (no lock file yet), stay.
func TestSweepRemovesOnlyAbandonedProfiles(t *testing.T) {
	parent := t.TempDir()
	inUse, release, err := newProfile(parent)
	require.NoError(t, err)
	defer release()
	abandoned := filepath.Join(parent, profilePrefix+"killed")
	require.NoError(t, os.Mkdir(abandoned, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(abandoned, profileLock), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(abandoned, "Cookies"), []byte("x"), 0o600))
	beingMade := filepath.Join(parent, profilePrefix+"new")
	require.NoError(t, os.Mkdir(beingMade, 0o700))

	sweepProfiles(parent)
	assert.NoDirExists(t, abandoned)
	assert.DirExists(t, inUse)
	assert.DirExists(t, beingMade)

	release()
	assert.NoDirExists(t, inUse, "release removes the profile")
}
