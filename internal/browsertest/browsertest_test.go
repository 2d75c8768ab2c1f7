package browsertest_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/browsertest"
)

func TestFindHonoursTheVariable(t *testing.T) {
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	t.Setenv(browsertest.EnvBrowser, sh)
	got, err := browsertest.Find()
	require.NoError(t, err)
	assert.Equal(t, sh, got)

	t.Setenv(browsertest.EnvBrowser, "sh")
	got, err = browsertest.Find()
	require.NoError(t, err)
	assert.Equal(t, sh, got, "a name is looked up on PATH")

	t.Setenv(browsertest.EnvBrowser, "/nonexistent/chromium")
	_, err = browsertest.Find()
	assert.ErrorContains(t, err, browsertest.EnvBrowser, "a wrong path is reported, not passed over")
}

func TestFindLooksOnPath(t *testing.T) {
	t.Setenv(browsertest.EnvBrowser, "")
	t.Setenv("PATH", t.TempDir())
	_, err := browsertest.Find()
	assert.ErrorIs(t, err, browsertest.ErrNoBrowser)
}
