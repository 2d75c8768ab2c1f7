package pluginapi

import (
	"context"
	"errors"
	"io"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/svc-gateway/svc/pkg/pluginapi/proto"
)

// ProviderPlugin is the go-plugin glue of the provider slot. Plugins set Impl
// (ServeProvider does); svc leaves it nil and dispenses a Provider.
type ProviderPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Provider
}

var _ plugin.GRPCPlugin = (*ProviderPlugin)(nil)

// GRPCServer registers Impl on the plugin's gRPC server.
func (p *ProviderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterProviderServer(s, &providerServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a Provider that calls the plugin.
func (p *ProviderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	client := pb.NewProviderClient(c)
	return &providerClient{client: client, calls: &chatCalls{client: client}}, nil
}

// providerClient is the host's side: a Provider over gRPC.
type providerClient struct {
	client pb.ProviderClient
	calls  *chatCalls
}

var _ Provider = (*providerClient)(nil)

func toPBRequest(req ChatRequest) *pb.ChatRequest {
	return &pb.ChatRequest{Body: req.Body, Model: req.Model, IncludeUsage: req.IncludeUsage, RequestId: req.RequestID,
		TraceParent: req.TraceParent, TraceState: req.TraceState}
}

func fromPBUsage(u *pb.Usage) Usage {
	return Usage{PromptTokens: u.GetPromptTokens(), CompletionTokens: u.GetCompletionTokens(), TotalTokens: u.GetTotalTokens(),
		CachedPromptTokens: u.GetCachedPromptTokens(), CacheWriteTokens: u.GetCacheWriteTokens()}
}

func toPBUsage(u Usage) *pb.Usage {
	return &pb.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		CachedPromptTokens: u.CachedPromptTokens, CacheWriteTokens: u.CacheWriteTokens}
}

func (c *providerClient) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	pbReq := toPBRequest(req)
	res, err := c.calls.do(ctx, pbReq)
	if errors.Is(err, errUnary) {
		res, err = c.client.Chat(ctx, pbReq)
		err = fromStatus(ctx, err)
	}
	if err != nil {
		return ChatResponse{}, err
	}
	return ChatResponse{Body: res.GetBody(), Usage: fromPBUsage(res.GetUsage())}, nil
}

func (c *providerClient) StreamChat(ctx context.Context, req ChatRequest, send func(ChatChunk) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream if send fails
	stream, err := c.client.StreamChat(ctx, toPBRequest(req))
	if err != nil {
		return fromStatus(ctx, err)
	}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fromStatus(ctx, err)
		}
		// Chunks the plugin sent before it saw a cancel may still arrive:
		// none goes to send once the caller is gone, as in process.
		if err := ctx.Err(); err != nil {
			return err
		}
		out := ChatChunk{Data: chunk.GetData(), UsageOnly: chunk.GetUsageOnly()}
		if chunk.Usage != nil {
			u := fromPBUsage(chunk.Usage)
			out.Usage = &u
		}
		if err := send(out); err != nil {
			return err
		}
	}
}

func (c *providerClient) Models(ctx context.Context) ([]Model, error) {
	res, err := c.client.Models(ctx, &pb.ModelsRequest{})
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	models := make([]Model, len(res.GetModels()))
	for i, m := range res.GetModels() {
		models[i] = Model{ID: m.GetId(), OwnedBy: m.GetOwnedBy(), Created: m.GetCreated(), Kind: m.GetKind()}
	}
	return models, nil
}

// providerServer is the plugin's side: gRPC calls into a Provider.
type providerServer struct {
	pb.UnimplementedProviderServer
	impl Provider
}

func fromPBRequest(req *pb.ChatRequest) ChatRequest {
	return ChatRequest{Body: req.GetBody(), Model: req.GetModel(), IncludeUsage: req.GetIncludeUsage(), RequestID: req.GetRequestId(),
		TraceParent: req.GetTraceParent(), TraceState: req.GetTraceState()}
}

func (s *providerServer) Chat(ctx context.Context, req *pb.ChatRequest) (*pb.ChatResponse, error) {
	res, err := s.impl.Chat(ctx, fromPBRequest(req))
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ChatResponse{Body: res.Body, Usage: toPBUsage(res.Usage)}, nil
}

func (s *providerServer) StreamChat(req *pb.ChatRequest, stream grpc.ServerStreamingServer[pb.ChatChunk]) error {
	err := s.impl.StreamChat(stream.Context(), fromPBRequest(req), func(c ChatChunk) error {
		msg := &pb.ChatChunk{Data: c.Data, UsageOnly: c.UsageOnly}
		if c.Usage != nil {
			msg.Usage = toPBUsage(*c.Usage)
		}
		return stream.Send(msg)
	})
	return toStatus(err)
}

func (s *providerServer) Models(ctx context.Context, _ *pb.ModelsRequest) (*pb.ModelsResponse, error) {
	models, err := s.impl.Models(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	res := &pb.ModelsResponse{Models: make([]*pb.Model, len(models))}
	for i, m := range models {
		res.Models[i] = &pb.Model{Id: m.ID, OwnedBy: m.OwnedBy, Created: m.Created, Kind: m.Kind}
	}
	return res, nil
}
