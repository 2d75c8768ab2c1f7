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

func TestUpstreamTransportSendsAgainWhenTheUpstreamClosedAKeptConnection(t *testing.T) {
	s := newCountingServer(t, false, echoBody)
	tr := testTransport(s)
	send(t, tr, http.MethodPost, s.URL+"/a", "one")
	s.CloseClientConnections()
	// The kept connection is seen closed before it is written to, or
	// fails at once and the request goes again on a new one.
	_, got := send(t, tr, http.MethodPost, s.URL+"/b", "two")
	assert.Equal(t, "POST /b two", got)
	assert.Equal(t, int32(2), s.conns.Load())
}

func TestUpstreamConnAliveSeesTheUpstreamClose(t *testing.T) {
	s := newCountingServer(t, false, echoBody)
	tr := testTransport(s)
	send(t, tr, http.MethodGet, s.URL+"/", "")
	tr.mu.Lock()
	var pc *upstreamConn
	for _, list := range tr.idle {
		pc = list[0]
	}
	tr.mu.Unlock()
	require.NotNil(t, pc)
	assert.True(t, pc.alive(), "an idle connection the upstream keeps is alive")
	s.CloseClientConnections()
	require.Eventually(t, func() bool { return !pc.alive() }, 5*time.Second, time.Millisecond,
		"a connection the upstream closed is not alive")
}
