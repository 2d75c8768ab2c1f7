package pluginapi

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/svc-gateway/svc/pkg/pluginapi/proto"
)

// EmailPlugin is the go-plugin glue of the email slot.
type EmailPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl EmailTransport
}

var _ plugin.GRPCPlugin = (*EmailPlugin)(nil)

// GRPCServer registers Impl on the plugin's gRPC server.
func (p *EmailPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterEmailServer(s, &emailServer{impl: p.Impl})
	return nil
}

// GRPCClient returns an EmailTransport that calls the plugin.
func (p *EmailPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &emailClient{client: pb.NewEmailClient(c)}, nil
}

type emailClient struct{ client pb.EmailClient }

var _ EmailTransport = (*emailClient)(nil)

func (c *emailClient) Send(ctx context.Context, msg EmailMessage) (string, error) {
	res, err := c.client.Send(ctx, &pb.EmailMessage{From: msg.From, To: msg.To, Subject: msg.Subject, Text: msg.Text, Html: msg.HTML})
	if err != nil {
		return "", fromStatus(ctx, err)
	}
	return res.GetId(), nil
}

type emailServer struct {
	pb.UnimplementedEmailServer
	impl EmailTransport
}

func (s *emailServer) Send(ctx context.Context, m *pb.EmailMessage) (*pb.SendResult, error) {
	id, err := s.impl.Send(ctx, EmailMessage{From: m.GetFrom(), To: m.GetTo(), Subject: m.GetSubject(), Text: m.GetText(), HTML: m.GetHtml()})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.SendResult{Id: id}, nil
}
