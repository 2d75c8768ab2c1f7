package plugins

import (
	"context"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

var _ pluginapi.Embedder = (*provider)(nil)

// Embed calls the plugin's embeddings, restarting a dead process and trying
// once more like Chat. The gRPC client is always an Embedder; a plugin
// without embeddings answers pluginapi.NoEmbeddings through it.
func (p *provider) Embed(ctx context.Context, req pluginapi.EmbedRequest) (pluginapi.EmbedResponse, error) {
	var res pluginapi.EmbedResponse
	err := retry(ctx, p.slot, func(impl pluginapi.Provider) error {
		e, ok := impl.(pluginapi.Embedder)
		if !ok {
			return pluginapi.NoEmbeddings(req.Model)
		}
		var err error
		res, err = e.Embed(ctx, req)
		return err
	})
	return res, err
}
