package pluginapi

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/svc-gateway/svc/pkg/pluginapi/proto"
)

// PageCompilerPlugin is the go-plugin glue of the page-compiler slot.
type PageCompilerPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl PageCompiler
}

var _ plugin.GRPCPlugin = (*PageCompilerPlugin)(nil)

// GRPCServer registers Impl on the plugin's gRPC server.
func (p *PageCompilerPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPageCompilerServer(s, &compilerServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a PageCompiler that calls the plugin.
func (p *PageCompilerPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &compilerClient{client: pb.NewPageCompilerClient(c)}, nil
}

type compilerClient struct{ client pb.PageCompilerClient }

var _ PageCompiler = (*compilerClient)(nil)

func (c *compilerClient) Compile(ctx context.Context, page Page) ([]byte, error) {
	res, err := c.client.Compile(ctx, &pb.CompileRequest{Url: page.URL, Html: page.HTML, ContentType: page.ContentType})
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	return res.GetSom(), nil
}

type compilerServer struct {
	pb.UnimplementedPageCompilerServer
	impl PageCompiler
}

func (s *compilerServer) Compile(ctx context.Context, req *pb.CompileRequest) (*pb.CompileResponse, error) {
	som, err := s.impl.Compile(ctx, Page{URL: req.GetUrl(), HTML: req.GetHtml(), ContentType: req.GetContentType()})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.CompileResponse{Som: som}, nil
}
