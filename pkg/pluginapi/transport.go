package pluginapi

import "google.golang.org/grpc"

// Flow-control windows of the gRPC connection between svc and a plugin.
// They are fixed because gRPC's dynamic windows estimate the bandwidth with
// a PING after data arrives: between two processes on one machine, each
// probe wakes the other side to answer it, twice per call and on the
// call's path. The windows are large enough that a chat answer or a stream
// of chunks never waits for a window update.
const (
	streamWindow = 1 << 20
	connWindow   = 4 << 20
)

// maxMessage is the largest message either side of a plugin connection
// sends or receives: room for a request body as large as an operator may
// let through and for provider-openai's largest answers (32 MiB for chat,
// 60 MiB for embeddings), where gRPC's default would refuse anything over
// 4 MiB.
//
// An embeddings answer gets no more: gRPC holds a message in several copies
// while it decodes one, so each MiB allowed here may cost svc a few.
// provider-openai refuses a larger embeddings answer in words the client
// can act on (see its maxEmbeddingsResponseBytes).
const maxMessage = 64 << 20

// DialOptions are the gRPC options of svc's side of a plugin connection
// (go-plugin's ClientConfig.GRPCDialOptions).
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithStaticStreamWindowSize(streamWindow), grpc.WithStaticConnWindowSize(connWindow),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
	}
}

// ServerOptions are the gRPC options of a plugin's server; the Serve
// helpers use them.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.StaticStreamWindowSize(streamWindow), grpc.StaticConnWindowSize(connWindow),
		grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage),
	}
}

// newGRPCServer is go-plugin's server constructor with ServerOptions added.
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, ServerOptions()...)...)
}
