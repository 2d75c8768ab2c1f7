package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svc-gateway/svc/pkg/netguard"
	"github.com/svc-gateway/svc/pkg/pluginapi"
	"github.com/svc-gateway/svc/pkg/som"
)

// Compiler is the page-compiler slot: render, then compile what was drawn
// with svc's own compiler.
type Compiler struct {
	Renderer *Renderer
	Proxy    *GuardProxy
	Guard    *netguard.Guard
}

var _ pluginapi.PageCompiler = (*Compiler)(nil)

// Compile renders page.URL (svc's static fetch of it, in page.HTML, is not
// needed: the browser loads the page and everything it pulls in) and returns
// the SOM of the drawn document as JSON.
func (c *Compiler) Compile(ctx context.Context, page pluginapi.Page) ([]byte, error) {
	if _, err := c.Guard.CheckURL(ctx, page.URL); err != nil {
		return nil, fmt.Errorf("refused: %w", err)
	}
	r, err := c.Renderer.Render(ctx, page.URL)
	if err != nil {
		return nil, err
	}
	snap, _, err := som.Compile(som.Input{HTML: []byte(r.HTML), ContentType: "text/html; charset=utf-8", URL: r.URL})
	if err != nil {
		return nil, err
	}
	return json.Marshal(snap)
}
