//go:build unix && !aix

package pluginapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These rest on the look at an idle connection before its reuse, which
// only these platforms have.

// idleConn is the one connection tr keeps idle.
func idleConn(t *testing.T, tr *UpstreamTransport) *upstreamConn {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, list := range tr.idle {
		require.Len(t, list, 1)
		return list[0]
	}
	t.Fatal("no idle connection")
	return nil
}

func TestUpstreamConnAliveSeesTheUpstreamClose(t *testing.T) {
	s := newCountingServer(t, false, echoBody)
	tr := testTransport(s)
	send(t, tr, http.MethodGet, s.URL+"/", "")
	pc := idleConn(t, tr)
	assert.True(t, pc.alive(), "an idle connection the upstream keeps is alive")
	s.CloseClientConnections()
	require.Eventually(t, func() bool { return !pc.alive() }, 5*time.Second, time.Millisecond,
		"a connection the upstream closed is not alive")
}

// A POST is never sent twice, so it must not be written to a kept
// connection the upstream has closed: the look before the reuse finds it
// closed and the POST goes on a new one.
func TestUpstreamTransportDoesNotWriteToAKeptConnectionTheUpstreamClosed(t *testing.T) {
	s := newCountingServer(t, false, echoBody)
	tr := testTransport(s)
	send(t, tr, http.MethodPost, s.URL+"/a", "one")
	pc := idleConn(t, tr)
	s.CloseClientConnections()
	// Once the close has reached this side, as the look would see it.
	require.Eventually(t, func() bool { return !quiet(pc.raw) }, 5*time.Second, time.Millisecond)
	_, got := send(t, tr, http.MethodPost, s.URL+"/b", "two")
	assert.Equal(t, "POST /b two", got)
	assert.Equal(t, int32(2), s.conns.Load())
}
