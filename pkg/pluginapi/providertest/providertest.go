// Package providertest runs a provider's tests in both of the modes svc
// can run it in: inside svc's process, and as a plugin behind gRPC.
package providertest

import (
	"context"
	"math"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// Modes runs f as two subtests: "in_process" with p itself, and "plugin"
// with p behind a plugin connection, so that every request, answer and
// error crosses the gRPC codec and the status mapping, and non-streamed
// chats the shared ChatCalls stream, as they do between svc and a plugin
// process. Tests written against Modes show that the two modes behave
// alike.
func Modes(t *testing.T, p pluginapi.Provider, f func(t *testing.T, p pluginapi.Provider)) {
	t.Helper()
	t.Run("in_process", func(t *testing.T) { f(t, p) })
	t.Run("plugin", func(t *testing.T) { f(t, Plugin(t, p)) })
}

// Plugin serves p as a plugin does and returns svc's side of the
// connection; both end with t.
//
// The connection is go-plugin's as svc makes it, without the process and
// the TLS around it: a gRPC server with pluginapi.ServerOptions and the
// ProviderPlugin's service, on a unix socket, and a client with go-plugin's
// dial options followed by pluginapi.DialOptions, whose Provider is the one
// ProviderPlugin dispenses. (go-plugin's TestPluginGRPCConn would leave out
// svc's options, and with them the message limits a plugin connection
// has.)
func Plugin(t testing.TB, p pluginapi.Provider) pluginapi.Provider {
	t.Helper()
	// A short path: a unix socket's path has a limit of about 100 bytes,
	// which t.TempDir() under a long test name passes.
	dir, err := os.MkdirTemp("", "providertest")
	if err != nil {
		t.Fatalf("providertest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	lis, err := net.Listen("unix", filepath.Join(dir, "plugin.sock"))
	if err != nil {
		t.Fatalf("providertest: listen: %v", err)
	}
	srv := grpc.NewServer(pluginapi.ServerOptions()...)
	if err := (&pluginapi.ProviderPlugin{Impl: p}).GRPCServer(nil, srv); err != nil {
		t.Fatalf("providertest: register: %v", err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// go-plugin's own defaults, which svc's options then override
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(math.MaxInt32)),
	}
	conn, err := grpc.NewClient("unix://"+lis.Addr().String(), append(opts, pluginapi.DialOptions()...)...)
	if err != nil {
		t.Fatalf("providertest: dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() }) // runs before srv.Stop: calls end as svc closing a plugin ends them
	raw, err := (&pluginapi.ProviderPlugin{}).GRPCClient(context.Background(), nil, conn)
	if err != nil {
		t.Fatalf("providertest: dispense: %v", err)
	}
	return raw.(pluginapi.Provider)
}
