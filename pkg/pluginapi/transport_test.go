package pluginapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// tapConn keeps a copy of what one side wrote.
type tapConn struct {
	net.Conn
	mu      sync.Mutex
	written bytes.Buffer
}

func (c *tapConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.written.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *tapConn) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.written.Bytes())
}

type tapListener struct {
	net.Listener
	conns chan *tapConn
}

func (l *tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	t := &tapConn{Conn: c}
	l.conns <- t
	return t, nil
}

// pings counts the HTTP/2 PING frames in what one side wrote.
func pings(t *testing.T, written []byte) int {
	t.Helper()
	written = bytes.TrimPrefix(written, []byte(http2.ClientPreface))
	fr := http2.NewFramer(nil, bytes.NewReader(written))
	fr.SetMaxReadFrameSize(1 << 24)
	n := 0
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return n
		}
		require.NoError(t, err)
		if _, ok := f.(*http2.PingFrame); ok {
			n++
		}
	}
}

// callsPings makes chat calls between a plugin server and svc's client with
// the given options and counts the PINGs each side sent.
func callsPings(t *testing.T, srvOpts []grpc.ServerOption, dialOpts []grpc.DialOption) (fromClient, fromServer int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tl := &tapListener{Listener: ln, conns: make(chan *tapConn, 1)}
	srv := grpc.NewServer(srvOpts...)
	require.NoError(t, (&pluginapi.ProviderPlugin{Impl: &fakeProvider{}}).GRPCServer(nil, srv))
	go func() { _ = srv.Serve(tl) }()
	defer srv.Stop()

	var client *tapConn
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		client = &tapConn{Conn: c}
		return client, nil
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dialer)}, dialOpts...)
	cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), opts...)
	require.NoError(t, err)
	defer cc.Close()
	raw, err := (&pluginapi.ProviderPlugin{}).GRPCClient(context.Background(), nil, cc)
	require.NoError(t, err)
	p := raw.(pluginapi.Provider)
	for range 5 {
		_, err := p.Chat(context.Background(), pluginapi.ChatRequest{Body: bytes.Repeat([]byte("x"), 2000)})
		require.NoError(t, err)
	}
	server := <-tl.conns
	return pings(t, client.bytes()), pings(t, server.bytes())
}

// gRPC's dynamic flow-control windows probe the bandwidth with PINGs after
// data arrives; between svc and its plugin each probe would wake the other
// process. The options svc and the plugins use send none.
func TestPluginConnectionsSendNoBandwidthProbes(t *testing.T) {
	c, s := callsPings(t, nil, nil)
	require.Positive(t, c+s, "gRPC's defaults probe with PINGs; without them this test checks nothing")

	c, s = callsPings(t, pluginapi.ServerOptions(), pluginapi.DialOptions())
	assert.Zero(t, c, "PINGs from svc's side")
	assert.Zero(t, s, "PINGs from the plugin's side")
}
